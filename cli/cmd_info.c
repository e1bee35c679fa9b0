/* heat info: what a snapshot or checkpoint holds, its checksums verified. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "deck.h"
#include "h5file.h"

static const char usage_info[] =
    "usage: heat info FILE\n"
    "\n"
    "Shows what a snapshot or checkpoint holds: kind, step, time, dt, grid, spacing,\n"
    "precision, boundary conditions, diffusivity, the materials (with the nodes of each\n"
    "where the file holds the material index), the program and format version that\n"
    "wrote it, and the deck of its run. Reads the whole field (and material index) to\n"
    "verify every chunk's Fletcher-32 checksum.\n"
    "\n"
    "exit status: 0 intact, 1 damaged or not a heat file, 2 bad usage, no such file, or not\n"
    "a regular file (a directory, pipe or device)\n";

/* The one FILE argument, or NULL with *rc set to the exit status (0 after
 * --help). */
static const char *parse_info_args(int argc, char **argv, int *rc)
{
    const char *path = NULL;
    *rc = 2;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage_info, stdout);
            *rc = 0;
            return NULL;
        }
        if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "heat: unknown option %s (see heat info --help)\n", argv[i]);
            return NULL;
        }
        if (path) {
            fprintf(stderr, "heat info: one file at a time (got %s and %s)\n", path, argv[i]);
            return NULL;
        }
        path = argv[i];
    }
    if (!path) fprintf(stderr, "heat info: which file? (heat info FILE)\n");
    if (path && !*path) {
        fprintf(stderr, "heat info: the file name is empty (heat info FILE)\n");
        return NULL;
    }
    return path;
}

static void print_meta(const char *path, const heat_file_meta *m)
{
    printf("file            %s\n", path);
    printf("kind            %s\n", heat_file_kind_name(m->kind));
    printf("format          heat field file format %lld, written by heat %s\n",
           (long long)m->format_version, m->program_version);
    printf("step            %lld\n", (long long)m->step);
    printf("time            %.17g\n", m->time);
    printf("dt              %.17g\n", m->dt);
    printf("grid            %lld x %lld x %lld = %lld points (%dD)\n", (long long)m->n[0],
           (long long)m->n[1], (long long)m->n[2], (long long)(m->n[0] * m->n[1] * m->n[2]),
           m->dims);
    printf("length          %.17g %.17g %.17g\n", m->length[0], m->length[1], m->length[2]);
    printf("origin          %.17g %.17g %.17g\n", m->origin[0], m->origin[1], m->origin[2]);
    printf("spacing         hx %.17g  hy %.17g", m->spacing[0], m->spacing[1]);
    if (m->dims == 3) printf("  hz %.17g", m->spacing[2]);
    printf("\nprecision       %s\n", heat_precision_name(m->precision));
    printf("diffusivity     %.17g%s\n", m->alpha, m->has_material ? " (material 0's)" : "");
    for (int f = 0; f < 2 * m->dims; f++) {
        char bc[96];
        heat_bc_text(&m->bc[f], 0, bc, sizeof bc);
        printf("boundary %s    %s\n", heat_face_name(f), bc);
    }
    printf("storage         chunked, %s, deflate %s\n",
           m->has_checksum ? "Fletcher-32 checksums" : "no checksums", m->deflate ? "on" : "off");
    printf("metadata        %s\n",
           m->meta_checksum ? "checksum verified" : "no checksum (a format 1 file)");
}

/* Reads the whole field, so that every checksum is verified; 0 or 1. */
static int verify_field(const char *path, const heat_file_meta *m)
{
    const int64_t points = m->n[0] * m->n[1] * m->n[2];
    const size_t bytes = (size_t)points * (m->precision == HEAT_FLOAT ? 4 : 8);
    void *field = malloc(bytes ? bytes : 1);
    heat_error err;
    int rc = 0;
    if (!field) {
        fprintf(stderr, "heat info: cannot allocate %.3g GB to read the field\n",
                (double)bytes / 1e9);
        rc = 1;
    } else if (heat_file_read_field(path, m, m->precision, field, &err)) {
        printf("checksum        FAILED\n");
        fprintf(stderr, "heat info: %s: %s\n", path, err.msg);
        rc = 1;
    } else {
        printf("checksum        %s (all %lld values read)\n",
               m->has_checksum ? "verified" : "none stored", (long long)points);
    }
    free(field);
    return rc;
}

/* The nodes of each material in the file's material index (reading it
 * verifies its checksums): 0, or 1 when it is damaged or names a material
 * the deck lacks. */
static int count_material(const char *path, const heat_file_meta *m, int nmat, int64_t *count)
{
    heat_intfile *f = NULL;
    heat_error err;
    int64_t *plane = malloc(sizeof *plane * (size_t)(m->n[0] * m->n[1]));
    int rc = !plane || heat_intfile_open(path, "/VTKHDF/PointData/material", m->n, &f, &err);
    for (int64_t k = 0; !rc && k < m->n[2]; k++) {
        if ((rc = heat_intfile_plane(f, k, plane, &err) != 0)) break;
        for (int64_t i = 0; i < m->n[0] * m->n[1]; i++) {
            if (plane[i] < 0 || plane[i] >= nmat) {
                snprintf(err.msg, sizeof err.msg,
                         "corrupt: material index %lld at node %lld of plane %lld names no "
                         "material (the deck has %d)",
                         (long long)plane[i], (long long)i, (long long)k, nmat);
                rc = 1;
                break;
            }
            count[plane[i]]++;
        }
    }
    if (rc) fprintf(stderr, "heat info: %s: %s\n", path, plane ? err.msg : "out of memory");
    if (f) heat_intfile_close(f);
    free(plane);
    return rc;
}

/* The materials of the file's deck, and their nodes where the file holds
 * the material index; 0, or 1 when that index is damaged. */
static int print_materials(const char *path, const heat_file_meta *m)
{
    heat_case *c = calloc(1, sizeof *c);
    heat_error err;
    /* A deck that does not load is shown below as it is. */
    if (!c || heat_deck_load_string(m->deck, path, NULL, 0, c, NULL, NULL, &err) ||
        c->materials.count == 0) {
        free(c);
        return 0;
    }
    int64_t count[HEAT_MATERIALS_MAX] = {0};
    int rc = m->has_material ? count_material(path, m, c->materials.count, count) : 0;
    for (int i = 0; i < c->materials.count; i++) {
        const heat_material *a = &c->materials.m[i];
        printf("material        %d %s: k %g W/(m K), rho %g kg/m^3, c %g J/(kg K)", i, a->name,
               a->k, a->rho, a->cp);
        if (m->has_material && !rc) printf(", %lld nodes", (long long)count[i]);
        printf("\n");
    }
    if (c->materials.count > 1)
        printf("material index  %s\n", !m->has_material ? "not stored"
                                       : rc             ? "FAILED"
                                                        : "/VTKHDF/PointData/material, verified");
    free(c);
    return rc;
}

int heat_cmd_info(int argc, char **argv)
{
    int rc;
    const char *path = parse_info_args(argc, argv, &rc);
    if (!path) return rc;
    heat_file_meta m;
    heat_error err;
    if (access(path, F_OK) != 0) {
        fprintf(stderr, "heat info: %s: %s\n", path, strerror(errno));
        return 2;
    }
    if (heat_file_read_meta(path, &m, &err)) {
        /* The path is there: a directory, pipe or device, or unreadable (bad
         * usage, 2), or a file damaged or not ours (1). */
        fprintf(stderr, "heat info: %s: %s\n", path, err.msg);
        struct stat st;
        int usage = access(path, R_OK) != 0 || (stat(path, &st) == 0 && !S_ISREG(st.st_mode));
        return usage ? 2 : 1;
    }
    print_meta(path, &m);
    rc = verify_field(path, &m);
    if (print_materials(path, &m)) rc = 1;
    printf("deck:\n");
    for (const char *p = m.deck; *p;) {
        const char *nl = strchr(p, '\n');
        int len = nl ? (int)(nl - p) : (int)strlen(p);
        printf("  %.*s\n", len, p);
        p += len + (nl ? 1 : 0);
    }
    heat_file_meta_free(&m);
    return rc;
}

/* The entries of the XDMF index (`<name>.xmf`): one per snapshot, in step
 * order; the file itself is written by xdmf.c. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io_util.h"
#include "output_impl.h"

void heat_index_init(heat_index *x, const heat_case *c, const char *dir)
{
    memset(x, 0, sizeof *x);
    x->c = c;
    heat_output_index_path(x->path, sizeof x->path, dir, c->name);
}

void heat_index_free(heat_index *x)
{
    free(x->entries);
    x->entries = NULL;
    x->n = x->cap = 0;
}

static int write_index(heat_index *x, heat_error *err)
{
    int rc = heat_xdmf_write(x->path, x->c, x->entries, x->n, err);
    if (!rc) x->written = 1;
    return rc;
}

static int append(heat_index *x, int64_t step, double time)
{
    if (heat_io_grow((void **)&x->entries, &x->cap, x->n + 1, sizeof *x->entries)) return -1;
    x->entries[x->n++] = (heat_xdmf_entry){step, time};
    return 0;
}

int heat_index_add(heat_index *x, int64_t step, double time, heat_error *err)
{
    while (x->n > 0 && x->entries[x->n - 1].step >= step) x->n--;
    if (append(x, step, time))
        return heat_error_set(err, HEAT_ERUNTIME, "out of memory for %s", x->path);
    return write_index(x, err);
}

static int cmp_entry(const void *a, const void *b)
{
    int64_t x = ((const heat_xdmf_entry *)a)->step, y = ((const heat_xdmf_entry *)b)->step;
    return (x > y) - (x < y);
}

/* The field files of the case after start_step: a malloc'd array of names. */
typedef struct later_files {
    char **names;
    size_t n, cap;
} later_files;

static void later_free(later_files *l)
{
    for (size_t i = 0; i < l->n; i++) free(l->names[i]);
    free(l->names);
}

/* One pass over the directory: the snapshots up to start_step become the
 * entries, the files after it go to *later. */
static int scan_dir(heat_index *x, DIR *d, const char *dir, int64_t start_step, FILE *notices,
                    later_files *later, heat_error *err)
{
    struct dirent *e;
    while ((e = readdir(d))) {
        int64_t step;
        heat_file_kind kind;
        if (!heat_outdir_parse(e->d_name, x->c->name, &step, &kind)) continue;
        if (step > start_step) {
            char *name = strdup(e->d_name);
            if (!name || heat_io_grow((void **)&later->names, &later->cap, later->n + 1,
                                      sizeof *later->names)) {
                free(name);
                return heat_error_set(err, HEAT_ERUNTIME, "out of memory");
            }
            later->names[later->n++] = name;
            continue;
        }
        if (kind != HEAT_FILE_SNAPSHOT) continue;
        char path[HEAT_PATH_MAX + 256];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        heat_file_meta m;
        heat_error e2;
        if (heat_file_read_meta(path, &m, &e2) != HEAT_OK) {
            if (notices)
                fprintf(notices, "notice: leaving %s out of %s: %s\n", path, x->path, e2.msg);
            continue;
        }
        double t = m.time;
        heat_file_meta_free(&m);
        if (append(x, step, t)) return heat_error_set(err, HEAT_ERUNTIME, "out of memory");
    }
    return HEAT_OK;
}

int heat_index_resume(heat_index *x, const char *dir, int64_t start_step, FILE *notices,
                      heat_error *err)
{
    DIR *d = opendir(dir);
    if (!d) return HEAT_OK;
    later_files later = {0};
    int rc = scan_dir(x, d, dir, start_step, notices, &later, err);
    closedir(d);
    /* The index first, so that it never lists a file already removed. */
    if (!rc && x->n > 0) qsort(x->entries, x->n, sizeof *x->entries, cmp_entry);
    if (!rc && (x->n > 0 || access(x->path, F_OK) == 0)) rc = write_index(x, err);
    for (size_t i = 0; i < later.n && !rc; i++) {
        char path[HEAT_PATH_MAX + 256];
        snprintf(path, sizeof path, "%s/%s", dir, later.names[i]);
        if (unlink(path) != 0 && errno != ENOENT)
            rc = heat_error_set(err, HEAT_ERUNTIME,
                                "restart at step %lld: cannot remove %s, written after it by the "
                                "interrupted run: %s",
                                (long long)start_step, path, strerror(errno));
    }
    later_free(&later);
    return rc;
}

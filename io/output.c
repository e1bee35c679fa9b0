#include "output.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct heat_output {
    const heat_case *c;
    char dir[HEAT_PATH_MAX];
    char history_path[HEAT_PATH_MAX + 32];
    FILE *history;
    int64_t files;
};

/* Files that mark a directory as holding a run of ours. */
static int is_run_file(const char *name)
{
    size_t n = strlen(name);
    if (strcmp(name, "history.csv") == 0) return 1;
    if (n > 7 && strcmp(name + n - 7, ".vtkhdf") == 0) return 1;
    if (n > 4 && strcmp(name + n - 4, ".xmf") == 0) return 1;
    return 0;
}

int heat_output_check_dir(const char *dir, heat_output_mode mode, heat_error *err)
{
    struct stat st;
    if (stat(dir, &st) != 0) return HEAT_OK; /* created later */
    if (!S_ISDIR(st.st_mode))
        return heat_error_set(err, HEAT_EINPUT, "output.dir = \"%s\" exists and is not a directory",
                              dir);
    if (mode != HEAT_OUTPUT_NEW) return HEAT_OK;
    DIR *d = opendir(dir);
    if (!d) return HEAT_OK; /* heat_output_open reports the reason */
    struct dirent *e;
    int rc = HEAT_OK;
    while ((e = readdir(d))) {
        if (is_run_file(e->d_name)) {
            rc = heat_error_set(err, HEAT_EINPUT,
                                "output.dir = \"%s\" already holds another run (%s): use "
                                "--overwrite to replace it, --restart latest to continue it, or "
                                "another output.dir (e.g. --set output.dir=\"%s-2\")",
                                dir, e->d_name, dir);
            break;
        }
    }
    closedir(d);
    return rc;
}

static int mkdir_p(const char *dir, heat_error *err)
{
    char path[HEAT_PATH_MAX];
    snprintf(path, sizeof path, "%s", dir);
    for (char *p = path + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char saved = *p;
            *p = '\0';
            if (mkdir(path, 0777) != 0 && errno != EEXIST)
                return heat_error_set(err, HEAT_ERUNTIME,
                                      "cannot create the output directory %s: %s", path,
                                      strerror(errno));
            *p = saved;
            if (saved == '\0') break;
        }
    }
    return HEAT_OK;
}

static int remove_run_files(const char *dir, heat_error *err)
{
    DIR *d = opendir(dir);
    if (!d) return HEAT_OK;
    struct dirent *e;
    int rc = HEAT_OK;
    while ((e = readdir(d))) {
        if (!is_run_file(e->d_name)) continue;
        char path[HEAT_PATH_MAX + 256];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (unlink(path) != 0 && errno != ENOENT) {
            rc = heat_error_set(err, HEAT_ERUNTIME, "--overwrite: cannot remove %s: %s", path,
                                strerror(errno));
            break;
        }
    }
    closedir(d);
    return rc;
}

/* On a restart, rows from the restart step on belong to the interrupted run's
 * future, which is about to be computed again: drop them. */
static int truncate_history(const char *path, int64_t start_step, heat_error *err)
{
    FILE *f = fopen(path, "r");
    if (!f) return HEAT_OK;
    char tmp[HEAT_PATH_MAX + 64];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *g = fopen(tmp, "w");
    if (!g) {
        fclose(f);
        return heat_error_set(err, HEAT_ERUNTIME, "cannot write %s: %s", tmp, strerror(errno));
    }
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *end;
        long long step = strtoll(line, &end, 10);
        if (end != line && step >= start_step) continue; /* rewritten by this run */
        fputs(line, g);
    }
    fclose(f);
    int bad = fflush(g) != 0 || fsync(fileno(g)) != 0;
    bad |= fclose(g) != 0;
    if (bad || rename(tmp, path) != 0) {
        unlink(tmp);
        return heat_error_set(err, HEAT_ERUNTIME, "cannot rewrite %s: %s", path, strerror(errno));
    }
    return HEAT_OK;
}

int heat_output_open(const heat_case *c, heat_output_mode mode, int64_t start_step,
                     heat_output **out, heat_error *err)
{
    *out = NULL;
    int rc = heat_output_check_dir(c->output.dir, mode, err);
    if (rc) return rc;
    if ((rc = mkdir_p(c->output.dir, err))) return rc;
    if (mode == HEAT_OUTPUT_OVERWRITE && (rc = remove_run_files(c->output.dir, err))) return rc;

    heat_output *o = calloc(1, sizeof *o);
    if (!o) return heat_error_set(err, HEAT_ERUNTIME, "out of memory");
    o->c = c;
    snprintf(o->dir, sizeof o->dir, "%s", c->output.dir);
    snprintf(o->history_path, sizeof o->history_path, "%s/history.csv", o->dir);
    int append = 0;
    if (mode == HEAT_OUTPUT_CONTINUE && access(o->history_path, F_OK) == 0) {
        if ((rc = truncate_history(o->history_path, start_step, err))) {
            free(o);
            return rc;
        }
        append = 1;
    }
    o->history = fopen(o->history_path, append ? "a" : "w");
    if (!o->history) {
        rc = heat_error_set(err, HEAT_ERUNTIME, "cannot write %s: %s", o->history_path,
                            strerror(errno));
        free(o);
        return rc;
    }
    if (!append) fprintf(o->history, "step,time,residual,wall_seconds\n");
    o->files = 1;
    *out = o;
    return HEAT_OK;
}

int heat_output_history(heat_output *o, int64_t step, double time, double residual, double wall,
                        heat_error *err)
{
    if (isnan(residual))
        fprintf(o->history, "%lld,%.17g,,%.6f\n", (long long)step, time, wall);
    else
        fprintf(o->history, "%lld,%.17g,%.9g,%.6f\n", (long long)step, time, residual, wall);
    if (fflush(o->history) != 0 || ferror(o->history))
        return heat_error_set(err, HEAT_ERUNTIME, "cannot write %s: %s", o->history_path,
                              strerror(errno));
    return HEAT_OK;
}

int heat_output_snapshot(heat_output *o, int64_t step, double time, const void *field, int *written,
                         heat_error *err)
{
    (void)o, (void)step, (void)time, (void)field, (void)err;
    *written = 0; /* the HDF5 snapshot writer plugs in here */
    return HEAT_OK;
}

int heat_output_checkpoint(heat_output *o, int64_t step, double time, const void *field,
                           int *written, heat_error *err)
{
    (void)o, (void)step, (void)time, (void)field, (void)err;
    *written = 0; /* the HDF5 checkpoint writer plugs in here */
    return HEAT_OK;
}

int heat_output_wants_fields(const heat_output *o)
{
    (void)o;
    return 0;
}

int64_t heat_output_files_written(const heat_output *o)
{
    return o->files;
}

const char *heat_output_dir(const heat_output *o)
{
    return o->dir;
}

void heat_output_close(heat_output *o)
{
    if (!o) return;
    if (o->history) fclose(o->history);
    free(o);
}

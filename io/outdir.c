/* The output directory: file names, the guard against mixing runs, making
 * it, listing and rotating checkpoints. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io_util.h"
#include "output_impl.h"

void heat_output_snapshot_path(char *buf, size_t n, const char *dir, const char *name, int64_t step)
{
    char file[HEAT_NAME_MAX + 64];
    snprintf(file, sizeof file, HEAT_SNAPSHOT_FMT, name, (long long)step);
    snprintf(buf, n, "%s/%s", dir, file);
}

void heat_output_checkpoint_path(char *buf, size_t n, const char *dir, const char *name,
                                 int64_t step)
{
    char file[HEAT_NAME_MAX + 64];
    snprintf(file, sizeof file, HEAT_CHECKPOINT_FMT, name, (long long)step);
    snprintf(buf, n, "%s/%s", dir, file);
}

void heat_output_index_path(char *buf, size_t n, const char *dir, const char *name)
{
    snprintf(buf, n, "%s/%s.xmf", dir, name);
}

int heat_outdir_parse(const char *file, const char *name, int64_t *step, heat_file_kind *kind)
{
    size_t ln = strlen(name);
    if (strncmp(file, name, ln) != 0 || file[ln] != '_') return 0;
    const char *p = file + ln + 1;
    *kind = HEAT_FILE_SNAPSHOT;
    if (strncmp(p, "ckpt_", 5) == 0) {
        *kind = HEAT_FILE_CHECKPOINT;
        p += 5;
    }
    const char *d = p;
    while (*d >= '0' && *d <= '9') d++;
    if (d - p < 8 || d - p > 18 || strcmp(d, ".vtkhdf") != 0) return 0;
    *step = strtoll(p, NULL, 10);
    return 1;
}

int heat_outdir_is_run_file(const char *name)
{
    size_t n = strlen(name);
    if (strcmp(name, "history.csv") == 0) return 1;
    if (n > 7 && strcmp(name + n - 7, ".vtkhdf") == 0) return 1;
    if (n > 4 && strcmp(name + n - 4, ".xmf") == 0) return 1;
    return 0;
}

int heat_outdir_is_leftover(const char *name)
{
    size_t n = strlen(name);
    return (n > 11 && strcmp(name + n - 11, ".vtkhdf.tmp") == 0) ||
           (n > 8 && strcmp(name + n - 8, ".xmf.tmp") == 0);
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
        if (heat_outdir_is_run_file(e->d_name)) {
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

int heat_outdir_make(const char *dir, heat_error *err)
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

int heat_outdir_remove(const char *dir, int (*which)(const char *), const char *why,
                       heat_error *err)
{
    DIR *d = opendir(dir);
    if (!d) return HEAT_OK;
    struct dirent *e;
    int rc = HEAT_OK;
    while ((e = readdir(d))) {
        if (!which(e->d_name)) continue;
        char path[HEAT_PATH_MAX + 256];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (unlink(path) != 0 && errno != ENOENT) {
            rc = heat_error_set(err, HEAT_ERUNTIME, "%s: cannot remove %s: %s", why, path,
                                strerror(errno));
            break;
        }
    }
    closedir(d);
    return rc;
}

static int cmp_desc(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x < y) - (x > y);
}

int heat_output_list_checkpoints(const char *dir, const char *name, int64_t **steps, size_t *n,
                                 heat_error *err)
{
    *steps = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return HEAT_OK;
    size_t cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        int64_t step;
        heat_file_kind kind;
        if (!heat_outdir_parse(e->d_name, name, &step, &kind) || kind != HEAT_FILE_CHECKPOINT)
            continue;
        if (heat_io_grow((void **)steps, &cap, *n + 1, sizeof **steps)) {
            closedir(d);
            free(*steps);
            *steps = NULL;
            *n = 0;
            return heat_error_set(err, HEAT_ERUNTIME, "out of memory");
        }
        (*steps)[(*n)++] = step;
    }
    closedir(d);
    if (*n) qsort(*steps, *n, sizeof **steps, cmp_desc);
    return HEAT_OK;
}

void heat_outdir_rotate(const char *dir, const char *name, int64_t keep, FILE *notices)
{
    int64_t *steps;
    size_t n;
    heat_error err;
    if (heat_output_list_checkpoints(dir, name, &steps, &n, &err) != HEAT_OK) return;
    for (size_t i = (size_t)keep; i < n; i++) {
        char path[HEAT_PATH_MAX + HEAT_NAME_MAX + 64];
        heat_output_checkpoint_path(path, sizeof path, dir, name, steps[i]);
        if (unlink(path) != 0 && errno != ENOENT && notices)
            fprintf(notices, "notice: cannot remove the old checkpoint %s: %s\n", path,
                    strerror(errno));
    }
    free(steps);
}

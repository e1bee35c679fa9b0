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

int heat_index_resume(heat_index *x, const char *dir, int64_t start_step, FILE *notices,
                      heat_error *err)
{
    DIR *d = opendir(dir);
    if (!d) return HEAT_OK;
    struct dirent *e;
    int rc = HEAT_OK;
    while ((e = readdir(d))) {
        int64_t step;
        heat_file_kind kind;
        if (!heat_outdir_parse(e->d_name, x->c->name, &step, &kind)) continue;
        char path[HEAT_PATH_MAX + 256];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (step > start_step) {
            if (unlink(path) != 0 && errno != ENOENT) {
                rc = heat_error_set(err, HEAT_ERUNTIME,
                                    "restart at step %lld: cannot remove %s, written after it by "
                                    "the interrupted run: %s",
                                    (long long)start_step, path, strerror(errno));
                break;
            }
            continue;
        }
        if (kind != HEAT_FILE_SNAPSHOT) continue;
        heat_file_meta m;
        heat_error e2;
        if (heat_file_read_meta(path, &m, &e2) != HEAT_OK) {
            if (notices)
                fprintf(notices, "notice: leaving %s out of %s: %s\n", path, x->path, e2.msg);
            continue;
        }
        double t = m.time;
        heat_file_meta_free(&m);
        if (append(x, step, t)) {
            rc = heat_error_set(err, HEAT_ERUNTIME, "out of memory");
            break;
        }
    }
    closedir(d);
    if (rc) return rc;
    qsort(x->entries, x->n, sizeof *x->entries, cmp_entry);
    if (x->n > 0 || access(x->path, F_OK) == 0) return write_index(x, err);
    return HEAT_OK;
}

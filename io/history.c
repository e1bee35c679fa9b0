/* history.csv: a row per check step, rewritten on a restart. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io_util.h"
#include "output_impl.h"

/* On a restart, rows after the restart step belong to the interrupted run's
 * future, which is about to be computed again: drop them. The row of the
 * restart step itself keeps its residual (this run does not compute it
 * again); only a row without one, a mark of an earlier start there, goes,
 * since this run writes that mark anew. */
static int keep_history_row(const char *line, int64_t start_step)
{
    char *end;
    long long step = strtoll(line, &end, 10);
    if (end == line) return 1; /* the header */
    if (step < start_step) return 1;
    if (step > start_step) return 0;
    const char *p = strchr(end + 1, ','); /* after the time */
    return p && p[1] != ',' && p[1] != '\0' && p[1] != '\n';
}

static int truncate_history(const char *path, int64_t start_step, heat_error *err)
{
    FILE *f = fopen(path, "r");
    if (!f) return HEAT_OK;
    char tmp[HEAT_PATH_MAX + HEAT_NAME_MAX + 128];
    heat_file_tmp_path(tmp, sizeof tmp, path);
    FILE *g = fopen(tmp, "w");
    if (!g) {
        fclose(f);
        return heat_error_set(err, HEAT_ERUNTIME, "cannot write %s: %s", tmp, strerror(errno));
    }
    char line[512];
    while (fgets(line, sizeof line, f))
        if (keep_history_row(line, start_step)) fputs(line, g);
    fclose(f);
    int bad = fflush(g) != 0 || ferror(g);
    bad |= fclose(g) != 0;
    if (bad) {
        unlink(tmp);
        return heat_error_set(err, HEAT_ERUNTIME, "cannot rewrite %s: %s", path, strerror(errno));
    }
    return heat_io_commit(tmp, path, err);
}

int heat_history_open(const char *path, int resume, int64_t start_step, FILE **f, heat_error *err)
{
    int append = resume && access(path, F_OK) == 0;
    if (append) {
        int rc = truncate_history(path, start_step, err);
        if (rc) return rc;
    }
    *f = fopen(path, append ? "a" : "w");
    if (!*f)
        return heat_error_set(err, HEAT_ERUNTIME, "cannot write %s: %s", path, strerror(errno));
    if (!append) fprintf(*f, "step,time,residual,wall_seconds\n");
    return HEAT_OK;
}

/* The run's CSV files, history.csv and probes.csv: a row per check step,
 * appended and flushed at once, rewritten on a restart. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io_util.h"
#include "output_impl.h"

/* The step a row starts with; 0 for the header (no number). */
static int row_step(const char *line, long long *step, char **end)
{
    *step = strtoll(line, end, 10);
    return *end != line;
}

/* history.csv on a restart: rows after the restart step belong to the
 * interrupted run's future, which is about to be computed again: drop them.
 * The row of the restart step itself keeps its residual (this run does not
 * compute it again); only a row without one, a mark of an earlier start
 * there, goes, since this run writes that mark anew. */
static int keep_history_row(const char *line, int64_t start_step)
{
    char *end;
    long long step;
    if (!row_step(line, &step, &end) || step < start_step) return 1;
    if (step > start_step) return 0;
    const char *p = strchr(end + 1, ','); /* after the time */
    return p && p[1] != ',' && p[1] != '\0' && p[1] != '\n';
}

/* probes.csv: the rows up to the restart step stay (it writes at check
 * steps only, and not again at the step it starts from). */
static int keep_probe_row(const char *line, int64_t start_step)
{
    char *end;
    long long step;
    return !row_step(line, &step, &end) || step <= start_step;
}

/* Writes `line` (with its newline) to g, in the current layout: the header
 * becomes `header`; a row of fewer columns (an older heat's) gets empty
 * ones at its end. */
static void put_row(FILE *g, const char *line, const char *header)
{
    long long step;
    char *end;
    if (!row_step(line, &step, &end)) {
        fprintf(g, "%s\n", header);
        return;
    }
    int have = 0, want = 0;
    for (const char *p = line; *p && *p != '\n'; p++) have += *p == ',';
    for (const char *p = header; *p; p++) want += *p == ',';
    fprintf(g, "%.*s", (int)strcspn(line, "\n"), line);
    for (; have < want; have++) fputc(',', g);
    fputc('\n', g);
}

static int truncate_csv(const char *path, const char *header, int64_t start_step,
                        int (*keep)(const char *, int64_t), heat_error *err)
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
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0)
        if (keep(line, start_step)) put_row(g, line, header);
    free(line);
    fclose(f);
    int bad = fflush(g) != 0 || ferror(g);
    bad |= fclose(g) != 0;
    if (bad) {
        unlink(tmp);
        return heat_error_set(err, HEAT_ERUNTIME, "cannot rewrite %s: %s", path, strerror(errno));
    }
    return heat_io_commit(tmp, path, err);
}

static int csv_open(const char *path, const char *header, int resume, int64_t start_step,
                    int (*keep)(const char *, int64_t), FILE **f, heat_error *err)
{
    int append = resume && access(path, F_OK) == 0;
    if (append) {
        int rc = truncate_csv(path, header, start_step, keep, err);
        if (rc) return rc;
    }
    *f = fopen(path, append ? "a" : "w");
    if (!*f)
        return heat_error_set(err, HEAT_ERUNTIME, "cannot write %s: %s", path, strerror(errno));
    if (!append) fprintf(*f, "%s\n", header);
    return HEAT_OK;
}

int heat_history_open(const char *path, int resume, int64_t start_step, FILE **f, heat_error *err)
{
    return csv_open(path, HEAT_HISTORY_HEADER, resume, start_step, keep_history_row, f, err);
}

int heat_probes_open(const char *path, const char *header, int resume, int64_t start_step, FILE **f,
                     heat_error *err)
{
    return csv_open(path, header, resume, start_step, keep_probe_row, f, err);
}

/* The first line of `path` without its newline (malloc'd), or NULL with
 * *missing set when there is no such file. */
static char *first_line(const char *path, int *missing, heat_error *err)
{
    *missing = 0;
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT) {
            *missing = 1;
            return NULL;
        }
        heat_error_set(err, HEAT_ERUNTIME, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    char *line = NULL;
    size_t cap = 0;
    if (getline(&line, &cap, f) < 0) {
        free(line);
        line = strdup("");
    }
    fclose(f);
    if (!line) {
        heat_error_set(err, HEAT_ERUNTIME, "out of memory");
        return NULL;
    }
    line[strcspn(line, "\r\n")] = '\0';
    return line;
}

int heat_probes_check_resume(const char *path, const char *header, heat_error *err)
{
    if (!header) return HEAT_OK;
    int missing;
    char *have = first_line(path, &missing, err);
    if (!have) return missing ? HEAT_OK : HEAT_ERUNTIME;
    int rc = HEAT_OK;
    if (strcmp(have, header) != 0)
        rc = heat_error_set(err, HEAT_EINPUT,
                            "probes differ from the run's: %s has the columns \"%s\", the deck "
                            "gives \"%s\"; a restart keeps the probes of its run (their rows "
                            "hold their values): give the same probes, or move %s out of "
                            "output.dir to start a new one from the restart step",
                            path, have, header, path);
    free(have);
    return rc;
}

int heat_probes_trim(const char *path, int64_t start_step, heat_error *err)
{
    int missing;
    char *have = first_line(path, &missing, err);
    if (!have) return missing ? HEAT_OK : HEAT_ERUNTIME;
    int rc = truncate_csv(path, have, start_step, keep_probe_row, err);
    free(have);
    return rc;
}

#include "output.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io_util.h"
#include "xdmf.h"

#define MAX_BUFFERS 8

typedef struct job {
    int slot;
    int64_t step;
    double time;
    int kinds;
} job;

enum { SLOT_FREE, SLOT_TAKEN, SLOT_QUEUED };

struct heat_output {
    const heat_case *c;
    char dir[HEAT_PATH_MAX];
    char history_path[HEAT_PATH_MAX + 32];
    char index_path[HEAT_PATH_MAX + HEAT_NAME_MAX + 8];
    FILE *history;
    char *deck;
    heat_output_options opt;
    size_t field_bytes;

    /* Owned by the writer (the thread, or the caller when synchronous). */
    heat_xdmf_entry *entries;
    size_t nentries, cap_entries;

    /* Shared with the writer thread: guarded by mu. */
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    pthread_t thread;
    int threaded, stopping;
    void *buf[MAX_BUFFERS];
    int state[MAX_BUFFERS];
    int nbuf, nalloc;
    job queue[MAX_BUFFERS];
    int qhead, qlen;
    int failed;
    heat_error error; /* the writer's first failure */
    int64_t snapshots, checkpoints;
    int index_written;
};

/* ------------------------------------------------------------- names */

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

/* Whether `file` is `<name>_<digits>.vtkhdf` (a snapshot, *kind 1) or
 * `<name>_ckpt_<digits>.vtkhdf` (a checkpoint, *kind 2), with its step. */
static int parse_field_file(const char *file, const char *name, int64_t *step, int *kind)
{
    size_t ln = strlen(name);
    if (strncmp(file, name, ln) != 0 || file[ln] != '_') return 0;
    const char *p = file + ln + 1;
    *kind = HEAT_OUTPUT_SNAPSHOT;
    if (strncmp(p, "ckpt_", 5) == 0) {
        *kind = HEAT_OUTPUT_CHECKPOINT;
        p += 5;
    }
    const char *d = p;
    while (*d >= '0' && *d <= '9') d++;
    if (d - p < 8 || d - p > 18 || strcmp(d, ".vtkhdf") != 0) return 0;
    *step = strtoll(p, NULL, 10);
    return 1;
}

/* ------------------------------------------------- the directory guard */

/* Files that mark a directory as holding a run of ours. */
static int is_run_file(const char *name)
{
    size_t n = strlen(name);
    if (strcmp(name, "history.csv") == 0) return 1;
    if (n > 7 && strcmp(name + n - 7, ".vtkhdf") == 0) return 1;
    if (n > 4 && strcmp(name + n - 4, ".xmf") == 0) return 1;
    return 0;
}

/* Temporary files of ours that a killed run may have left behind. */
static int is_leftover(const char *name)
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

static int remove_files(const char *dir, int (*which)(const char *), const char *why,
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
    char tmp[HEAT_PATH_MAX + 64];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
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

/* ------------------------------------------------------- the index */

static int add_entry(heat_output *o, int64_t step, double time)
{
    /* A snapshot written again replaces its entry and anything after it, so
     * that the index stays in step order with every step once. */
    while (o->nentries > 0 && o->entries[o->nentries - 1].step >= step) o->nentries--;
    if (o->nentries == o->cap_entries) {
        size_t cap = o->cap_entries ? 2 * o->cap_entries : 64;
        heat_xdmf_entry *e = realloc(o->entries, cap * sizeof *e);
        if (!e) return -1;
        o->entries = e;
        o->cap_entries = cap;
    }
    o->entries[o->nentries++] = (heat_xdmf_entry){step, time};
    return 0;
}

static int cmp_entry(const void *a, const void *b)
{
    int64_t x = ((const heat_xdmf_entry *)a)->step, y = ((const heat_xdmf_entry *)b)->step;
    return (x > y) - (x < y);
}

/* A restart: remove this case's field files after start_step (the
 * interrupted run's future) and index the snapshots up to it. */
static int resume_files(heat_output *o, int64_t start_step, heat_error *err)
{
    DIR *d = opendir(o->dir);
    if (!d) return HEAT_OK;
    struct dirent *e;
    int rc = HEAT_OK;
    while ((e = readdir(d))) {
        int64_t step;
        int kind;
        if (!parse_field_file(e->d_name, o->c->name, &step, &kind)) continue;
        char path[HEAT_PATH_MAX + 256];
        snprintf(path, sizeof path, "%s/%s", o->dir, e->d_name);
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
        if (kind != HEAT_OUTPUT_SNAPSHOT) continue;
        heat_file_meta m;
        heat_error e2;
        if (heat_file_read_meta(path, &m, &e2) != HEAT_OK) {
            if (o->opt.notices)
                fprintf(o->opt.notices, "notice: leaving %s out of %s: %s\n", path, o->index_path,
                        e2.msg);
            continue;
        }
        double t = m.time;
        heat_file_meta_free(&m);
        if (o->nentries == o->cap_entries) {
            size_t cap = o->cap_entries ? 2 * o->cap_entries : 64;
            heat_xdmf_entry *ne = realloc(o->entries, cap * sizeof *ne);
            if (!ne) {
                rc = heat_error_set(err, HEAT_ERUNTIME, "out of memory");
                break;
            }
            o->entries = ne;
            o->cap_entries = cap;
        }
        o->entries[o->nentries++] = (heat_xdmf_entry){step, t};
    }
    closedir(d);
    if (rc) return rc;
    qsort(o->entries, o->nentries, sizeof *o->entries, cmp_entry);
    if (o->nentries > 0 || access(o->index_path, F_OK) == 0) {
        if ((rc = heat_xdmf_write(o->index_path, o->c, o->entries, o->nentries, err))) return rc;
        o->index_written = 1;
    }
    return HEAT_OK;
}

/* ------------------------------------------------------ the writer */

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
        int kind;
        if (!parse_field_file(e->d_name, name, &step, &kind) || kind != HEAT_OUTPUT_CHECKPOINT)
            continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            int64_t *s = realloc(*steps, cap * sizeof *s);
            if (!s) {
                closedir(d);
                free(*steps);
                *steps = NULL;
                *n = 0;
                return heat_error_set(err, HEAT_ERUNTIME, "out of memory");
            }
            *steps = s;
        }
        (*steps)[(*n)++] = step;
    }
    closedir(d);
    if (*n) qsort(*steps, *n, sizeof **steps, cmp_desc);
    return HEAT_OK;
}

/* Keeps the newest output.keep_checkpoints checkpoints; called only after a
 * new one is complete, so the newest kept is always whole. */
static void rotate_checkpoints(heat_output *o)
{
    int64_t *steps;
    size_t n;
    heat_error err;
    if (heat_output_list_checkpoints(o->dir, o->c->name, &steps, &n, &err) != HEAT_OK) return;
    for (size_t i = (size_t)o->c->output.keep_checkpoints; i < n; i++) {
        char path[HEAT_PATH_MAX + HEAT_NAME_MAX + 64];
        heat_output_checkpoint_path(path, sizeof path, o->dir, o->c->name, steps[i]);
        if (unlink(path) != 0 && errno != ENOENT && o->opt.notices)
            fprintf(o->opt.notices, "notice: cannot remove the old checkpoint %s: %s\n", path,
                    strerror(errno));
    }
    free(steps);
}

static void notify(heat_output *o, const char *path, heat_file_kind kind, int64_t step)
{
    if (o->opt.on_file) o->opt.on_file(o->opt.on_file_ctx, path, kind, step);
}

static int write_job(heat_output *o, const job *j, const void *field, heat_error *err)
{
    const heat_case *c = o->c;
    char path[HEAT_PATH_MAX + HEAT_NAME_MAX + 64];
    heat_file_meta m;
    int rc;
    if (j->kinds & HEAT_OUTPUT_SNAPSHOT) {
        heat_output_snapshot_path(path, sizeof path, o->dir, c->name, j->step);
        heat_file_meta_from_case(&m, c, HEAT_FILE_SNAPSHOT, j->step, j->time, o->deck);
        if ((rc = heat_file_write(path, &m, field, c->output.compress, err))) return rc;
        pthread_mutex_lock(&o->mu);
        o->snapshots++;
        pthread_mutex_unlock(&o->mu);
        notify(o, path, HEAT_FILE_SNAPSHOT, j->step);
        if (add_entry(o, j->step, j->time))
            return heat_error_set(err, HEAT_ERUNTIME, "out of memory for %s", o->index_path);
        if ((rc = heat_xdmf_write(o->index_path, c, o->entries, o->nentries, err))) return rc;
        pthread_mutex_lock(&o->mu);
        o->index_written = 1;
        pthread_mutex_unlock(&o->mu);
    }
    if (j->kinds & HEAT_OUTPUT_CHECKPOINT) {
        heat_output_checkpoint_path(path, sizeof path, o->dir, c->name, j->step);
        heat_file_meta_from_case(&m, c, HEAT_FILE_CHECKPOINT, j->step, j->time, o->deck);
        if ((rc = heat_file_write(path, &m, field, c->output.compress, err))) return rc;
        pthread_mutex_lock(&o->mu);
        o->checkpoints++;
        pthread_mutex_unlock(&o->mu);
        notify(o, path, HEAT_FILE_CHECKPOINT, j->step);
        rotate_checkpoints(o);
    }
    return HEAT_OK;
}

/* Records a writer failure (the first one wins); call with mu held. */
static void record_failure(heat_output *o, const heat_error *e)
{
    if (o->failed) return;
    o->failed = 1;
    o->error = *e;
}

static int report_failure(heat_output *o, heat_error *err)
{
    pthread_mutex_lock(&o->mu);
    int failed = o->failed;
    if (failed && err) *err = o->error;
    pthread_mutex_unlock(&o->mu);
    return failed ? HEAT_ERUNTIME : HEAT_OK;
}

static void *writer_main(void *arg)
{
    heat_output *o = arg;
    pthread_mutex_lock(&o->mu);
    for (;;) {
        while (o->qlen == 0 && !o->stopping) pthread_cond_wait(&o->work, &o->mu);
        if (o->qlen == 0) break; /* stopping, and nothing left */
        /* The job stays in the queue while it is written, so that a flush
         * waits for it. */
        job j = o->queue[o->qhead];
        int skip = o->failed; /* after a failure nothing more is written */
        pthread_mutex_unlock(&o->mu);
        heat_error e;
        heat_error_clear(&e);
        int rc = skip ? HEAT_OK : write_job(o, &j, o->buf[j.slot], &e);
        pthread_mutex_lock(&o->mu);
        if (rc) record_failure(o, &e);
        o->state[j.slot] = SLOT_FREE;
        o->qhead = (o->qhead + 1) % MAX_BUFFERS;
        o->qlen--;
        pthread_cond_broadcast(&o->done);
    }
    pthread_mutex_unlock(&o->mu);
    return NULL;
}

/* ------------------------------------------------------ open, close */

static void *default_alloc(size_t bytes, void *ctx)
{
    (void)ctx;
    return malloc(bytes);
}

static void default_free(void *p, void *ctx)
{
    (void)ctx;
    free(p);
}

int heat_output_open(const heat_case *c, const heat_output_options *opt, heat_output **out,
                     heat_error *err)
{
    *out = NULL;
    const heat_output_mode mode = opt->mode;
    int rc = heat_output_check_dir(c->output.dir, mode, err);
    if (rc) return rc;
    if ((rc = mkdir_p(c->output.dir, err))) return rc;
    if (mode == HEAT_OUTPUT_OVERWRITE &&
        (rc = remove_files(c->output.dir, is_run_file, "--overwrite", err)))
        return rc;
    if ((rc = remove_files(c->output.dir, is_leftover, "removing a killed run's temporary file",
                           err)))
        return rc;

    heat_output *o = calloc(1, sizeof *o);
    if (!o) return heat_error_set(err, HEAT_ERUNTIME, "out of memory");
    o->c = c;
    o->opt = *opt;
    if (!o->opt.alloc.alloc || !o->opt.alloc.free) {
        o->opt.alloc.alloc = default_alloc;
        o->opt.alloc.free = default_free;
        o->opt.alloc.ctx = NULL;
    }
    o->nbuf = opt->buffers > 0 ? (opt->buffers < MAX_BUFFERS ? opt->buffers : MAX_BUFFERS) : 2;
    o->field_bytes = (size_t)c->d.points * heat_case_value_size(c);
    o->deck = strdup(opt->deck_text ? opt->deck_text : "");
    pthread_mutex_init(&o->mu, NULL);
    pthread_cond_init(&o->work, NULL);
    pthread_cond_init(&o->done, NULL);
    snprintf(o->dir, sizeof o->dir, "%s", c->output.dir);
    snprintf(o->history_path, sizeof o->history_path, "%s/history.csv", o->dir);
    heat_output_index_path(o->index_path, sizeof o->index_path, o->dir, c->name);
    if (!o->deck) {
        heat_output_close(o);
        return heat_error_set(err, HEAT_ERUNTIME, "out of memory");
    }

    int append = 0;
    if (mode == HEAT_OUTPUT_CONTINUE) {
        if (access(o->history_path, F_OK) == 0) {
            if ((rc = truncate_history(o->history_path, opt->start_step, err))) goto fail;
            append = 1;
        }
        if ((rc = resume_files(o, opt->start_step, err))) goto fail;
    }
    o->history = fopen(o->history_path, append ? "a" : "w");
    if (!o->history) {
        rc = heat_error_set(err, HEAT_ERUNTIME, "cannot write %s: %s", o->history_path,
                            strerror(errno));
        goto fail;
    }
    if (!append) fprintf(o->history, "step,time,residual,wall_seconds\n");

    if (!opt->synchronous) {
        /* SIGINT and SIGTERM go to the time loop, never to the writer, whose
         * system calls they would otherwise interrupt. */
        sigset_t block, old;
        sigemptyset(&block);
        sigaddset(&block, SIGINT);
        sigaddset(&block, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &block, &old);
        int e = pthread_create(&o->thread, NULL, writer_main, o);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (e != 0) {
            rc = heat_error_set(err, HEAT_ERUNTIME, "cannot start the output writer thread: %s",
                                strerror(e));
            goto fail;
        }
        o->threaded = 1;
    }
    *out = o;
    return HEAT_OK;
fail:
    heat_output_close(o);
    return rc;
}

void heat_output_close(heat_output *o)
{
    if (!o) return;
    if (o->threaded) {
        pthread_mutex_lock(&o->mu);
        o->stopping = 1;
        pthread_cond_signal(&o->work);
        pthread_mutex_unlock(&o->mu);
        pthread_join(o->thread, NULL);
    }
    if (o->history) fclose(o->history);
    for (int i = 0; i < o->nalloc; i++) o->opt.alloc.free(o->buf[i], o->opt.alloc.ctx);
    pthread_cond_destroy(&o->done);
    pthread_cond_destroy(&o->work);
    pthread_mutex_destroy(&o->mu);
    free(o->entries);
    free(o->deck);
    free(o);
}

/* --------------------------------------------------- the driver's side */

int heat_output_history(heat_output *o, int64_t step, double time, double residual, double wall,
                        heat_error *err)
{
    int rc = report_failure(o, err);
    if (rc) return rc;
    if (isnan(residual))
        fprintf(o->history, "%lld,%.17g,,%.6f\n", (long long)step, time, wall);
    else
        fprintf(o->history, "%lld,%.17g,%.9g,%.6f\n", (long long)step, time, residual, wall);
    if (fflush(o->history) != 0 || ferror(o->history))
        return heat_error_set(err, HEAT_ERUNTIME, "cannot write %s: %s", o->history_path,
                              strerror(errno));
    return HEAT_OK;
}

int heat_output_acquire(heat_output *o, void **buffer, heat_error *err)
{
    *buffer = NULL;
    pthread_mutex_lock(&o->mu);
    for (;;) {
        if (o->failed) {
            if (err) *err = o->error;
            pthread_mutex_unlock(&o->mu);
            return HEAT_ERUNTIME;
        }
        for (int i = 0; i < o->nalloc; i++)
            if (o->state[i] == SLOT_FREE) {
                o->state[i] = SLOT_TAKEN;
                *buffer = o->buf[i];
                pthread_mutex_unlock(&o->mu);
                return HEAT_OK;
            }
        if (o->nalloc < o->nbuf) {
            void *p = o->opt.alloc.alloc(o->field_bytes, o->opt.alloc.ctx);
            if (!p) {
                pthread_mutex_unlock(&o->mu);
                return heat_error_set(err, HEAT_ERUNTIME,
                                      "cannot allocate %.3g GB of host memory for an output "
                                      "buffer",
                                      (double)o->field_bytes / 1e9);
            }
            o->buf[o->nalloc] = p;
            o->state[o->nalloc++] = SLOT_TAKEN;
            *buffer = p;
            pthread_mutex_unlock(&o->mu);
            return HEAT_OK;
        }
        pthread_cond_wait(&o->done, &o->mu);
    }
}

static int slot_of(const heat_output *o, const void *buffer)
{
    for (int i = 0; i < o->nalloc; i++)
        if (o->buf[i] == buffer) return i;
    return -1;
}

void heat_output_release(heat_output *o, void *buffer)
{
    pthread_mutex_lock(&o->mu);
    int i = slot_of(o, buffer);
    if (i >= 0 && o->state[i] == SLOT_TAKEN) o->state[i] = SLOT_FREE;
    pthread_cond_broadcast(&o->done);
    pthread_mutex_unlock(&o->mu);
}

int heat_output_submit(heat_output *o, void *buffer, int64_t step, double time, int kinds,
                       heat_error *err)
{
    pthread_mutex_lock(&o->mu);
    int i = slot_of(o, buffer);
    if (i < 0 || o->state[i] != SLOT_TAKEN) {
        pthread_mutex_unlock(&o->mu);
        return heat_error_set(err, HEAT_ERUNTIME, "internal error: output buffer not acquired");
    }
    if (o->failed) {
        o->state[i] = SLOT_FREE;
        if (err) *err = o->error;
        pthread_mutex_unlock(&o->mu);
        return HEAT_ERUNTIME;
    }
    job j = {i, step, time, kinds};
    if (!o->threaded) {
        o->state[i] = SLOT_QUEUED;
        pthread_mutex_unlock(&o->mu);
        heat_error e;
        heat_error_clear(&e);
        int rc = write_job(o, &j, buffer, &e);
        pthread_mutex_lock(&o->mu);
        o->state[i] = SLOT_FREE;
        if (rc) record_failure(o, &e);
        pthread_mutex_unlock(&o->mu);
        if (rc && err) *err = e;
        return rc;
    }
    o->state[i] = SLOT_QUEUED;
    o->queue[(o->qhead + o->qlen) % MAX_BUFFERS] = j;
    o->qlen++;
    pthread_cond_signal(&o->work);
    pthread_mutex_unlock(&o->mu);
    return HEAT_OK;
}

int heat_output_flush(heat_output *o, heat_error *err)
{
    pthread_mutex_lock(&o->mu);
    while (o->qlen > 0) pthread_cond_wait(&o->done, &o->mu);
    pthread_mutex_unlock(&o->mu);
    return report_failure(o, err);
}

int64_t heat_output_files_written(const heat_output *o)
{
    heat_output *m = (heat_output *)o; /* the lock is not part of the value */
    pthread_mutex_lock(&m->mu);
    int64_t n = 1 + o->index_written + o->snapshots + o->checkpoints;
    pthread_mutex_unlock(&m->mu);
    return n;
}

void heat_output_counts(const heat_output *o, int64_t *snapshots, int64_t *checkpoints)
{
    heat_output *m = (heat_output *)o;
    pthread_mutex_lock(&m->mu);
    *snapshots = o->snapshots;
    *checkpoints = o->checkpoints;
    pthread_mutex_unlock(&m->mu);
}

const char *heat_output_dir(const heat_output *o)
{
    return o->dir;
}

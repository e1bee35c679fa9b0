/* The writer of output.h: a pool of host buffers, a queue and one thread
 * that writes the field files in the order submitted, keeps the index and
 * rotates the checkpoints. The directory, history.csv and the index's
 * entries have files of their own (output_impl.h). */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io_util.h"
#include "output_impl.h"

#define MAX_BUFFERS 8

typedef struct job {
    int slot;
    int64_t step;
    double time;
    int kinds;
    heat_output_steady steady; /* for its checkpoint */
} job;

enum { SLOT_FREE, SLOT_TAKEN, SLOT_QUEUED };

struct heat_output {
    const heat_case *c;
    char dir[HEAT_PATH_MAX];
    char history_path[HEAT_PATH_MAX + 32];
    char probes_path[HEAT_PATH_MAX + 32];
    FILE *probes;
    FILE *history;
    char *deck;
    heat_output_options opt;
    size_t field_bytes;
    heat_index index; /* owned by the writer thread once it runs */
    int lock_fd;      /* the hold on the directory (heat_outdir_lock), or -1 */

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
    int follower; /* a rank other than 0 of a distributed run: field files only */
};

static void notify(heat_output *o, const char *path, heat_file_kind kind, int64_t step)
{
    if (o->opt.on_file) o->opt.on_file(o->opt.on_file_ctx, path, kind, step);
}

/* One field file: by this process alone, or by all ranks together. */
static int write_field(heat_output *o, const char *path, const heat_file_meta *m, const void *field,
                       heat_error *err)
{
    const int compress = o->c->output.compress;
    if (o->opt.dist) return heat_h5dist_write(o->opt.dist, path, m, field, compress, err);
    return heat_file_write(path, m, field, compress, err);
}

/* The index after a snapshot: rank 0's, and its outcome agreed by all
 * ranks (a failure must stop every rank's writer alike). */
static int add_to_index(heat_output *o, const job *j, heat_error *err)
{
    int rc = o->follower ? HEAT_OK : heat_index_add(&o->index, j->step, j->time, err);
    if (o->opt.dist) rc = heat_h5dist_agree(o->opt.dist, rc, err);
    return rc;
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
        m.material = o->opt.material;
        if ((rc = write_field(o, path, &m, field, err))) return rc;
        pthread_mutex_lock(&o->mu);
        o->snapshots++;
        pthread_mutex_unlock(&o->mu);
        notify(o, path, HEAT_FILE_SNAPSHOT, j->step);
        if ((rc = add_to_index(o, j, err))) return rc;
        pthread_mutex_lock(&o->mu);
        o->index_written = !o->follower;
        pthread_mutex_unlock(&o->mu);
    }
    if (j->kinds & HEAT_OUTPUT_CHECKPOINT) {
        heat_output_checkpoint_path(path, sizeof path, o->dir, c->name, j->step);
        heat_file_meta_from_case(&m, c, HEAT_FILE_CHECKPOINT, j->step, j->time, o->deck);
        m.material = o->opt.material;
        m.has_steady = j->steady.have;
        m.steady_best = j->steady.best;
        m.steady_best_step = j->steady.best_step;
        m.steady_no_best = j->steady.no_best;
        if ((rc = write_field(o, path, &m, field, err))) return rc;
        pthread_mutex_lock(&o->mu);
        o->checkpoints++;
        pthread_mutex_unlock(&o->mu);
        notify(o, path, HEAT_FILE_CHECKPOINT, j->step);
        if (!o->follower)
            heat_outdir_rotate(o->dir, c->name, c->output.keep_checkpoints, o->opt.notices);
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

/* Starts the writer thread with SIGINT and SIGTERM blocked in it: they go to
 * the time loop, never to the writer, whose system calls they would
 * otherwise interrupt. */
static int start_writer(heat_output *o, heat_error *err)
{
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    int e = pthread_create(&o->thread, NULL, writer_main, o);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e != 0)
        return heat_error_set(err, HEAT_ERUNTIME, "cannot start the output writer thread: %s",
                              strerror(e));
    o->threaded = 1;
    return HEAT_OK;
}

/* The files the run reads, which --overwrite keeps (NULL-terminated):
 * initial.path (unless a restart, which never reads it) and the file
 * regions' files. */
static void inputs_of(const heat_case *c, heat_output_mode mode, const char **in)
{
    int n = 0;
    if (c->initial.type == HEAT_INIT_FILE && mode != HEAT_OUTPUT_CONTINUE)
        in[n++] = c->initial.path;
    for (int i = 0; i < c->regions.nfiles; i++) in[n++] = c->regions.files[i].path;
    in[n] = NULL;
}

/* A file the run reads must not be one of its own outputs in output.dir:
 * the run would overwrite it, or take it for its own snapshot or
 * checkpoint (--restart latest, the checkpoints kept, the .xmf index). */
static int check_inputs(const heat_case *c, const char *const *in, heat_error *err)
{
    for (int i = 0; in[i]; i++) {
        if (!heat_outdir_owned_by(c->output.dir, c->name, in[i])) continue;
        const int init = c->initial.type == HEAT_INIT_FILE && in[i] == c->initial.path;
        return heat_error_set(err, HEAT_EINPUT,
                              "%s = \"%s\" is a file of run \"%s\" in output.dir = \"%s\": this "
                              "run would overwrite it or take it for its own output; copy it out "
                              "of output.dir first",
                              init ? "initial.path" : "a file region's path", in[i], c->name,
                              c->output.dir);
    }
    return HEAT_OK;
}

/* The directory ready for this run: made, locked for the run's life
 * (*lock_fd), the earlier run's files gone (--overwrite), a killed run's
 * temporary files gone. */
static int prepare_dir(const heat_case *c, heat_output_mode mode, FILE *notices, int *lock_fd,
                       heat_error *err)
{
    const char *dir = c->output.dir, *name = c->name;
    const char *in[HEAT_REGIONS_MAX + 2];
    inputs_of(c, mode, in);
    *lock_fd = -1;
    int rc = heat_output_check_dir(dir, name, mode, err);
    if (!rc && mode != HEAT_OUTPUT_NEW) rc = check_inputs(c, in, err);
    if (!rc) rc = heat_outdir_make(dir, err);
    if (!rc) rc = heat_outdir_lock(dir, notices, lock_fd, err);
    /* Checked again under the lock: another run may have started meanwhile. */
    if (!rc) rc = heat_outdir_check_other_run(dir, name, mode, err);
    if (!rc && mode == HEAT_OUTPUT_OVERWRITE)
        rc = heat_outdir_remove(dir, heat_outdir_is_run_file, in, "--overwrite", err);
    if (!rc)
        rc = heat_outdir_remove(dir, heat_outdir_is_leftover, NULL,
                                "removing a killed run's temporary file", err);
    return rc;
}

/* probes.csv's header: each probe's name and the node it reads (malloc'd;
 * NULL when out of memory). */
static char *probes_header(const heat_case *c)
{
    size_t cap = 32 + (size_t)c->probes.count * (HEAT_MATERIAL_NAME + 80), len = 0;
    char *header = malloc(cap);
    if (!header) return NULL;
    len += (size_t)snprintf(header, cap, "step,time");
    for (int i = 0; i < c->probes.count; i++) {
        const heat_probe *p = &c->probes.p[i];
        len +=
            (size_t)snprintf(header + len, cap - len, ",%s (node %lld %lld %lld)", p->name,
                             (long long)p->node[0], (long long)p->node[1], (long long)p->node[2]);
    }
    return header;
}

/* probes.csv on a restart, before anything is written: the deck's probes
 * must be the file's (a deck without probes keeps the file as it is). */
static int check_probes(heat_output *o, heat_error *err)
{
    if (o->c->probes.count == 0) return HEAT_OK;
    char *header = probes_header(o->c);
    if (!header) return heat_error_set(err, HEAT_ERUNTIME, "out of memory");
    int rc = heat_probes_check_resume(o->probes_path, header, err);
    free(header);
    return rc;
}

/* probes.csv for the run's rows; on a restart of a deck without probes,
 * the earlier file without the rows of the interrupted run's future. */
static int open_probes(heat_output *o, int resume, int64_t start_step, heat_error *err)
{
    if (o->c->probes.count == 0)
        return resume ? heat_probes_trim(o->probes_path, start_step, err) : HEAT_OK;
    char *header = probes_header(o->c);
    if (!header) return heat_error_set(err, HEAT_ERUNTIME, "out of memory");
    int rc = heat_probes_open(o->probes_path, header, resume, start_step, &o->probes, err);
    free(header);
    return rc;
}

int heat_output_open(const heat_case *c, const heat_output_options *opt, heat_output **out,
                     heat_error *err)
{
    *out = NULL;
    /* Under MPI rank 0 owns the directory (its lock, history, index). */
    const int follower = opt->dist && heat_h5dist_rank(opt->dist) != 0;
    int lock_fd = -1;
    int rc = follower ? HEAT_OK : prepare_dir(c, opt->mode, opt->notices, &lock_fd, err);
    heat_output *o = rc ? NULL : calloc(1, sizeof *o);
    if (!o) {
        heat_outdir_unlock(lock_fd);
        return rc ? rc : heat_error_set(err, HEAT_ERUNTIME, "out of memory");
    }
    o->lock_fd = lock_fd;
    o->c = c;
    o->opt = *opt;
    o->follower = follower;
    if (!o->opt.alloc.alloc || !o->opt.alloc.free) {
        o->opt.alloc.alloc = default_alloc;
        o->opt.alloc.free = default_free;
        o->opt.alloc.ctx = NULL;
    }
    o->nbuf = opt->buffers > 0 ? (opt->buffers < MAX_BUFFERS ? opt->buffers : MAX_BUFFERS) : 2;
    o->field_bytes =
        (size_t)(opt->dist ? opt->field_points : c->d.points) * heat_case_value_size(c);
    o->deck = strdup(opt->deck_text ? opt->deck_text : "");
    pthread_mutex_init(&o->mu, NULL);
    pthread_cond_init(&o->work, NULL);
    pthread_cond_init(&o->done, NULL);
    snprintf(o->dir, sizeof o->dir, "%s", c->output.dir);
    snprintf(o->history_path, sizeof o->history_path, "%s/history.csv", o->dir);
    snprintf(o->probes_path, sizeof o->probes_path, "%s/probes.csv", o->dir);
    heat_index_init(&o->index, c, o->dir);
    const int resume = opt->mode == HEAT_OUTPUT_CONTINUE;
    if (!o->deck)
        rc = heat_error_set(err, HEAT_ERUNTIME, "out of memory");
    else if (resume && !follower)
        rc = check_probes(o, err);
    if (!rc && resume && !follower)
        rc = heat_index_resume(&o->index, o->dir, opt->start_step, opt->notices, err);
    if (!rc && !follower)
        rc = heat_history_open(o->history_path, resume, opt->start_step, &o->history, err);
    if (!rc && !follower) rc = open_probes(o, resume, opt->start_step, err);
    /* A run killed between writing a checkpoint and removing the oldest
     * leaves one too many: the kept number holds from the start. */
    if (!rc && resume && !follower)
        heat_outdir_rotate(o->dir, c->name, c->output.keep_checkpoints, opt->notices);
    if (!rc && !opt->inline_writes) rc = start_writer(o, err);
    if (rc) {
        heat_output_close(o);
        return rc;
    }
    o->index_written = o->index.written;
    *out = o;
    return HEAT_OK;
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
    if (o->probes) fclose(o->probes);
    for (int i = 0; i < o->nalloc; i++) o->opt.alloc.free(o->buf[i], o->opt.alloc.ctx);
    pthread_cond_destroy(&o->done);
    pthread_cond_destroy(&o->work);
    pthread_mutex_destroy(&o->mu);
    heat_index_free(&o->index);
    heat_outdir_unlock(o->lock_fd);
    free(o->deck);
    free(o);
}

/* --------------------------------------------------- the driver's side */

/* A CSV field: the number, or nothing for NaN. */
static void put_field(FILE *f, const char *fmt, double v)
{
    fputc(',', f);
    if (!isnan(v)) fprintf(f, fmt, v);
}

static int flushed(FILE *f, const char *path, heat_error *err)
{
    if (fflush(f) != 0 || ferror(f))
        return heat_error_set(err, HEAT_ERUNTIME, "cannot write %s: %s", path, strerror(errno));
    return HEAT_OK;
}

int heat_output_history_row(heat_output *o, const heat_history_row *r, heat_error *err)
{
    int rc = report_failure(o, err);
    if (rc || o->follower) return rc;
    fprintf(o->history, "%lld,%.17g", (long long)r->step, r->time);
    put_field(o->history, "%.9g", r->residual);
    fprintf(o->history, ",%.6f", r->wall);
    put_field(o->history, "%.9g", r->min);
    put_field(o->history, "%.9g", r->max);
    put_field(o->history, "%.9g", r->mean);
    put_field(o->history, "%.9g", r->reduction);
    if (r->cycles >= 0)
        fprintf(o->history, ",%lld", (long long)r->cycles);
    else
        fputc(',', o->history);
    fputc('\n', o->history);
    return flushed(o->history, o->history_path, err);
}

int heat_output_probes(heat_output *o, int64_t step, double time, const double *values,
                       heat_error *err)
{
    int rc = report_failure(o, err);
    if (rc || o->follower || !o->probes) return rc;
    fprintf(o->probes, "%lld,%.17g", (long long)step, time);
    for (int i = 0; i < o->c->probes.count; i++) put_field(o->probes, "%.17g", values[i]);
    fputc('\n', o->probes);
    return flushed(o->probes, o->probes_path, err);
}

int heat_output_history(heat_output *o, int64_t step, double time, double residual, double wall,
                        heat_error *err)
{
    const heat_history_row r = {step, time, residual, wall, NAN, NAN, NAN, NAN, -1};
    return heat_output_history_row(o, &r, err);
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
                       const heat_output_steady *steady, heat_error *err)
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
    job j = {i, step, time, kinds, {0, 0, 0, 0}};
    if (steady) j.steady = *steady;
    if (o->opt.inline_writes) {
        /* No writer thread: written here and now, then the buffer is free. */
        pthread_mutex_unlock(&o->mu);
        heat_error e;
        heat_error_clear(&e);
        int rc = write_job(o, &j, buffer, &e);
        pthread_mutex_lock(&o->mu);
        o->state[i] = SLOT_FREE;
        if (rc) record_failure(o, &e);
        pthread_cond_broadcast(&o->done);
        pthread_mutex_unlock(&o->mu);
        return report_failure(o, err);
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
    /* history.csv, and probes.csv where the deck has probes. */
    int64_t n = 1 + (o->c->probes.count > 0) + o->index_written + o->snapshots + o->checkpoints;
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

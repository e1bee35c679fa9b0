/* The output directory: file names, the guard against mixing runs, making
 * it, listing and rotating checkpoints. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <sys/file.h>
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

/* The run name in a file name of heat's own patterns, `<name>.xmf`,
 * `<name>_<digits>.vtkhdf` and `<name>_ckpt_<digits>.vtkhdf`: its length, or
 * 0 when `file` is none of them. */
static size_t run_name_length(const char *file)
{
    size_t n = strlen(file);
    if (n > 4 && strcmp(file + n - 4, ".xmf") == 0) return n - 4;
    if (n <= 7 || strcmp(file + n - 7, ".vtkhdf") != 0) return 0;
    size_t d = n - 7;
    while (d > 0 && file[d - 1] >= '0' && file[d - 1] <= '9') d--;
    if (n - 7 - d < 8 || n - 7 - d > 18 || d < 2 || file[d - 1] != '_') return 0;
    d--;
    if (d > 5 && strncmp(file + d - 5, "_ckpt", 5) == 0) d -= 5;
    return d;
}

int heat_outdir_is_run_file(const char *name)
{
    return strcmp(name, "history.csv") == 0 || strcmp(name, "probes.csv") == 0 ||
           run_name_length(name) > 0;
}

int heat_outdir_is_leftover(const char *name)
{
    /* <file>.<pid>.tmp (heat_file_tmp_path), or <file>.tmp of older versions */
    size_t n = strlen(name);
    if (n < 5 || strcmp(name + n - 4, ".tmp") != 0) return 0;
    return strstr(name, ".vtkhdf.") || strstr(name, ".xmf.") ||
           strncmp(name, "history.csv.", 12) == 0 || strncmp(name, "probes.csv.", 11) == 0;
}

#define LOCK_NAME ".heat.lock"

/* The pid recorded in an open lock file, or 0. */
static long lock_holder(int fd)
{
    char buf[32] = "";
    ssize_t k = pread(fd, buf, sizeof buf - 1, 0);
    if (k <= 0) return 0;
    buf[k] = '\0';
    return strtol(buf, NULL, 10);
}

static int in_use(const char *dir, long pid, heat_error *err)
{
    return heat_error_set(err, HEAT_EINPUT,
                          "output.dir = \"%s\" is in use by another heat run (pid %ld): wait "
                          "for it to end, or choose another output.dir",
                          dir, pid);
}

/* Whether `dir` is locked by a live run right now (HEAT_EINPUT), without
 * taking the lock for long. */
static int check_lock(const char *dir, heat_error *err)
{
    char path[HEAT_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/" LOCK_NAME, dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return HEAT_OK;
    int rc = HEAT_OK;
    if (flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK)
        rc = in_use(dir, lock_holder(fd), err);
    close(fd);
    return rc;
}

int heat_output_check_path(const char *dir, heat_error *err)
{
    /* a name that no file system here takes: the deck's mistake too (stat
     * says so only where the parts before it exist) */
    for (const char *p = dir; *p;) {
        const size_t len = strcspn(p, "/");
        if (len > NAME_MAX)
            return heat_error_set(err, HEAT_EINPUT,
                                  "output.dir = \"%s\": its part \"%.*s\" has %zu characters, "
                                  "more than a file name may have (%d)",
                                  dir, (int)len, p, len, NAME_MAX);
        p += len + (p[len] == '/');
    }
    struct stat st;
    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            return heat_error_set(err, HEAT_EINPUT,
                                  "output.dir = \"%s\" exists and is not a directory", dir);
        return HEAT_OK;
    }
    if (errno == ENAMETOOLONG)
        return heat_error_set(err, HEAT_EINPUT, "output.dir = \"%s\": %s", dir,
                              strerror(ENAMETOOLONG));
    if (errno != ENOTDIR) return HEAT_OK; /* created later, or heat_output_open says why not */
    /* A file where the path needs a directory is the deck's mistake, not the
     * run's: name the first such part. */
    char part[HEAT_PATH_MAX];
    snprintf(part, sizeof part, "%s", dir);
    for (char *p = part + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        int file = stat(part, &st) == 0 && !S_ISDIR(st.st_mode);
        if (file)
            return heat_error_set(err, HEAT_EINPUT,
                                  "output.dir = \"%s\": %s is a file, not a directory, so the "
                                  "output directory cannot be made under it",
                                  dir, part);
        *p = '/';
    }
    return heat_error_set(err, HEAT_EINPUT, "output.dir = \"%s\": %s", dir, strerror(ENOTDIR));
}

int heat_output_check_dir(const char *dir, const char *name, heat_output_mode mode, heat_error *err)
{
    int rc = heat_output_check_path(dir, err);
    if (!rc) rc = check_lock(dir, err);
    if (!rc) rc = heat_outdir_check_other_run(dir, name, mode, err);
    return rc;
}

/* A restart into a directory of another run would mix the two runs' files
 * and rewrite that run's history.csv: refused. */
static int other_name(const char *dir, const char *file, size_t len, const char *name,
                      heat_error *err)
{
    return heat_error_set(err, HEAT_EINPUT,
                          "output.dir = \"%s\" holds another run, \"%.*s\" (%s): a restart "
                          "continues only a run of its own name, \"%s\": choose another "
                          "output.dir, or the deck of that run",
                          dir, (int)len, file, file, name);
}

int heat_outdir_check_other_run(const char *dir, const char *name, heat_output_mode mode,
                                heat_error *err)
{
    if (mode == HEAT_OUTPUT_OVERWRITE) return HEAT_OK;
    DIR *d = opendir(dir);
    if (!d) return HEAT_OK; /* heat_output_open reports the reason */
    /* A restart: any file of another run's name is refused. A new run: any
     * run file is, with --restart offered only where no file there has
     * another name than the deck's (other_name would refuse it). */
    char first[HEAT_PATH_MAX] = "";
    int others = 0, rc = HEAT_OK;
    struct dirent *e;
    while ((e = readdir(d))) {
        const size_t len = run_name_length(e->d_name);
        const int other = len && (len != strlen(name) || strncmp(e->d_name, name, len) != 0);
        if (mode == HEAT_OUTPUT_CONTINUE) {
            if (other) {
                rc = other_name(dir, e->d_name, len, name, err);
                break;
            }
            continue;
        }
        others += other;
        if (heat_outdir_is_run_file(e->d_name) && (!first[0] || (other && others == 1)))
            snprintf(first, sizeof first, "%s", e->d_name);
    }
    closedir(d);
    if (rc || !first[0]) return rc;
    return heat_error_set(err, HEAT_EINPUT,
                          "output.dir = \"%s\" already holds another run (%s): use --overwrite "
                          "to replace it, %sor another output.dir (e.g. --set output.dir=\"%s-2\")",
                          dir, first, others ? "" : "--restart latest to continue it, ", dir);
}

int heat_outdir_lock(const char *dir, FILE *notices, int *fd, heat_error *err)
{
    char path[HEAT_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/" LOCK_NAME, dir);
    *fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (*fd < 0)
        return heat_error_set(err, HEAT_ERUNTIME, "cannot create the lock file %s: %s", path,
                              strerror(errno));
    if (flock(*fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        long pid = lock_holder(*fd);
        close(*fd);
        *fd = -1;
        if (e == EWOULDBLOCK) return in_use(dir, pid, err);
        if (notices)
            fprintf(notices,
                    "notice: cannot lock output.dir %s (%s): make sure no other run uses it\n", dir,
                    strerror(e));
        return HEAT_OK;
    }
    long old = lock_holder(*fd);
    if (old > 0 && old != (long)getpid() && notices)
        fprintf(notices,
                "notice: output.dir %s: taking over the lock left by pid %ld, which ended "
                "without releasing it\n",
                dir, old);
    char pid[32];
    int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(*fd, 0) != 0 || pwrite(*fd, pid, (size_t)len, 0) != len) {
        int e = errno;
        close(*fd);
        *fd = -1;
        return heat_error_set(err, HEAT_ERUNTIME, "cannot write the lock file %s: %s", path,
                              strerror(e));
    }
    return HEAT_OK;
}

void heat_outdir_unlock(int fd)
{
    if (fd < 0) return;
    /* Emptied, not removed: removing it would let a second run lock a new
     * file while a third still waits on the old one. */
    if (ftruncate(fd, 0) != 0) {
    }
    close(fd);
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

/* Whether `path` is one of the files `keep` names (NULL-terminated; NULL:
 * none), compared as files, whatever path names them. */
static int kept(const char *path, const char *const *keep)
{
    struct stat st, ks;
    if (!keep || stat(path, &st) != 0) return 0;
    for (; *keep; keep++)
        if (stat(*keep, &ks) == 0 && st.st_dev == ks.st_dev && st.st_ino == ks.st_ino) return 1;
    return 0;
}

int heat_outdir_owned_by(const char *dir, const char *name, const char *file)
{
    const char *const keep[] = {file, NULL};
    const size_t len = strlen(name);
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    int found = 0;
    while (!found && (e = readdir(d))) {
        const int mine = strncmp(e->d_name, name, len) == 0 &&
                         (run_name_length(e->d_name) == len || !strcmp(e->d_name + len, ".xmf"));
        char path[HEAT_PATH_MAX + 256];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        found = mine && kept(path, keep);
    }
    closedir(d);
    return found;
}

int heat_outdir_remove(const char *dir, int (*which)(const char *), const char *const *keep,
                       const char *why, heat_error *err)
{
    DIR *d = opendir(dir);
    if (!d) return HEAT_OK;
    struct dirent *e;
    int rc = HEAT_OK;
    while ((e = readdir(d))) {
        if (!which(e->d_name)) continue;
        char path[HEAT_PATH_MAX + 256];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (kept(path, keep)) continue;
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

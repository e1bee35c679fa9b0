#include "io_util.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "h5file.h"
#include "heat_case.h"

int heat_io_fsync_parent(const char *path)
{
    char dir[HEAT_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        dir[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    /* Some file systems cannot sync a directory; the rename still stands. */
    if (rc != 0 && (errno == EINVAL || errno == ENOTSUP)) rc = 0;
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

int heat_io_commit(const char *tmp, const char *path, heat_error *err)
{
    /* fsync through a read-only descriptor: Linux flushes the file's data
     * whatever the descriptor's mode. */
    int fd = open(tmp, O_RDONLY);
    if (fd < 0 || fsync(fd) != 0) {
        int e = errno;
        if (fd >= 0) close(fd);
        unlink(tmp);
        return heat_error_set(err, HEAT_ERUNTIME, "cannot write %s: flushing it to disk: %s", path,
                              strerror(e));
    }
    close(fd);
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return heat_error_set(err, HEAT_ERUNTIME, "cannot write %s: renaming %s into place: %s",
                              path, tmp, strerror(e));
    }
    if (heat_io_fsync_parent(path) != 0)
        return heat_error_set(err, HEAT_ERUNTIME,
                              "cannot write %s: flushing its directory to disk: %s", path,
                              strerror(errno));
    return HEAT_OK;
}

void heat_file_tmp_path(char *buf, size_t n, const char *path)
{
    heat_file_tmp_path_of(buf, n, path, (long)getpid());
}

void heat_file_tmp_path_of(char *buf, size_t n, const char *path, long pid)
{
    snprintf(buf, n, "%s.%ld.tmp", path, pid);
}

int heat_io_grow(void **array, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : 16;
    while (n < need) n *= 2;
    void *p = realloc(*array, n * elem);
    if (!p) return -1;
    *array = p;
    *cap = n;
    return 0;
}

/* HDF5 closes every file still open when the program exits; a file whose
 * close failed (a full disk) makes that crash in HDF5 1.10. All our files
 * are closed explicitly, so the exit handler is not needed: switch it off
 * before the library starts. */
static void no_exit_handler(void)
{
    H5dont_atexit();
}

double heat_io_free_bytes(const char *dir)
{
    const char *t = getenv("HEAT_TEST_FREE_BYTES");
    if (t && *t) return atof(t);
    char p[HEAT_PATH_MAX];
    snprintf(p, sizeof p, "%s", dir[0] ? dir : ".");
    struct statvfs fs;
    while (statvfs(p, &fs) != 0) {
        char *slash = strrchr(p, '/');
        if (!slash) {
            if (strcmp(p, ".") == 0) return -1;
            snprintf(p, sizeof p, ".");
        } else if (slash == p) {
            p[1] = '\0';
            if (statvfs(p, &fs) != 0) return -1;
            break;
        } else {
            *slash = '\0';
        }
    }
    return (double)fs.f_bavail * (double)fs.f_frsize;
}

double heat_io_file_limit(void)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_FSIZE, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return -1;
    return (double)r.rlim_cur;
}

void heat_io_h5_start(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, no_exit_handler);
    H5open();
}

void heat_io_h5_quiet(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, no_exit_handler);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

typedef struct cause_walk {
    char innermost[512];
    char system[256];
    int checksum;
} cause_walk;

static herr_t walk_cb(unsigned n, const H5E_error2_t *e, void *data)
{
    cause_walk *w = data;
    const char *desc = e->desc ? e->desc : "";
    if (n == 0) snprintf(w->innermost, sizeof w->innermost, "%s", desc);
    if (strstr(desc, "Fletcher32") || strstr(desc, "checksum")) w->checksum = 1;
    /* The file drivers put the system's reason in the text:
     * "... errno = 28, error message = 'No space left on device', ..." */
    const char *m = strstr(desc, "error message = '");
    if (m && !w->system[0]) {
        m += strlen("error message = '");
        const char *end = strchr(m, '\'');
        size_t len = end ? (size_t)(end - m) : strlen(m);
        if (len >= sizeof w->system) len = sizeof w->system - 1;
        memcpy(w->system, m, len);
        w->system[len] = '\0';
    }
    return 0;
}

void heat_io_h5_cause(char *buf, size_t n, int *checksum)
{
    cause_walk w;
    memset(&w, 0, sizeof w);
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk_cb, &w);
    if (checksum) *checksum = w.checksum;
    if (w.system[0])
        snprintf(buf, n, "%s", w.system);
    else if (w.innermost[0])
        snprintf(buf, n, "%s", w.innermost);
    else
        snprintf(buf, n, "HDF5 error");
    H5Eclear2(H5E_DEFAULT);
}

#include "test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend.h"
#include "deck.h"
#include "h5file.h"

void test_remove_tree(const char *path)
{
    pid_t pid = fork();
    if (pid == 0) {
        execlp("rm", "rm", "-rf", path, (char *)NULL);
        _exit(127);
    }
    int st;
    waitpid(pid, &st, 0);
}

static int mkdir_p(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s", dir);
    for (char *p = path + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0777);
            *p = '/';
        }
    return mkdir(path, 0777) == 0 || errno == EEXIST ? 0 : -1;
}

const char *test_scratch_dir(const char *name)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", HEAT_TEST_TMP, name);
    test_remove_tree(path);
    assert_int_equal(mkdir_p(path), 0);
    return path;
}

static char *slurp_fd(int fd)
{
    size_t cap = 4096, len = 0;
    char *s = malloc(cap);
    for (;;) {
        if (len + 1024 > cap) s = realloc(s, cap *= 2);
        ssize_t k = read(fd, s + len, cap - len - 1);
        if (k <= 0) break;
        len += (size_t)k;
    }
    s[len] = '\0';
    return s;
}

int test_run_heat_fsize(const char *cwd, const char *const *argv, long max_file_bytes, char **out,
                        char **err)
{
    char tmpl_o[] = "/tmp/heat_test_outXXXXXX", tmpl_e[] = "/tmp/heat_test_errXXXXXX";
    int fo = mkstemp(tmpl_o), fe = mkstemp(tmpl_e);
    assert_true(fo >= 0 && fe >= 0);
    unlink(tmpl_o);
    unlink(tmpl_e);
    int n = 0;
    while (argv[n]) n++;
    char **av = calloc((size_t)n + 2, sizeof *av);
    av[0] = (char *)HEAT_EXE;
    for (int i = 0; i < n; i++) av[i + 1] = (char *)argv[i];
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (cwd && chdir(cwd) != 0) _exit(126);
        if (max_file_bytes >= 0) {
            struct rlimit lim = {(rlim_t)max_file_bytes, (rlim_t)max_file_bytes};
            /* SIGXFSZ as the shell leaves it: heat ignores it itself */
            signal(SIGXFSZ, SIG_DFL);
            if (setrlimit(RLIMIT_FSIZE, &lim) != 0) _exit(126);
        }
        int nul = open("/dev/null", O_RDONLY);
        dup2(nul, 0);
        dup2(fo, 1);
        dup2(fe, 2);
        execv(HEAT_EXE, av);
        _exit(127);
    }
    free(av);
    int st = 0;
    waitpid(pid, &st, 0);
    lseek(fo, 0, SEEK_SET);
    lseek(fe, 0, SEEK_SET);
    if (out) *out = slurp_fd(fo);
    if (err) *err = slurp_fd(fe);
    close(fo);
    close(fe);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return WEXITSTATUS(st);
}

void test_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

void test_expect_in(const char *what, const char *text, const char *needle)
{
    if (!text || !strstr(text, needle))
        fail_msg("%s does not contain \"%s\":\n%s", what, needle, text ? text : "(null)");
}

void test_expect_not_in(const char *what, const char *text, const char *needle)
{
    if (text && strstr(text, needle)) fail_msg("%s contains \"%s\":\n%s", what, needle, text);
}

int test_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

double test_uniform(uint64_t *state, double lo, double hi)
{
    /* splitmix64 */
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return lo + (hi - lo) * (double)(z >> 11) * 0x1.0p-53;
}

void test_sets_add(test_sets *s, const char *fmt, ...)
{
    assert_true(s->n < TEST_MAX_SETS);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->buf[s->n], sizeof s->buf[s->n], fmt, ap);
    va_end(ap);
    s->ptr[s->n] = s->buf[s->n];
    s->n++;
}

int test_run_heat(const char *cwd, const char *const *argv, char **out, char **err)
{
    return test_run_heat_fsize(cwd, argv, -1, out, err);
}

char *test_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0, k;
    char *s = malloc(cap);
    assert_non_null(s);
    while ((k = fread(s + len, 1, cap - len - 1, f)) > 0) {
        len += k;
        if (len + 1 == cap) {
            s = realloc(s, cap *= 2);
            assert_non_null(s);
        }
    }
    fclose(f);
    s[len] = '\0';
    return s;
}

void *test_read_field(const char *path, heat_file_meta *m)
{
    heat_error err;
    if (heat_file_read_meta(path, m, &err) != HEAT_OK) fail_msg("read_meta: %s", err.msg);
    const size_t vs = m->precision == HEAT_FLOAT ? sizeof(float) : sizeof(double);
    void *f = malloc((size_t)(m->n[0] * m->n[1] * m->n[2]) * vs);
    assert_non_null(f);
    if (heat_file_read_field(path, m, m->precision, f, &err) != HEAT_OK)
        fail_msg("read_field: %s", err.msg);
    return f;
}

void test_load_case_text(const char *deck, const char *origin, const test_sets *s, heat_case *c,
                         char **text)
{
    heat_error err;
    int rc =
        heat_deck_load_string(deck, origin, s ? s->ptr : NULL, s ? s->n : 0, c, text, NULL, &err);
    if (rc) fail_msg("deck refused: %s\n--- deck:\n%s", err.msg, deck);
    if (heat_case_derive(c, &err)) fail_msg("heat_case_derive: %s", err.msg);
}

void test_load_case(const char *deck, const char *origin, const test_sets *s, heat_case *c)
{
    test_load_case_text(deck, origin, s, c, NULL);
}

char *test_csv_without(const char *dir, const char *file, int drop)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    char *text = test_read_file(path);
    if (!text) fail_msg("cannot read %s", path);
    char *out = malloc(strlen(text) + 1), *o = out;
    assert_non_null(out);
    int col = 0;
    for (const char *t = text; *t; t++) {
        if (*t == '\n') col = -1;
        if (col != drop || *t == '\n') *o++ = *t;
        if (*t == ',' || *t == '\n') col++;
    }
    *o = '\0';
    free(text);
    return out;
}

int gpu_tests_skip(const char *program)
{
    const char *filter = getenv("HEAT_TEST_FILTER");
    if (filter && *filter) cmocka_set_test_filter(filter);
    char why[512];
    if (heat_backend_gpu_usable(why, sizeof why)) return 0;
    if (heat_backend_gpu_absent()) {
        printf("%s: skipped: %s\n", program, why);
        return 77;
    }
    /* a device is there, and the tests must run on it */
    printf("%s: FAILED: this machine has a CUDA device, but heat cannot use it: %s\n", program,
           why);
    return 1;
}

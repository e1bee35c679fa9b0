/* A mutation fuzzer for what heat reads: deck text, --set values and HDF5
 * field files. Seeded, so that a failure repeats: every input is derived
 * from the corpus in tests/fuzz/ (decks and --set lines) and from field
 * files written here, by byte and token mutations drawn from one 64-bit
 * generator.
 *
 *   fuzz_inputs CORPUS_DIR SCRATCH_DIR [--seed N] [--decks N] [--files N]
 *
 * Nothing may crash or hang (the sanitizer build makes every memory or
 * undefined-behaviour error fatal), and what is accepted must hold its
 * promises: a deck that loads derives to finite, positive numbers or is
 * refused with HEAT_EINPUT and a message; a damaged file is refused, or reads
 * back the very values that were written. The defaults (600,000 decks and
 * 40,000 files) take well under a minute on two cores; raise --decks and
 * --files, and vary --seed, for a longer search. Exit status 0, or 1 naming
 * the seed and iteration of the first broken promise. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "deck.h"
#include "h5file.h"
#include "heat_case.h"

static uint64_t rng;

static uint64_t next(void)
{
    /* xorshift64* (Vigna, 2016) */
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    return rng * UINT64_C(2685821657736338717);
}

static size_t pick(size_t n)
{
    return n ? (size_t)(next() % n) : 0;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) n = 0;
    fclose(f);
    if (s) s[n] = '\0';
    if (len) *len = (size_t)n;
    return s;
}

/* ---- decks ---------------------------------------------------------------- */

/* Tokens that probe the edges: numbers at the limits of int32, int64 and
 * double, odd types, libconfig syntax. */
static const char *const dictionary[] = {"0",
                                         "-1",
                                         "1",
                                         "2",
                                         "3",
                                         "4294967297",
                                         "2147483648",
                                         "-2147483649",
                                         "9223372036854775807",
                                         "99999999999999999999",
                                         "0x100000000",
                                         "0xFFFFFFFFFFFFFFFFF",
                                         "1e308",
                                         "-1e308",
                                         "1e-320",
                                         "4.9e-324",
                                         "nan",
                                         "inf",
                                         "1.0",
                                         "0.5",
                                         "1e5",
                                         "2L",
                                         "\"\"",
                                         "\"x\"",
                                         "\"dirichlet\"",
                                         "\"periodic\"",
                                         "\"neumann\"",
                                         "\"file\"",
                                         "\"gaussian\"",
                                         "\"float\"",
                                         "\"cuda\"",
                                         "[1,2,3]",
                                         "[1, 1.0, 2]",
                                         "(1, \"a\")",
                                         "{ }",
                                         "{ type = \"periodic\"; }",
                                         "true",
                                         ";",
                                         "=",
                                         "[",
                                         "]",
                                         "{",
                                         "}",
                                         "@include \"nowhere.cfg\"",
                                         "/*",
                                         "#",
                                         "\\n",
                                         "name",
                                         "grid",
                                         "points",
                                         "length",
                                         "time",
                                         "steady",
                                         "boundary",
                                         "x_lo",
                                         "z_hi",
                                         "output",
                                         "solver",
                                         "temporal_block"};
#define NDICT (sizeof dictionary / sizeof *dictionary)

/* One mutation of the text in buf (len bytes, room for cap). */
static size_t mutate_text(char *buf, size_t len, size_t cap)
{
    const size_t at = pick(len + 1);
    switch (pick(6)) {
    case 0: /* flip a byte */
        if (len) buf[pick(len)] ^= (char)(1 << pick(7));
        return len;
    case 1: /* delete a run */
    {
        size_t n = pick(16) + 1;
        if (at + n > len) n = len - at;
        memmove(buf + at, buf + at + n, len - at - n);
        return len - n;
    }
    case 2: /* a token from the dictionary */
    case 3: {
        const char *t = dictionary[pick(NDICT)];
        size_t n = strlen(t);
        if (len + n >= cap) return len;
        memmove(buf + at + n, buf + at, len - at);
        memcpy(buf + at, t, n);
        return len + n;
    }
    case 4: /* replace a number with a dictionary token */
    {
        size_t i = at;
        while (i < len && !(buf[i] >= '0' && buf[i] <= '9')) i++;
        size_t j = i;
        while (j < len && ((buf[j] >= '0' && buf[j] <= '9') || buf[j] == '.' || buf[j] == 'e')) j++;
        const char *t = dictionary[pick(21)];
        size_t n = strlen(t);
        if (i >= len || len - (j - i) + n >= cap) return len;
        memmove(buf + i + n, buf + j, len - j);
        memcpy(buf + i, t, n);
        return len - (j - i) + n;
    }
    default: /* repeat a run elsewhere */
    {
        size_t from = pick(len + 1), n = pick(40);
        if (from + n > len) n = len - from;
        if (len + n >= cap) return len;
        char tmp[64];
        memcpy(tmp, buf + from, n);
        memmove(buf + at + n, buf + at, len - at);
        memcpy(buf + at, tmp, n);
        return len + n;
    }
    }
}

/* The promises of an accepted deck. */
static const char *broken_case(const heat_case *c)
{
    if (!(c->d.dt > 0 && isfinite(c->d.dt) && c->d.dt_max > 0 && isfinite(c->d.dt_max)))
        return "dt or dt_max not finite and positive";
    if (c->d.dt > c->d.dt_max * (1 + 1e-12)) return "dt above dt_max";
    for (int a = 0; a < c->grid.dims; a++)
        if (!(c->d.h[a] > 0 && isfinite(c->d.h[a]) && c->d.r[a] > 0 && isfinite(c->d.r[a])))
            return "a spacing or r not finite and positive";
    if (c->grid.n[0] < 3 || c->grid.n[1] < 3 || (c->grid.n[2] < 3 && c->grid.n[2] != 1))
        return "an axis of fewer than 3 points";
    if (c->d.stop_step < 0 && !c->steady.enabled) return "nothing stops the run";
    if (c->solver.temporal_block < 1 || c->solver.temporal_block > HEAT_TEMPORAL_BLOCK_MAX)
        return "temporal_block out of range";
    return NULL;
}

/* Loads text with the sets; 0 when the outcome keeps the promises. */
static int try_deck(const char *text, const char *const *sets, int nsets, char *why, size_t nwhy)
{
    heat_case c;
    heat_error err;
    char *canon = NULL;
    int rc = heat_deck_load_string(text, "fuzz.cfg", sets, nsets, &c, &canon, NULL, &err);
    if (rc == HEAT_OK) rc = heat_case_derive(&c, &err);
    if (rc == HEAT_OK) {
        const char *b = broken_case(&c);
        if (b) snprintf(why, nwhy, "accepted, but %s", b);
        /* the canonical text reads back as the same case */
        heat_case again;
        if (!b && canon &&
            (heat_deck_load_string(canon, "canonical", NULL, 0, &again, NULL, NULL, &err) ||
             heat_case_derive(&again, &err) || again.d.dt != c.d.dt ||
             memcmp(again.grid.n, c.grid.n, sizeof c.grid.n) != 0))
            snprintf(why, nwhy, "its canonical text does not read back the same");
        free(canon);
        return why[0] != 0;
    }
    free(canon);
    if (rc != HEAT_EINPUT || !err.msg[0]) {
        snprintf(why, nwhy, "refused with status %d and message \"%s\"", rc, err.msg);
        return 1;
    }
    return 0;
}

static int fuzz_decks(const char *corpus, long iterations, uint64_t seed)
{
    const char *names[] = {"full.cfg", "plate.cfg", "default.cfg", "sheet2d.cfg", "sine2d.cfg"};
    char *seeds[5], path[4200];
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/%s", corpus, names[i]);
        if (!(seeds[i] = slurp(path, NULL))) {
            fprintf(stderr, "fuzz_inputs: cannot read the corpus deck %s: %s\n", path,
                    strerror(errno));
            return 1;
        }
    }
    snprintf(path, sizeof path, "%s/sets.txt", corpus);
    char *sets_text = slurp(path, NULL);
    char *set_lines[64];
    int nset = 0;
    for (char *l = sets_text ? strtok(sets_text, "\n") : NULL; l && nset < 64;
         l = strtok(NULL, "\n"))
        if (l[0] != '#') set_lines[nset++] = l;
    enum { CAP = 1 << 16 };
    char *buf = malloc(CAP), setbuf[4][512];
    long accepted = 0;
    for (long it = 0; it < iterations; it++) {
        const char *s = seeds[pick(5)];
        size_t len = strlen(s) < CAP - 1 ? strlen(s) : CAP - 1;
        memcpy(buf, s, len);
        for (size_t m = pick(8) + 1; m > 0; m--) len = mutate_text(buf, len, CAP - 1);
        buf[len] = '\0';
        const char *sets[4];
        int ns = (int)pick(3);
        for (int k = 0; k < ns && nset; k++) {
            const char *line = set_lines[pick((size_t)nset)];
            size_t l = strlen(line);
            memcpy(setbuf[k], line, l < 400 ? l : 400);
            setbuf[k][l < 400 ? l : 400] = '\0';
            size_t sl = strlen(setbuf[k]);
            if (pick(2)) sl = mutate_text(setbuf[k], sl, 500);
            setbuf[k][sl] = '\0';
            sets[k] = setbuf[k];
        }
        char why[512] = "";
        if (try_deck(buf, sets, ns, why, sizeof why)) {
            fprintf(stderr, "fuzz_inputs: deck %ld (seed %llu): %s\n--- deck:\n%s\n--- sets:", it,
                    (unsigned long long)seed, why, buf);
            for (int k = 0; k < ns; k++) fprintf(stderr, " [%s]", sets[k]);
            fprintf(stderr, "\n");
            return 1;
        }
        heat_case c;
        heat_error err;
        accepted += heat_deck_load_string(buf, "fuzz.cfg", sets, ns, &c, NULL, NULL, &err) == 0;
    }
    printf("fuzz_inputs: %ld decks, %ld accepted, every promise kept\n", iterations, accepted);
    for (int i = 0; i < 5; i++) free(seeds[i]);
    free(sets_text);
    free(buf);
    return 0;
}

/* ---- field files ---------------------------------------------------------- */

/* A small valid file of each kind: 3D and 2D, float and double, plain and
 * deflated. Returns its bytes; *m and *field describe what was written. */
static char *seed_file(const char *dir, int kind, size_t *len, heat_case *c, void **field)
{
    static const char *const decks[2] = {
        "grid = { points = [9, 7, 5]; length = [1.0, 1.0, 1.0]; };\n",
        "grid = { points = [13, 6, 1]; length = [1.0, 1.0, 1.0]; };\n"};
    char text[2048];
    snprintf(text, sizeof text,
             "%smaterial = { diffusivity = 1.0; };\ntime = { max_steps = 3; };\n"
             "initial = { type = \"constant\"; value = 1.0; };\n"
             "boundary = { x_lo = { type = \"periodic\"; }; x_hi = { type = \"periodic\"; };\n"
             "  y_lo = { type = \"dirichlet\"; value = 2.0; }; y_hi = { type = \"neumann\"; };\n"
             "  z_lo = { type = \"neumann\"; }; z_hi = { type = \"neumann\"; }; };\n"
             "solver = { precision = \"%s\"; };\n",
             decks[kind & 1], kind & 2 ? "float" : "double");
    heat_error err;
    char *canon = NULL;
    if (heat_deck_load_string(text, "seed", NULL, 0, c, &canon, NULL, &err) ||
        heat_case_derive(c, &err))
        return NULL;
    const size_t vs = heat_case_value_size(c);
    *field = malloc((size_t)c->d.points * vs);
    for (int64_t i = 0; i < c->d.points; i++) {
        double v = sin((double)i) * 100.0;
        if (vs == 4)
            ((float *)*field)[i] = (float)v;
        else
            ((double *)*field)[i] = v;
    }
    heat_file_meta m;
    heat_file_meta_from_case(&m, c, HEAT_FILE_CHECKPOINT, 2, heat_case_time(c, 2), canon);
    char path[4200];
    snprintf(path, sizeof path, "%s/seed%d.vtkhdf", dir, kind);
    int rc = heat_file_write(path, &m, *field, kind & 4 ? 6 : 0, &err);
    free(canon);
    return rc ? NULL : slurp(path, len);
}

/* Reads a (damaged) file; the promise: refused, or the values written. */
static int try_file(const char *path, const heat_case *c, const void *want, char *why, size_t nwhy)
{
    heat_file_meta m;
    heat_error err;
    if (heat_file_read_meta(path, &m, &err)) return 0;
    const size_t vs = heat_case_value_size(c), bytes = (size_t)c->d.points * vs;
    const int64_t points = m.n[0] * m.n[1] * m.n[2];
    void *got = points == c->d.points ? malloc(bytes) : NULL;
    int rc = got ? heat_file_read_field(path, &m, c->solver.precision, got, &err) : HEAT_OK;
    if (got && rc == HEAT_OK && memcmp(got, want, bytes) != 0)
        snprintf(why, nwhy, "the field reads back other values than were written, unnoticed");
    if (!got && points != c->d.points)
        snprintf(why, nwhy, "the metadata read back another grid (%lld points), unnoticed",
                 (long long)points);
    free(got);
    heat_file_meta_free(&m);
    return why[0] != 0;
}

static int fuzz_files(const char *dir, long iterations, uint64_t seed)
{
    for (int kind = 0; kind < 8; kind++) {
        heat_case c;
        void *field = NULL;
        size_t len;
        char *good = seed_file(dir, kind, &len, &c, &field);
        if (!good) {
            fprintf(stderr, "fuzz_inputs: cannot write a seed file in %s\n", dir);
            return 1;
        }
        char *bad = malloc(len);
        char path[4200];
        snprintf(path, sizeof path, "%s/fuzzed.vtkhdf", dir);
        for (long it = 0; it < iterations / 8; it++) {
            memcpy(bad, good, len);
            size_t n = len;
            for (size_t k = pick(4) + 1; k > 0; k--) {
                size_t at = pick(len);
                if (pick(8) == 0)
                    n = at; /* truncated */
                else if (pick(4) == 0) {
                    size_t run = pick(16) + 1;
                    memset(bad + at, (int)pick(256), run < len - at ? run : len - at);
                } else
                    bad[at] ^= (char)(1 << pick(8));
            }
            FILE *f = fopen(path, "wb");
            if (!f || fwrite(bad, 1, n, f) != n || fclose(f) != 0) {
                fprintf(stderr, "fuzz_inputs: cannot write %s\n", path);
                return 1;
            }
            char why[256] = "";
            if (getenv("FUZZ_KEEP")) {
                char keep[4300];
                snprintf(keep, sizeof keep, "%s/kept.vtkhdf", dir);
                FILE *k = fopen(keep, "wb");
                fwrite(bad, 1, n, k);
                fclose(k);
                snprintf(keep, sizeof keep, "%s/good.vtkhdf", dir);
                k = fopen(keep, "wb");
                fwrite(good, 1, len, k);
                fclose(k);
            }
            if (try_file(path, &c, field, why, sizeof why)) {
                fprintf(stderr, "fuzz_inputs: file %ld of kind %d (seed %llu): %s\n", it, kind,
                        (unsigned long long)seed, why);
                return 1;
            }
        }
        free(bad);
        free(good);
        free(field);
    }
    printf("fuzz_inputs: %ld damaged files, each refused or read back exactly\n", iterations);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: fuzz_inputs CORPUS_DIR SCRATCH_DIR [--seed N] [--decks N] "
                        "[--files N]\n");
        return 2;
    }
    uint64_t seed = 20261123;
    long decks = 600000, files = 40000;
    for (int i = 3; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--seed")) seed = strtoull(argv[i + 1], NULL, 10);
        if (!strcmp(argv[i], "--decks")) decks = atol(argv[i + 1]);
        if (!strcmp(argv[i], "--files")) files = atol(argv[i + 1]);
    }
    rng = seed ? seed : 1;
    mkdir(argv[2], 0777);
    int rc = fuzz_decks(argv[1], decks, seed);
    if (!rc) rc = fuzz_files(argv[2], files, seed);
    return rc;
}

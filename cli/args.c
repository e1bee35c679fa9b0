/* What the commands share: options of run and check, loading the case. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "deck.h"
#include "h5file.h"
#include "parallel.h"

int heat_cli_parse_args(int argc, char **argv, int allow_run_options, heat_cli_args *a)
{
    memset(a, 0, sizeof *a);
    for (int i = 0; i < argc; i++) {
        const char *s = argv[i];
        const char *val = NULL;
        if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) {
            a->help = 1;
        } else if (strcmp(s, "--set") == 0 || strcmp(s, "-s") == 0 ||
                   strncmp(s, "--set=", 6) == 0) {
            val = s[2] == 's' && s[5] == '=' ? s + 6 : (i + 1 < argc ? argv[++i] : NULL);
            if (!val) {
                fprintf(stderr, "heat: %s needs key=value\n", s);
                return 2;
            }
            if (a->nsets == HEAT_CLI_MAX_SETS) {
                fprintf(stderr, "heat: at most %d --set options\n", HEAT_CLI_MAX_SETS);
                return 2;
            }
            a->sets[a->nsets++] = val;
        } else if (allow_run_options &&
                   (strcmp(s, "--restart") == 0 || strncmp(s, "--restart=", 10) == 0)) {
            val = s[9] == '=' ? s + 10 : (i + 1 < argc ? argv[++i] : NULL);
            if (!val || !*val) {
                fprintf(stderr, "heat: --restart needs a checkpoint path or 'latest'\n");
                return 2;
            }
            a->restart = val;
        } else if (!allow_run_options &&
                   (strcmp(s, "--ranks") == 0 || strncmp(s, "--ranks=", 8) == 0)) {
            val = s[7] == '=' ? s + 8 : (i + 1 < argc ? argv[++i] : NULL);
            char *end = NULL;
            long n = val ? strtol(val, &end, 10) : 0;
            if (!val || end == val || *end || n < 1 || n > (1 << 24)) {
                if (val)
                    fprintf(stderr,
                            "heat: --ranks %s: expected a number of processes from 1 to %d\n", val,
                            1 << 24);
                else
                    fprintf(stderr, "heat: --ranks needs a number of processes from 1 to %d\n",
                            1 << 24);
                return 2;
            }
            a->ranks = (int)n;
        } else if (allow_run_options && strcmp(s, "--overwrite") == 0) {
            a->overwrite = 1;
        } else if (allow_run_options && (strcmp(s, "--quiet") == 0 || strcmp(s, "-q") == 0)) {
            a->quiet = 1;
        } else if (s[0] == '-' && s[1] != '\0') {
            fprintf(stderr, "heat: unknown option %s (see heat %s --help)\n", s,
                    allow_run_options ? "run" : "check");
            return 2;
        } else if (!a->deck) {
            a->deck = s;
        } else {
            fprintf(stderr, "heat: one deck at a time (got %s and %s)\n", a->deck, s);
            return 2;
        }
    }
    if (a->restart && a->overwrite) {
        fprintf(stderr, "heat: --restart continues a run and --overwrite replaces it: "
                        "choose one\n");
        return 2;
    }
    return 0;
}

/* `heat run --restart FILE` without a deck: the deck FILE holds. Returns 0,
 * or the exit status after saying why. */
static int load_case_from_file(const heat_cli_args *a, heat_case *c, char **text)
{
    heat_file_meta m;
    heat_error err;
    int rc = heat_file_read_meta(a->restart, &m, &err);
    if (rc) {
        /* A file the user named that is damaged or unreadable is bad input,
         * as in heat_run_start_field. */
        fprintf(stderr, "heat: --restart %s: %s\n", a->restart, err.msg);
        return 2;
    }
    char origin[HEAT_PATH_MAX + 32];
    snprintf(origin, sizeof origin, "%s (its deck)", a->restart);
    rc = heat_deck_load_restart(m.deck, origin, a->sets, a->nsets, c, text, stderr, &err);
    heat_file_meta_free(&m);
    if (rc || heat_case_derive(c, &err)) {
        fprintf(stderr, "heat: invalid deck:\n%s\n", err.msg);
        if (text) free(*text), *text = NULL;
        return 2;
    }
    /* A file written on another number of ranks continues on this one: the
     * split its deck names is for the run that wrote it (unless --set names
     * one again). */
    const int *r = c->parallel.ranks, size = heat_par_size(heat_par_world());
    int named = 0;
    for (int i = 0; i < a->nsets; i++) named |= strncmp(a->sets[i], "parallel.ranks", 14) == 0;
    if (r[0] > 0 && r[0] * r[1] * r[2] != size && !named) {
        fprintf(stderr,
                "notice: --restart %s: its deck's parallel.ranks = [%d, %d, %d] is for %d "
                "processes; this run has %d: the split is chosen for it\n",
                a->restart, r[0], r[1], r[2], r[0] * r[1] * r[2], size);
        c->parallel.ranks[0] = c->parallel.ranks[1] = c->parallel.ranks[2] = 0;
    }
    return 0;
}

int heat_cli_load_case(const heat_cli_args *a, heat_case *c, char **text)
{
    heat_error err;
    if (!a->deck && a->restart && strcmp(a->restart, "latest") != 0)
        return load_case_from_file(a, c, text);
    const char *path = a->deck && strcmp(a->deck, "-") != 0 ? a->deck : NULL;
    if (heat_deck_load(path, a->sets, a->nsets, c, text, stderr, &err) ||
        heat_case_derive(c, &err)) {
        fprintf(stderr, "heat: invalid deck:\n%s\n", err.msg);
        if (text) free(*text), *text = NULL;
        return 2;
    }
    return 0;
}

void heat_cli_human_bytes(char *buf, size_t n, double b)
{
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    while (b >= 1024 && u < 5) b /= 1024, u++;
    snprintf(buf, n, u ? "%.3g %s" : "%.0f %s", b, unit[u]);
}

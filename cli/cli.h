/* The command line: one file per command (run, check, info, bench), and the
 * argument parsing and deck loading they share. Only cli/main.c turns an
 * error into an exit status; the commands return the status to exit with. */
#ifndef HEAT_CLI_H
#define HEAT_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "heat_case.h"

#ifndef HEAT_VERSION
#define HEAT_VERSION "0.0.0"
#endif

#define HEAT_CLI_MAX_SETS 256

/* The options of `heat run` and `heat check`. */
typedef struct heat_cli_args {
    const char *deck;
    const char *sets[HEAT_CLI_MAX_SETS];
    int nsets;
    const char *restart;
    int overwrite, quiet, help;
    int ranks; /* check --ranks N: show the split over N ranks (0: the run's own) */
} heat_cli_args;

/* Parses the options of run (allow_run_options) or check into *a. Returns 0,
 * or the exit status 2 after saying what is wrong. */
int heat_cli_parse_args(int argc, char **argv, int allow_run_options, heat_cli_args *a);

/* Loads and derives the case of `a`: the deck file, the built-in default
 * deck (no deck or "-"), or with `--restart FILE` and no deck the deck that
 * FILE holds. *text (when text is not NULL) receives the canonical deck
 * text. Returns 0, or the exit status after printing the problems. */
int heat_cli_load_case(const heat_cli_args *a, heat_case *c, char **text);

/* "1.5 GiB": bytes in binary units, three significant digits. */
void heat_cli_human_bytes(char *buf, size_t n, double bytes);

/* The commands: argc/argv after the command's name; each returns the exit
 * status. */
int heat_cmd_run(const heat_cli_args *a);
int heat_cmd_check(const heat_cli_args *a);
int heat_cmd_info(int argc, char **argv);
int heat_cmd_bench(int argc, char **argv);

/* A --size value (NXxNYxNZ) into n, and NULL; else what is wrong with it, in
 * words. The deck's own limits are checked here, so that a refusal names
 * --size as written, not the deck the bench makes of it (bench.c). */
const char *heat_cli_parse_size(const char *s, int64_t n[3]);
/* heat bench --multigrid (bench_mg.c). */
int heat_bench_multigrid(int argc, char **argv);

/* An argument --option=value: the option's name into name (size bytes at
 * most) and its value returned; NULL for any other argument. */
const char *heat_cli_split_option(const char *arg, char *name, size_t size);

/* heat bench --json FILE: written as FILE.partial (removed on SIGINT or
 * SIGTERM) and renamed to FILE by heat_bench_json_close when rc is 0, else
 * removed, an earlier FILE left as it was. Open: NULL after saying why.
 * Close: the exit status, 1 where writing or renaming failed. */
FILE *heat_bench_json_open(const char *path);
int heat_bench_json_close(FILE *f, const char *path, int rc);

extern const char heat_usage_run[], heat_usage_check[];

#endif

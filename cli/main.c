/* heat: the command line. Dispatches to the commands (cli/cmd_*.c,
 * cli/bench.c) and is the only place that turns an error into an exit
 * status. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "cli.h"
#include "parallel.h"

#ifndef HEAT_CUDA_ARCHS
#define HEAT_CUDA_ARCHS ""
#endif

static const char usage_main[] =
    "heat " HEAT_VERSION ": heat-diffusion solver (CPU and GPU)\n"
    "\n"
    "usage: heat run [DECK] [--set key=value]... [--restart PATH|latest] [--overwrite] [--quiet]\n"
    "       heat check DECK [--set key=value]... [--ranks N]\n"
    "       heat info FILE\n"
    "       heat bench [--size NXxNYxNZ]... [--precision float|double|both] [--json FILE]\n"
    "       heat --help | heat COMMAND --help | heat --version (also: heat help [COMMAND], heat "
    "version)\n"
    "\n"
    "commands:\n"
    "  run     march rho c u_t = div(k grad u) + q from a deck (the built-in default deck\n"
    "          when DECK is left out; one or several materials, sources, explicit or\n"
    "          implicit steps, or the steady state by multigrid) and write history.csv,\n"
    "          probes.csv, snapshots, checkpoints and an XDMF time series to output.dir\n"
    "  check   validate a deck and print the derived numbers (spacing, r, dt, dt_max,\n"
    "          steps, memory, output volume) without running or writing anything\n"
    "  info    show a snapshot's or checkpoint's metadata and deck, and verify its checksum\n"
    "  bench   time the stencil sweep against a copy of the same size (GLUP/s, GB/s);\n"
    "          --materials: the materials update; --multigrid: one V-cycle per level\n"
    "\n"
    "Under MPI (mpirun -np N heat run DECK, srun -n N heat run DECK) the grid is split\n"
    "over the ranks (parallel.ranks, or the split with the fewest halo points) and every\n"
    "result is the one-process result, bit for bit; only rank 0 prints.\n"
    "\n"
    "exit status: 0 done, 1 runtime failure, 2 bad usage or deck, 3 steady run or an\n"
    "             implicit step's solve stalled above its tolerance, 130 / 143 / 129\n"
    "             after SIGINT / SIGTERM / SIGHUP (a checkpoint is written first)\n"
    "\n"
    "The deck is libconfig text; docs/DECK.md lists every key. Example:\n"
    "  heat run plate.cfg --set time.end=2.0 --set 'grid.points=[128,128,1]' --set "
    "solver.precision=float\n";

static int version(void)
{
    printf("heat %s\nbackends: %s\n", HEAT_VERSION, heat_backend_builtin());
#ifdef HEAT_HAVE_MPI
    printf("mpi: yes (runs over several processes when started by mpirun or srun)\n");
#else
    printf("mpi: no (built without MPI: one process)\n");
#endif
    if (HEAT_CUDA_ARCHS[0]) printf("cuda architectures: %s\n", HEAT_CUDA_ARCHS);
    return 0;
}

static int heat_main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage_main, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    /* heat help COMMAND: that command's help, as heat COMMAND --help */
    const int help = strcmp(cmd, "help") == 0;
    if (help && argc == 3 && strcmp(argv[2], "help") != 0) {
        char *as_help[] = {argv[0], argv[2], "--help", NULL};
        return heat_main(3, as_help);
    }
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || help ||
        strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        if (argc > 2 + help) {
            fprintf(stderr, "heat %s: unexpected argument '%s'%s\n", cmd, argv[2 + help],
                    help ? " (heat help COMMAND takes one command)" : "");
            return 2;
        }
        if (cmd[0] == 'v' || strcmp(cmd, "--version") == 0) return version();
        fputs(usage_main, stdout);
        return 0;
    }
    if (strcmp(cmd, "run") == 0 || strcmp(cmd, "check") == 0) {
        int is_run = cmd[0] == 'r';
        heat_cli_args a;
        int rc = heat_cli_parse_args(argc - 2, argv + 2, is_run, &a);
        if (rc) return rc;
        if (a.help) {
            fputs(is_run ? heat_usage_run : heat_usage_check, stdout);
            return 0;
        }
        return is_run ? heat_cmd_run(&a) : heat_cmd_check(&a);
    }
    if (strcmp(cmd, "bench") == 0) return heat_cmd_bench(argc - 2, argv + 2);
    if (strcmp(cmd, "info") == 0) return heat_cmd_info(argc - 2, argv + 2);
    fprintf(stderr,
            "heat: unknown command '%s' (commands: run, check, info, bench; see heat --help)\n",
            cmd);
    return 2;
}

int main(int argc, char **argv)
{
    /* MPI only when an MPI launcher started us (solver/parallel.h). */
    int rc = heat_par_init(&argc, &argv);
    if (rc) return rc;
    rc = heat_main(argc, argv);
    /* A full disk or a closed pipe on stdout is a failure, not a success. */
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "heat: cannot write to standard output: %s\n", strerror(errno));
        if (rc == 0) rc = 1;
    }
    heat_par_finalize();
    return rc;
}

/* heat run: load the deck, run it, turn the result into an exit status. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "driver.h"
#include "signals.h"

const char heat_usage_run[] =
    "usage: heat run [DECK] [options]\n"
    "\n"
    "Runs the deck (the built-in default deck when DECK is left out: a 64^3 block\n"
    "that finishes in seconds; `heat check` shows its numbers).\n"
    "\n"
    "options:\n"
    "  --set key=value     override a deck key, checked like the deck itself; repeatable\n"
    "                      (up to 256). The value is libconfig syntax (2.0, [128,128,1],\n"
    "                      \"float\") or a bare word taken as a string (--set\n"
    "                      solver.precision=float). An element of a list or array is\n"
    "                      key[i], from 0: --set 'grid.points[2]=256', --set\n"
    "                      'materials[1].conductivity=2.5' (quoted for the shell).\n"
    "                      Also -s key=value, --set=key=value\n"
    "  --restart PATH      continue from a checkpoint (or snapshot) file; without DECK,\n"
    "                      with the deck the file holds\n"
    "  --restart latest    continue from the newest intact checkpoint in output.dir, or\n"
    "                      start from the initial condition when there is no checkpoint\n"
    "                      at all (only damaged ones: exit status 1)\n"
    "                      (grid, precision, boundaries, diffusivity or materials,\n"
    "                      regions and sources must match the file; the run keeps\n"
    "                      the file's dt, so it continues bit for bit)\n"
    "  --overwrite         replace an earlier run's files in output.dir (refused otherwise)\n"
    "  --quiet, -q         no progress line and no summary\n"
    "  --help, -h          this text\n"
    "\n"
    "Progress: a status line on a terminal, a log line every 5 s otherwise. The run\n"
    "stops at time.end, time.max_steps or steady state (max |du/dt| <= steady.tolerance,\n"
    "checked every steady.check_every steps, or after every V-cycle with\n"
    "steady.method = \"multigrid\"), whichever comes first, or when the residual\n"
    "stalls above the tolerance (no new low in steady.stall_checks checks: exit status\n"
    "3); Ctrl-C, SIGTERM or SIGHUP (the terminal closed; not under nohup) stops at the\n"
    "end of the current batch of steps (up to the next check, snapshot or checkpoint\n"
    "step, at most about 0.2 s of work) and writes a checkpoint (a second Ctrl-C ends\n"
    "at once). The run locks output.dir for its life:\n"
    "a second run there is refused.\n"
    "In output.dir: history.csv (step, time, residual max |du/dt|, wall seconds, the\n"
    "field's min, max and mean, multigrid's reduction and cycles), probes.csv (with\n"
    "probes in the deck),\n"
    "NAME_STEP.vtkhdf snapshots, NAME_ckpt_STEP.vtkhdf checkpoints and NAME.xmf, the\n"
    "snapshots as a time series for ParaView (docs/FORMAT.md).\n"
    "\n"
    "Options with a value also take the form --option=value (--restart=PATH).\n"
    "\n"
    "exit status: 0 done, 1 runtime failure, 2 bad usage or deck (solver.backend =\n"
    "\"cuda\" in a heat built without CUDA included), 3 steady run or an implicit\n"
    "step's solve stalled, 130 / 143 / 129 after SIGINT / SIGTERM / SIGHUP\n";

/* A stall's advice: more precision helps only a run that is not already in
 * double, so a double run is told of the tolerance alone. */
static const char *stall_advice(const heat_case *c, const char *larger, char *buf, size_t n)
{
    if (c->solver.precision == HEAT_FLOAT)
        snprintf(buf, n, "Use double precision (solver.precision = \"double\") or %s", larger);
    else
        snprintf(buf, n, "Use %s", larger);
    return buf;
}

int heat_cmd_run(const heat_cli_args *a)
{
    /* First, so that a signal while the deck loads is caught, not fatal. */
    heat_signals_install();
    heat_case c;
    char *text = NULL;
    int lrc = heat_cli_load_case(a, &c, &text);
    if (lrc) return lrc;
    heat_run_options opt = {0};
    opt.restart = a->restart;
    opt.overwrite = a->overwrite;
    opt.quiet = a->quiet;
    opt.out = stdout;
    opt.notices = stderr;
    heat_run_result res;
    heat_error err;
    int rc = heat_run(&c, text, &opt, &res, &err);
    free(text);
    if (rc) {
        fprintf(stderr, "heat: %s\n", err.msg);
        return rc;
    }
    if (res.reason == HEAT_STOP_SIGNAL) {
        fprintf(stderr, "heat: stopped by %s at step %lld\n",
                res.signal == SIGINT   ? "SIGINT"
                : res.signal == SIGHUP ? "SIGHUP"
                                       : "SIGTERM",
                (long long)res.final_step);
        return 128 + res.signal;
    }
    char advice[128];
    if (res.reason == HEAT_STOP_STALLED) {
        fprintf(stderr,
                "heat: the residual stalled at %.6e, above steady.tolerance = %.6e: it set no new "
                "low in %lld checks (steady.stall_checks), which is what rounding in %s allows "
                "here; the final state is written. %s\n",
                res.last_residual, c.steady.tolerance, (long long)c.steady.stall_checks,
                heat_precision_name(c.solver.precision),
                stall_advice(&c, "a larger tolerance", advice, sizeof advice));
        return 3;
    }
    if (res.reason == HEAT_STOP_SOLVE_STALLED && res.mg_zero_rhs) {
        fprintf(stderr,
                "heat: step %lld's multigrid solve stalled: its right-hand side is zero, and the "
                "residual stopped at %.3g of its first, above what rounding in %s leaves; the "
                "state at that step is written. The V-cycles do not converge on this deck "
                "(docs/DECK.md, \"Multigrid\"): use time.scheme = \"explicit\"\n",
                (long long)res.final_step, res.mg_reduction,
                heat_precision_name(c.solver.precision));
        return 3;
    }
    if (res.reason == HEAT_STOP_SOLVE_STALLED) {
        fprintf(stderr,
                "heat: step %lld's multigrid solve stalled: the residual came to %.3g relative "
                "to the right-hand side, not to solver.implicit_tolerance = %.3g; the state at "
                "that step is written. %s\n",
                (long long)res.final_step, res.mg_reduction, c.solver.implicit_tolerance,
                stall_advice(&c, "a larger solver.implicit_tolerance", advice, sizeof advice));
        return 3;
    }
    return 0;
}

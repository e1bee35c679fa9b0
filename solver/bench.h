/* heat bench: timed sweeps of each backend and kernel against a copy of the
 * same size, the bandwidth ceiling for a stencil that reads and writes each
 * point once per step. */
#ifndef HEAT_BENCH_H
#define HEAT_BENCH_H

/* Runs `heat bench` with the arguments after "bench"; returns the exit
 * status (0, 1 on a runtime failure, 2 on bad usage). */
int heat_bench_main(int argc, char **argv);

#endif

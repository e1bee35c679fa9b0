/* SIGINT / SIGTERM / SIGHUP: the first one asks the run to stop after the
 * current step (and write a checkpoint); a second one of the same kind ends
 * the program at once, as the user then clearly wants. SIGHUP (a closed
 * terminal) only where it is not ignored already (nohup keeps it ignored).
 * SIGXFSZ is ignored: a write past a file size limit fails as on a full
 * disk. */
#ifndef HEAT_SIGNALS_H
#define HEAT_SIGNALS_H

/* Installs the handlers (once; later calls do nothing). `heat run` does it
 * first thing, so that a signal during start-up is not lost either. */
void heat_signals_install(void);

/* The signal number caught so far (SIGINT, SIGTERM or SIGHUP), or 0. */
int heat_signals_caught(void);

#endif

#include "signals.h"

#include <signal.h>
#include <string.h>

static volatile sig_atomic_t caught;

static void on_signal(int sig)
{
    if (!caught) caught = sig;
}

void heat_signals_install(void)
{
    static int installed;
    if (installed) return; /* again would undo the reset of a signal already caught */
    installed = 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND; /* the second signal takes the default action */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    /* SIGHUP (the terminal closed): the same, unless it is ignored (nohup),
     * which the user then wants kept */
    struct sigaction hup;
    if (sigaction(SIGHUP, NULL, &hup) == 0 && hup.sa_handler != SIG_IGN)
        sigaction(SIGHUP, &sa, NULL);
    /* Past a file size limit (ulimit -f, a batch system's) a write fails
     * with EFBIG, which the writers report as they report a full disk,
     * instead of the signal ending the program in the middle of a file. */
    signal(SIGXFSZ, SIG_IGN);
}

int heat_signals_caught(void)
{
    return caught;
}

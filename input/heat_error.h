/* heat_error: the one error type every module returns through.
 *
 * A module that fails fills a heat_error with a code and a message and returns
 * the code; callers may prefix context ("reading deck.cfg: ") and pass it up.
 * Only main() turns a code into an exit status, and the codes are chosen to be
 * exactly those statuses.
 */
#ifndef HEAT_ERROR_H
#define HEAT_ERROR_H

enum heat_status {
    HEAT_OK = 0,
    HEAT_ERUNTIME = 1, /* the run failed: I/O, device, NaN; exit status 1 */
    HEAT_EINPUT = 2,   /* bad usage or bad deck; exit status 2, nothing written */
};

#define HEAT_ERROR_MSG_MAX 32768

typedef struct heat_error {
    int code;
    char msg[HEAT_ERROR_MSG_MAX];
} heat_error;

/* Clears err (code HEAT_OK, empty message). err may be NULL. */
void heat_error_clear(heat_error *err);

/* Sets err's code and a printf-style message; returns code so that a module
 * can write `return heat_error_set(err, HEAT_EINPUT, "...", ...);`.
 * err may be NULL, in which case only the code is returned. */
int heat_error_set(heat_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Appends a line to err's message (separated by a newline) and raises its code
 * to `code` if it was HEAT_OK: used to collect several deck errors at once.
 * Returns err->code. */
int heat_error_append(heat_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Puts printf-style context in front of err's message, keeping its code. */
void heat_error_prefix(heat_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif

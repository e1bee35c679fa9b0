#include "heat_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* When a message would not fit, whole lines are kept and this says so:
 * never half a line, so that a file name is never cut. */
static const char more[] = "\n(more problems not shown)";

void heat_error_clear(heat_error *err)
{
    if (!err) return;
    err->code = HEAT_OK;
    err->msg[0] = '\0';
}

/* Writes `text` at err->msg + used if it fits whole (with room for `more`);
 * else ends the message with `more`, once. */
static void put_whole(heat_error *err, size_t used, const char *text)
{
    size_t len = strlen(text), room = sizeof err->msg - sizeof more;
    if (used + len < room) {
        memcpy(err->msg + used, text, len + 1);
    } else if (!strstr(err->msg, more + 1)) {
        if (used > 0 && err->msg[used - 1] == '\n') used--;
        memcpy(err->msg + used, used ? more : more + 1, sizeof more - (used ? 0 : 1));
    }
}

/* printf into a malloc'd string (NULL when out of memory). */
static char *format(const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s) vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

int heat_error_set(heat_error *err, int code, const char *fmt, ...)
{
    if (!err) return code;
    va_list ap;
    va_start(ap, fmt);
    char *s = format(fmt, ap);
    va_end(ap);
    err->msg[0] = '\0';
    put_whole(err, 0, s ? s : "out of memory while reporting an error");
    free(s);
    err->code = code;
    return code;
}

int heat_error_append(heat_error *err, int code, const char *fmt, ...)
{
    if (!err) return code;
    va_list ap;
    va_start(ap, fmt);
    char *s = format(fmt, ap);
    va_end(ap);
    size_t used = strlen(err->msg);
    if (!strstr(err->msg, more + 1)) {
        char *line = s ? malloc(strlen(s) + 2) : NULL;
        if (line) {
            sprintf(line, "%s%s", used ? "\n" : "", s);
            put_whole(err, used, line);
        }
        free(line);
    }
    free(s);
    if (err->code == HEAT_OK) err->code = code;
    return err->code;
}

void heat_error_prefix(heat_error *err, const char *fmt, ...)
{
    if (!err) return;
    va_list ap;
    va_start(ap, fmt);
    char *head = format(fmt, ap);
    va_end(ap);
    size_t hl = head ? strlen(head) : 0, ml = strlen(err->msg);
    if (head && hl + sizeof more < sizeof err->msg) {
        /* Too long with the head: drop whole lines from the end to make room. */
        int cut = 0;
        while (hl + ml + sizeof more >= sizeof err->msg) {
            char *nl = strrchr(err->msg, '\n');
            ml = nl ? (size_t)(nl - err->msg) : 0;
            err->msg[ml] = '\0';
            cut = 1;
        }
        memmove(err->msg + hl, err->msg, ml + 1);
        memcpy(err->msg, head, hl);
        if (cut) strcat(err->msg, more);
    }
    free(head);
}

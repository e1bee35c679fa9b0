#include "heat_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void heat_error_clear(heat_error *err)
{
    if (!err) return;
    err->code = HEAT_OK;
    err->msg[0] = '\0';
}

int heat_error_set(heat_error *err, int code, const char *fmt, ...)
{
    if (!err) return code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->code = code;
    return code;
}

int heat_error_append(heat_error *err, int code, const char *fmt, ...)
{
    if (!err) return code;
    size_t used = strlen(err->msg);
    if (used > 0 && used + 1 < sizeof err->msg) err->msg[used++] = '\n', err->msg[used] = '\0';
    if (used + 1 < sizeof err->msg) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg + used, sizeof err->msg - used, fmt, ap);
        va_end(ap);
    }
    if (err->code == HEAT_OK) err->code = code;
    return err->code;
}

void heat_error_prefix(heat_error *err, const char *fmt, ...)
{
    if (!err) return;
    char head[1024], old[HEAT_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    snprintf(err->msg, sizeof err->msg, "%s%s", head, old);
}

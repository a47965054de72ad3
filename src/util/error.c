/* error.c -- formatting of the one-line errors the core hands back. */
#include "error.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int tt_fail(tt_error *err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int tt_fail_errno(tt_error *err, const char *fmt, ...)
{
    int saved = errno;
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < sizeof err->message)
            snprintf(err->message + n, sizeof err->message - (size_t)n, ": %s", strerror(saved));
    }
    errno = saved;
    return -1;
}

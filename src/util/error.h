/* error.h -- how the C core reports a failure to its caller.
 *
 * A function that can fail takes a `tt_error *` and returns non-zero on
 * failure, after writing one human-readable line into it. The edge (the
 * CPython extension, a command-line tool) reports that line once; nothing
 * inside the core prints.
 */
#ifndef TRACETOP_ERROR_H
#define TRACETOP_ERROR_H

#include <stdarg.h>

typedef struct tt_error {
    char message[512];
} tt_error;

/* Formats the message into err (when err is not NULL) and returns -1, so
 * callers can write `return tt_fail(err, "...", ...);`. */
int tt_fail(tt_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Like tt_fail, with ": <strerror(errno)>" appended. */
int tt_fail_errno(tt_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif

/* out.c -- a converter's output file (see out.h). */
#include "out.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

#include "file.h"

/* Converters write in small pieces: a large buffer keeps system calls rare. */
#define OUT_BUFFER_SIZE (1u << 20)

int tt_out_open(tt_out *o, const char *path, tt_error *err)
{
    *o = (tt_out){0};
    if (!(o->path = strdup(path))) return tt_fail(err, "out of memory");
    int fd = tt_open_output(AT_FDCWD, path, O_WRONLY);
    if (fd < 0 || !(o->f = fdopen(fd, "wb"))) {
        tt_fail(err, "cannot write %s: %s", path, tt_output_problem(errno));
        if (fd >= 0) close(fd);
        free(o->path);
        return -1;
    }
    setvbuf(o->f, NULL, _IOFBF, OUT_BUFFER_SIZE);
    return 0;
}

void tt_out_failed(tt_out *o)
{
    if (!o->error) o->error = errno ? errno : EIO;
}

void tt_out_printf(tt_out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (vfprintf(o->f, fmt, ap) < 0) tt_out_failed(o);
    va_end(ap);
}

/* The length of the valid UTF-8 sequence of 2 to 4 bytes at s, or 0; at
 * least 4 bytes are readable there. */
static size_t utf8_length(const uint8_t *s)
{
    uint8_t c = s[0];
    size_t n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
    if (!n) return 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80) return 0;
    /* Overlong forms, surrogates and code points past U+10FFFF. */
    if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0) || (c == 0xf0 && s[1] < 0x90) ||
        (c == 0xf4 && s[1] >= 0x90))
        return 0;
    return n;
}

/* utf8_length where fewer than 4 bytes are left before end. */
static size_t utf8_length_bounded(const uint8_t *s, const uint8_t *end)
{
    uint8_t tail[4] = {0};
    memcpy(tail, s, (size_t)(end - s));
    return utf8_length(tail);
}

void tt_json_string(const char *str, size_t len, void (*emit)(void *ctx, const char *bytes, size_t n), void *ctx)
{
    const uint8_t *s = (const uint8_t *)str, *end = s + len;
    char escape[8];
    emit(ctx, "\"", 1);
    while (s < end) {
        const uint8_t *run = s;
        while (s < end && *s >= 0x20 && *s < 0x80 && *s != '"' && *s != '\\') s++;
        emit(ctx, (const char *)run, (size_t)(s - run));
        if (s == end) break;
        size_t n;
        if (*s == '"' || *s == '\\') {
            escape[0] = '\\';
            escape[1] = (char)*s++;
            emit(ctx, escape, 2);
        } else if (*s < 0x20) {
            snprintf(escape, sizeof escape, "\\u%04x", *s++);
            emit(ctx, escape, 6);
        } else if ((n = (size_t)(end - s) >= 4 ? utf8_length(s) : utf8_length_bounded(s, end))) {
            emit(ctx, (const char *)s, n);
            s += n;
        } else {
            emit(ctx, "\\ufffd", 6);
            s++;
        }
    }
    emit(ctx, "\"", 1);
}

static void emit_out(void *o, const char *bytes, size_t n) { tt_out_write(o, bytes, n); }

void tt_out_json_string_n(tt_out *o, const char *s, size_t len) { tt_json_string(s, len, emit_out, o); }

void tt_out_json_double(tt_out *o, double v)
{
    if (isfinite(v))
        tt_out_printf(o, "%.17g", v);
    else
        tt_out_str(o, "null");
}

void tt_out_micros(tt_out *o, uint64_t ns)
{
    char buf[32], *p = buf + sizeof buf;
    unsigned frac = (unsigned)(ns % 1000);
    uint64_t us = ns / 1000;
    for (int i = 0; i < 3; i++, frac /= 10) *--p = (char)('0' + frac % 10);
    *--p = '.';
    do *--p = (char)('0' + us % 10);
    while (us /= 10);
    tt_out_write(o, p, (size_t)(buf + sizeof buf - p));
}

uint64_t tt_out_size(tt_out *o)
{
    off_t at = ftello(o->f);
    return at > 0 ? (uint64_t)at : 0;
}

int tt_out_close(tt_out *o, tt_error *err)
{
    if (fflush(o->f) != 0) tt_out_failed(o);
    if (fclose(o->f) != 0) tt_out_failed(o);
    int rc = 0;
    if (o->error) {
        errno = o->error;
        rc = tt_fail_errno(err, "cannot write %s", o->path);
        unlink(o->path);
    }
    free(o->path);
    return rc;
}

void tt_out_discard(tt_out *o)
{
    fclose(o->f);
    unlink(o->path);
    free(o->path);
}

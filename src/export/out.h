/* out.h -- the output file of a converter: buffered, with the first write
 * error kept and reported once, when the file is closed.
 *
 * Converters write many small pieces (a JSON object per event); checking
 * each would bury the conversion in error paths. Instead every write after
 * a failure does nothing, and tt_out_close says what failed, naming the
 * file: "cannot write out.json: No space left on device".
 */
#ifndef TRACETOP_OUT_H
#define TRACETOP_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "error.h"

typedef struct tt_out {
    FILE *f;
    char *path;
    int error; /* errno of the first failure, 0 while none */
} tt_out;

/* Creates (or truncates) the file at path. */
int tt_out_open(tt_out *o, const char *path, tt_error *err);

/* Keeps errno as the file's error, unless an earlier one is kept. */
void tt_out_failed(tt_out *o);

static inline void tt_out_write(tt_out *o, const void *bytes, size_t len)
{
    if (len && fwrite(bytes, 1, len, o->f) != len) tt_out_failed(o);
}

static inline void tt_out_byte(tt_out *o, uint8_t b)
{
    if (putc(b, o->f) == EOF) tt_out_failed(o);
}

static inline void tt_out_str(tt_out *o, const char *s) { tt_out_write(o, s, strlen(s)); }

void tt_out_printf(tt_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A JSON string literal of len bytes, quotes included, handed to emit in
 * pieces; bytes that are not valid UTF-8 become U+FFFD, so the output stays
 * valid JSON whatever a name holds. */
void tt_json_string(const char *s, size_t len, void (*emit)(void *ctx, const char *bytes, size_t n), void *ctx);

/* tt_json_string into the file; the _n form for strings without a NUL. */
void tt_out_json_string_n(tt_out *o, const char *s, size_t len);
static inline void tt_out_json_string(tt_out *o, const char *s) { tt_out_json_string_n(o, s, strlen(s)); }

/* A JSON number for a double (null for NaN and infinities, which JSON lacks). */
void tt_out_json_double(tt_out *o, double v);

/* ns as microseconds with three decimals: "1234.567". */
void tt_out_micros(tt_out *o, uint64_t ns);

/* Bytes written so far. */
uint64_t tt_out_size(tt_out *o);

/* Flushes and closes: 0, or -1 with the first write error in err. On
 * failure the partial file is removed. */
int tt_out_close(tt_out *o, tt_error *err);

/* Closes and removes the file: the conversion failed elsewhere. */
void tt_out_discard(tt_out *o);

#endif

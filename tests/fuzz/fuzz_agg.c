/* fuzz_agg.c -- `tracetop top`'s decoder and aggregator (agg.h) on a
 * fuzzed trace (fuzz.h): the definitions of defs.tts, decoded, as the
 * channel's definitions log, in two steps as a channel publishes them;
 * every chunk of each stream file as a slice of its thread, whole or in
 * two parts, with the spans and samples kept in a sink as the live viewer
 * keeps them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agg.h"
#include "format.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct log {
    uint8_t *data;
    size_t len;
} log;

static void add_defs(void *ctx, const void *header, const uint8_t *payload)
{
    log *l = ctx;
    const struct tt_chunk_header *h = header;
    uint8_t *grown = realloc(l->data, l->len + h->raw_size + 1);
    if (!grown) abort();
    memcpy(grown + l->len, payload, h->raw_size);
    l->data = grown;
    l->len += h->raw_size;
}

typedef struct feed {
    tt_agg_process *p;
    uint32_t stream;
} feed;

static void add_slice(void *ctx, const void *header, const uint8_t *payload)
{
    feed *f = ctx;
    const struct tt_chunk_header *h = header;
    const char *why;
    /* Cut where the fuzzer says (the chunk's seq is its choice), so that
     * a record may straddle two slices. */
    uint32_t cut = h->raw_size ? h->seq % (h->raw_size + 1) : 0;
    tt_live_slice first = {
        .stream = f->stream, .seq = h->seq, .offset = 0, .len = cut, .base_ticks = h->base_ticks, .data = payload};
    tt_live_slice second = {.stream = f->stream,
                            .seq = h->seq,
                            .offset = cut,
                            .len = h->raw_size - cut,
                            .flags = h->flags & TT_CHUNK_PARTIAL ? 0 : TT_LIVE_END,
                            .base_ticks = h->base_ticks,
                            .data = payload + cut};
    if (cut && tt_agg_slice(f->p, &first, &why) != 0) return;
    tt_agg_slice(f->p, &second, &why);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_part parts[FUZZ_MAX_FILES];
    size_t n = fuzz_split(data, size, parts);
    log defs = {0};
    fuzz_chunks(&parts[0], add_defs, &defs);
    tt_functions functions = {0};
    tt_agg_sink sink = {.min_ticks = 1, .limit = 256};
    tt_agg_process p;
    tt_agg_init(&p, &functions);
    p.sink = &sink;
    const char *why;
    p.id_bound = defs.len / 2;
    int ok = tt_agg_defs(&p, defs.data, defs.len / 2, &why) == 0;
    p.id_bound = defs.len;
    if (ok && tt_agg_defs(&p, defs.data, defs.len, &why) == 0) {
        for (size_t i = 1; i < n; i++) {
            feed f = {&p, (uint32_t)(i - 1)};
            fuzz_chunks(&parts[i], add_slice, &f);
            if (i == n / 2 + 1) tt_agg_reset(&p);
        }

        for (uint32_t s = 0; s < p.string_count; s++) fuzz_sink += strlen(tt_agg_string(&p, s));
    }
    tt_agg_free(&p);
    tt_agg_sink_free(&sink);
    tt_functions_free(&functions);
    free(defs.data);
    return 0;
}

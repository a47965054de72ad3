/* registry.h -- the definitions of one process: strings and regions.
 *
 * Ids are dense from 0 and live as long as the process, so a hook may cache
 * a region id wherever CPython lets it (a code object's co_extra slot, a
 * pointer map for C functions) and never look a name up on a call. Each new
 * definition is handed to a sink (the running session's defs stream); a new
 * session replays all of them, so its trace is complete on its own.
 *
 * Not thread-safe: callers serialise (in the extension, the GIL).
 */
#ifndef TRACETOP_REGISTRY_H
#define TRACETOP_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#define TT_NO_ID UINT32_MAX

/* Names and file names longer than this are cut: the defs stream carries
 * each in one chunk. */
#define TT_STRING_MAX 4096u

typedef void (*tt_def_sink)(void *ctx, const uint8_t *record, size_t len);

typedef struct tt_region_def {
    uint32_t name, file, line;
    uint8_t kind;
} tt_region_def;

typedef struct tt_registry {
    char **strings;
    uint32_t *string_lens;
    uint32_t string_count, string_cap;
    uint32_t *index; /* open-addressing hash of string ids, TT_NO_ID = empty */
    uint32_t index_mask;
    uint32_t *region_of_string; /* named regions: name string id -> region id */

    tt_region_def *regions;
    uint32_t region_count, region_cap;

    tt_def_sink sink;
    void *sink_ctx;
} tt_registry;

int tt_registry_init(tt_registry *r);
void tt_registry_free(tt_registry *r);

/* Sends every definition made from now on to sink (NULL: keep them only). */
void tt_registry_set_sink(tt_registry *r, tt_def_sink sink, void *ctx);

/* Sends every definition made so far to the sink, in id order. */
void tt_registry_replay(const tt_registry *r);

/* The id of a string, defining it on first sight; TT_NO_ID when out of memory. */
uint32_t tt_registry_string(tt_registry *r, const char *s, size_t len);

/* A new region; TT_NO_ID when out of memory. */
uint32_t tt_registry_region(tt_registry *r, uint32_t name, uint32_t file, uint32_t line, uint8_t kind);

/* The region named `name` (a string id), defined on first use with the
 * given file, line and kind; for regions known only by their name. */
uint32_t tt_registry_named_region(tt_registry *r, uint32_t name, uint32_t file, uint32_t line, uint8_t kind);

#endif

/* registry.c -- interned strings and regions, and their definition records. */
#include "registry.h"

#include <stdlib.h>
#include <string.h>

#include "format.h"

static uint32_t hash_bytes(const char *s, size_t len)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < len; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

int tt_registry_init(tt_registry *r)
{
    memset(r, 0, sizeof *r);
    r->index_mask = 1023;
    r->index = malloc((r->index_mask + 1) * sizeof *r->index);
    if (!r->index) return -1;
    memset(r->index, 0xff, (r->index_mask + 1) * sizeof *r->index);
    return 0;
}

void tt_registry_free(tt_registry *r)
{
    for (uint32_t i = 0; i < r->string_count; i++) free(r->strings[i]);
    free(r->strings);
    free(r->string_lens);
    free(r->index);
    free(r->region_of_string);
    free(r->regions);
    memset(r, 0, sizeof *r);
}

void tt_registry_set_sink(tt_registry *r, tt_def_sink sink, void *ctx)
{
    r->sink = sink;
    r->sink_ctx = ctx;
}

static void emit_string(const tt_registry *r, uint32_t id)
{
    uint8_t rec[1 + 10 + 10 + TT_STRING_MAX], *p = rec;
    *p++ = TT_DEF_STRING;
    p = tt_put_varint(p, id);
    p = tt_put_varint(p, r->string_lens[id]);
    memcpy(p, r->strings[id], r->string_lens[id]);
    r->sink(r->sink_ctx, rec, (size_t)(p - rec) + r->string_lens[id]);
}

static void emit_region(const tt_registry *r, uint32_t id)
{
    const tt_region_def *g = &r->regions[id];
    uint8_t rec[TT_RECORD_MAX_FIXED + 10], *p = rec;
    *p++ = TT_DEF_REGION;
    p = tt_put_varint(p, id);
    p = tt_put_varint(p, g->name);
    p = tt_put_varint(p, g->file);
    p = tt_put_varint(p, g->line);
    *p++ = g->kind;
    r->sink(r->sink_ctx, rec, (size_t)(p - rec));
}

void tt_registry_replay(const tt_registry *r)
{
    if (!r->sink) return;
    for (uint32_t i = 0; i < r->string_count; i++) emit_string(r, i);
    for (uint32_t i = 0; i < r->region_count; i++) emit_region(r, i);
}

static int grow_index(tt_registry *r)
{
    uint32_t mask = r->index_mask * 2 + 1;
    uint32_t *index = malloc(((size_t)mask + 1) * sizeof *index);
    if (!index) return -1;
    memset(index, 0xff, ((size_t)mask + 1) * sizeof *index);
    for (uint32_t id = 0; id < r->string_count; id++) {
        uint32_t i = hash_bytes(r->strings[id], r->string_lens[id]) & mask;
        while (index[i] != TT_NO_ID) i = (i + 1) & mask;
        index[i] = id;
    }
    free(r->index);
    r->index = index;
    r->index_mask = mask;
    return 0;
}

static int grow_strings(tt_registry *r)
{
    uint32_t cap = r->string_cap ? r->string_cap * 2 : 256;
    char **strings = realloc(r->strings, cap * sizeof *strings);
    if (!strings) return -1;
    r->strings = strings;
    uint32_t *lens = realloc(r->string_lens, cap * sizeof *lens);
    if (!lens) return -1;
    r->string_lens = lens;
    uint32_t *regions = realloc(r->region_of_string, cap * sizeof *regions);
    if (!regions) return -1;
    r->region_of_string = regions;
    r->string_cap = cap;
    return 0;
}

uint32_t tt_registry_string(tt_registry *r, const char *s, size_t len)
{
    if (len > TT_STRING_MAX) len = TT_STRING_MAX;
    uint32_t i = hash_bytes(s, len) & r->index_mask;
    for (; r->index[i] != TT_NO_ID; i = (i + 1) & r->index_mask) {
        uint32_t id = r->index[i];
        if (r->string_lens[id] == len && memcmp(r->strings[id], s, len) == 0) return id;
    }
    if (r->string_count == r->string_cap && grow_strings(r) < 0) return TT_NO_ID;
    char *copy = malloc(len + 1);
    if (!copy) return TT_NO_ID;
    memcpy(copy, s, len);
    copy[len] = '\0';
    uint32_t id = r->string_count++;
    r->strings[id] = copy;
    r->string_lens[id] = (uint32_t)len;
    r->region_of_string[id] = TT_NO_ID;
    r->index[i] = id;
    if (r->string_count * 2 > r->index_mask + 1) grow_index(r); /* a failure only slows lookups */
    if (r->sink) emit_string(r, id);
    return id;
}

uint32_t tt_registry_region(tt_registry *r, uint32_t name, uint32_t file, uint32_t line, uint8_t kind)
{
    if (r->region_count == r->region_cap) {
        uint32_t cap = r->region_cap ? r->region_cap * 2 : 256;
        tt_region_def *regions = realloc(r->regions, cap * sizeof *regions);
        if (!regions) return TT_NO_ID;
        r->regions = regions;
        r->region_cap = cap;
    }
    uint32_t id = r->region_count++;
    r->regions[id] = (tt_region_def){.name = name, .file = file, .line = line, .kind = kind};
    if (r->sink) emit_region(r, id);
    return id;
}

uint32_t tt_registry_named_region(tt_registry *r, uint32_t name, uint32_t file, uint32_t line, uint8_t kind)
{
    if (name >= r->string_count) return TT_NO_ID;
    if (r->region_of_string[name] == TT_NO_ID)
        r->region_of_string[name] = tt_registry_region(r, name, file, line, kind);
    return r->region_of_string[name];
}

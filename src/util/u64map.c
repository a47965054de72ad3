/* u64map.c -- the general 64-bit map (see u64map.h). */
#include "u64map.h"

#include <stdlib.h>

/* murmur3's finalizer: keys are often small ids or pairs of them, whose
 * low bits alone would crowd a few slots. */
static size_t hash(uint64_t key)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return (size_t)key;
}

static size_t probe(const tt_u64map *m, uint64_t key)
{
    size_t i = hash(key) & m->mask;
    while (m->full[i] && m->slots[i].key != key) i = (i + 1) & m->mask;
    return i;
}

static int grow(tt_u64map *m)
{
    size_t size = m->slots ? 2 * (m->mask + 1) : 64;
    tt_u64map grown = {calloc(size, sizeof *grown.slots), calloc(size, 1), size - 1, m->count};
    if (!grown.slots || !grown.full) {
        free(grown.slots);
        free(grown.full);
        return -1;
    }
    for (size_t i = 0; m->slots && i <= m->mask; i++) {
        if (!m->full[i]) continue;
        size_t j = probe(&grown, m->slots[i].key);
        grown.slots[j] = m->slots[i];
        grown.full[j] = 1;
    }
    tt_u64map_free(m);
    *m = grown;
    return 0;
}

uint64_t *tt_u64map_slot(tt_u64map *m, uint64_t key, int *fresh)
{
    /* Grown only for a new key, so that a key found moves nothing (the
     * values' pointers stay valid, u64map.h). */
    size_t i = m->slots ? probe(m, key) : 0;
    *fresh = !m->slots || !m->full[i];
    if (!*fresh) return &m->slots[i].value;
    if (2 * (m->count + 1) > (m->slots ? m->mask + 1 : 0)) {
        if (grow(m) != 0) return NULL;
        i = probe(m, key);
    }
    m->slots[i] = (tt_u64map_entry){key, 0};
    m->full[i] = 1;
    m->count++;
    return &m->slots[i].value;
}

uint64_t *tt_u64map_find(const tt_u64map *m, uint64_t key)
{
    if (!m->slots) return NULL;
    size_t i = probe(m, key);
    return m->full[i] ? &m->slots[i].value : NULL;
}

int tt_u64map_next(const tt_u64map *m, size_t *at, uint64_t *key, uint64_t *value)
{
    for (; m->slots && *at <= m->mask; ++*at) {
        if (!m->full[*at]) continue;
        *key = m->slots[*at].key;
        *value = m->slots[*at].value;
        ++*at;
        return 1;
    }
    return 0;
}

void tt_u64map_free(tt_u64map *m)
{
    free(m->slots);
    free(m->full);
    *m = (tt_u64map){0};
}

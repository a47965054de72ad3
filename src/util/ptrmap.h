/* ptrmap.h -- a map from pointers to 32-bit values, for the hot path.
 *
 * Used where CPython gives no slot to cache a region id in (C functions are
 * known by their PyMethodDef). A lookup is one multiply, one shift and
 * almost always one compare: open addressing with linear probing, kept at
 * most half full. Not thread-safe: callers serialise (the GIL).
 */
#ifndef TRACETOP_PTRMAP_H
#define TRACETOP_PTRMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct tt_ptrmap_slot {
    const void *key;
    uint32_t value;
} tt_ptrmap_slot;

typedef struct tt_ptrmap {
    tt_ptrmap_slot *slots;
    size_t mask; /* capacity - 1; capacity is a power of two */
    size_t count;
    unsigned shift;
} tt_ptrmap;

int tt_ptrmap_init(tt_ptrmap *m);
void tt_ptrmap_free(tt_ptrmap *m);

/* Stores key -> value (replacing). 0, or -1 when out of memory. */
int tt_ptrmap_put(tt_ptrmap *m, const void *key, uint32_t value);

/* The same, and 1 with *old set when key was there already. */
int tt_ptrmap_replace(tt_ptrmap *m, const void *key, uint32_t value, uint32_t *old);

/* Removes key: 1 with *value set to what it mapped to, or 0 when absent. */
int tt_ptrmap_remove(tt_ptrmap *m, const void *key, uint32_t *value);

/* Removes every key; the capacity stays. */
void tt_ptrmap_clear(tt_ptrmap *m);

static inline size_t tt_ptrmap_hash(const tt_ptrmap *m, const void *key)
{
    return (size_t)(((uint64_t)(uintptr_t)key * 0x9e3779b97f4a7c15ull) >> m->shift);
}

/* 1 with *value set when key is present, else 0. */
static inline int tt_ptrmap_get(const tt_ptrmap *m, const void *key, uint32_t *value)
{
    for (size_t i = tt_ptrmap_hash(m, key);; i = (i + 1) & m->mask) {
        const tt_ptrmap_slot *s = &m->slots[i];
        if (s->key == key) {
            *value = s->value;
            return 1;
        }
        if (!s->key) return 0;
    }
}

#endif

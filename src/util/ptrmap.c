/* ptrmap.c -- growth of the pointer map. */
#include "ptrmap.h"

#include <stdlib.h>
#include <string.h>

static int alloc_slots(tt_ptrmap *m, unsigned bits)
{
    m->slots = calloc((size_t)1 << bits, sizeof *m->slots);
    if (!m->slots) return -1;
    m->mask = ((size_t)1 << bits) - 1;
    m->shift = 64 - bits;
    m->count = 0;
    return 0;
}

int tt_ptrmap_init(tt_ptrmap *m) { return alloc_slots(m, 10); }

void tt_ptrmap_free(tt_ptrmap *m)
{
    free(m->slots);
    m->slots = NULL;
}

/* 1 with *old set when key was there. */
static int insert(tt_ptrmap *m, const void *key, uint32_t value, uint32_t *old)
{
    size_t i = tt_ptrmap_hash(m, key);
    while (m->slots[i].key && m->slots[i].key != key) i = (i + 1) & m->mask;
    int was = m->slots[i].key != NULL;
    if (was)
        *old = m->slots[i].value;
    else
        m->count++;
    m->slots[i].key = key;
    m->slots[i].value = value;
    return was;
}

int tt_ptrmap_put(tt_ptrmap *m, const void *key, uint32_t value)
{
    uint32_t old;
    return tt_ptrmap_replace(m, key, value, &old) < 0 ? -1 : 0;
}

int tt_ptrmap_replace(tt_ptrmap *m, const void *key, uint32_t value, uint32_t *old)
{
    if ((m->count + 1) * 2 > m->mask + 1) {
        tt_ptrmap old = *m;
        if (alloc_slots(m, 64 - old.shift + 1) < 0) {
            *m = old;
            return -1;
        }
        uint32_t unused;
        for (size_t i = 0; i <= old.mask; i++)
            if (old.slots[i].key) insert(m, old.slots[i].key, old.slots[i].value, &unused);
        free(old.slots);
    }
    return insert(m, key, value, old);
}

/* Linear probing without tombstones: the keys after the removed one, up to
 * the next empty slot, move back when their home slot allows it, so every
 * lookup still finds its key before an empty slot. */
int tt_ptrmap_remove(tt_ptrmap *m, const void *key, uint32_t *value)
{
    size_t i = tt_ptrmap_hash(m, key);
    while (m->slots[i].key != key) {
        if (!m->slots[i].key) return 0;
        i = (i + 1) & m->mask;
    }
    *value = m->slots[i].value;
    for (size_t j = (i + 1) & m->mask; m->slots[j].key; j = (j + 1) & m->mask) {
        size_t home = tt_ptrmap_hash(m, m->slots[j].key);
        /* j's key may fill the hole at i unless its home lies in (i, j]. */
        if (((j - home) & m->mask) >= ((j - i) & m->mask)) {
            m->slots[i] = m->slots[j];
            i = j;
        }
    }
    m->slots[i].key = NULL;
    m->count--;
    return 1;
}

void tt_ptrmap_clear(tt_ptrmap *m)
{
    memset(m->slots, 0, (m->mask + 1) * sizeof *m->slots);
    m->count = 0;
}

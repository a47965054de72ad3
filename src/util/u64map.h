/* u64map.h -- a map from 64-bit keys to 64-bit values, for what reads a
 * trace (call trees of the exporters, per-lane sums, ids of definitions).
 *
 * The hot path has its own map (ptrmap.h: pointer keys, 32-bit values,
 * tuned for one compare); this one is general: any 64-bit key (pairs of
 * 32-bit ids with tt_u64_pair), values made 0 on first use. Open
 * addressing with linear probing, kept at most half full. Not thread-safe.
 * A zeroed tt_u64map is an empty map.
 */
#ifndef TRACETOP_U64MAP_H
#define TRACETOP_U64MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct tt_u64map_entry {
    uint64_t key;
    uint64_t value;
} tt_u64map_entry;

typedef struct tt_u64map {
    tt_u64map_entry *slots;
    uint8_t *full; /* per slot: 1 when it holds a key (any key is valid, so none can mark empty) */
    size_t mask;   /* capacity - 1; capacity is a power of two */
    size_t count;
} tt_u64map;

static inline uint64_t tt_u64_pair(uint32_t high, uint32_t low) { return (uint64_t)high << 32 | low; }

/* The value of key, made 0 with *fresh = 1 when key is new (*fresh = 0
 * otherwise); NULL when memory runs out. The pointer stays valid until
 * the next new key. */
uint64_t *tt_u64map_slot(tt_u64map *m, uint64_t key, int *fresh);

/* The value of key, or NULL when it is absent. */
uint64_t *tt_u64map_find(const tt_u64map *m, uint64_t key);

/* Walks the entries in no particular order: start with *at = 0; 1 with
 * *key and *value set, 0 past the last. */
int tt_u64map_next(const tt_u64map *m, size_t *at, uint64_t *key, uint64_t *value);

void tt_u64map_free(tt_u64map *m);

#endif

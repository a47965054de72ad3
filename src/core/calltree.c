/* calltree.c -- the slow parts of a thread's call tree (calltree.h): room,
 * lookups of paths not tried inline, and the TREE chunks. */
#include "calltree.h"

#include <stdlib.h>
#include <string.h>

#include "stream.h"

static uint32_t slot_of(const tt_calltree *t, uint32_t parent, uint32_t region)
{
    uint64_t x = (uint64_t)parent << 32 | region;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (uint32_t)x & t->mask;
}

int tt_calltree_init(tt_calltree *t)
{
    memset(t, 0, sizeof *t);
    t->count = 1; /* the root's, made once there is room */
    tt_calltree_reserve(t);
    if (t->lost) return -1;
    t->nodes[0] = (tt_calltree_node){.region = TT_CALLTREE_ROOT};
    t->cur = t->nodes;
    return 0;
}

void tt_calltree_free(tt_calltree *t)
{
    free(t->nodes);
    free(t->slots);
    t->cur = t->nodes = NULL;
    t->slots = NULL;
    t->lost = 1;
}

void tt_calltree_reserve(tt_calltree *t)
{
    if (t->lost || t->closed || t->count + TT_CALLTREE_RESERVE <= t->cap) return;
    if (t->count > UINT32_MAX / sizeof(tt_calltree_node) / 2 - TT_CALLTREE_RESERVE) { /* offsets are u32 */
        t->lost = 1;
        return;
    }
    uint32_t cap = t->cap * 2 > t->count + TT_CALLTREE_RESERVE ? t->cap * 2 : t->count + TT_CALLTREE_RESERVE;
    /* Half full at most, as the tree grows by chunks; never full within a
     * chunk, whatever it adds. Pages the tree never reaches are never
     * touched: the room costs address space, not memory. */
    uint32_t size = 1;
    while (size < 2 * t->count || size <= cap) size *= 2;
    size_t cur = (size_t)(t->cur - t->nodes);
    tt_calltree_node *nodes = realloc(t->nodes, (size_t)cap * sizeof *nodes);
    uint32_t *slots = calloc(size, sizeof *slots);
    if (nodes) { /* the old block is gone once realloc succeeds */
        t->nodes = nodes;
        t->cur = nodes + cur;
    }
    if (!nodes || !slots) {
        free(slots);
        t->lost = 1;
        return;
    }
    free(t->slots);
    t->slots = slots;
    t->mask = size - 1;
    t->cap = cap;
    for (uint32_t n = 1; n < t->count; n++) {
        uint32_t j = slot_of(t, t->nodes[n].parent, t->nodes[n].region);
        while (slots[j]) j = (j + 1) & t->mask;
        slots[j] = n;
    }
}

tt_calltree_node *tt_calltree_child(tt_calltree *t, uint32_t region)
{
    if (t->lost) return t->nodes;
    tt_calltree_node *nodes = t->nodes;
    uint32_t parent = (uint32_t)((char *)t->cur - (char *)nodes), j = slot_of(t, parent, region), n;
    for (; (n = t->slots[j]) != 0; j = (j + 1) & t->mask)
        if (nodes[n].parent == parent && nodes[n].region == region) goto found;
    if (t->count == t->cap) { /* only when memory ran out making room */
        t->lost = 1;
        return nodes;
    }
    n = t->count++;
    t->slots[j] = n;
    /* In the ring of parent's children after the one entered last, so that
     * calls made in turn follow each other there. */
    uint32_t offset = n * (uint32_t)sizeof *nodes, last = t->cur->last;
    nodes[n] = (tt_calltree_node){.region = region, .parent = parent, .next = last ? tt_calltree_at(t, last)->next : offset};
    if (last) tt_calltree_at(t, last)->next = offset;
found:
    t->cur->last = n * (uint32_t)sizeof *nodes;
    return &nodes[n];
}

void tt_calltree_gc_done(tt_calltree *t, unsigned generation, uint64_t ticks, uint64_t collected,
                         uint64_t uncollectable)
{
    if (generation >= TT_CALLTREE_GENERATIONS) return;
    tt_calltree_gc *g = &t->gc[generation];
    g->collections++;
    g->ticks += ticks;
    if (ticks > g->longest) g->longest = ticks;
    g->collected += collected;
    g->uncollectable += uncollectable;
}

/* Where `need` more bytes of tree go: in the current chunk when it is a
 * TREE chunk with that room, else in a fresh one. */
static uint8_t *tree_room(tt_stream *s, uint32_t need, tt_chunk **out)
{
    tt_chunk *c = atomic_load_explicit(&s->chunk, memory_order_relaxed);
    uint32_t used = atomic_load_explicit(&c->used, memory_order_relaxed);
    if (!(c->flags & TT_CHUNK_TREE) || used + need > TT_CHUNK_PAYLOAD_SIZE) {
        c = tt_stream_rotate(s);
        /* Before any byte of it is published (used, release): the writer
         * sees the flags with the bytes. */
        c->flags = TT_CHUNK_TREE | TT_CHUNK_TREE_COLUMNS;
        used = 0;
    }
    *out = c;
    return c->data + used;
}

static void tree_commit(tt_chunk *c, const uint8_t *end)
{
    atomic_store_explicit(&c->used, (uint32_t)(end - c->data), memory_order_release);
}

static uint32_t varint_size(uint64_t v)
{
    uint32_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* The bytes of node n's four fields (format.h: TREE_NODES). */
static uint32_t node_size(const tt_calltree *t, uint32_t n)
{
    const tt_calltree_node *node = &t->nodes[n];
    return varint_size(n - node->parent / sizeof *node) + varint_size(node->region) + varint_size(node->visits) +
           varint_size(node->inclusive);
}

/* TREE_NODES' tag and count, at most. */
#define BLOCK_HEAD (1u + 5u)

/* Nodes [first, first + count) as one TREE_NODES block at p: field by
 * field, each a column, which zstd takes to less than the records would. */
static uint8_t *put_block(const tt_calltree *t, uint8_t *p, uint32_t first, uint32_t count)
{
    const tt_calltree_node *nodes = t->nodes;
    *p++ = TT_DEF_TREE_NODE;
    p = tt_put_varint(p, count);
    for (uint32_t n = first; n < first + count; n++) p = tt_put_varint(p, n - nodes[n].parent / sizeof *nodes);
    for (uint32_t n = first; n < first + count; n++) p = tt_put_varint(p, nodes[n].region);
    for (uint32_t n = first; n < first + count; n++) p = tt_put_varint(p, nodes[n].visits);
    for (uint32_t n = first; n < first + count; n++) p = tt_put_varint(p, nodes[n].inclusive);
    return p;
}

void tt_calltree_write(tt_stream *s)
{
    tt_calltree *t = &s->tree;
    t->closed = 1;
    if (t->lost) return;
    tt_chunk *c;
    uint8_t *p = tree_room(s, 1 + 10 * (4 + 5 * TT_CALLTREE_GENERATIONS), &c);
    *p++ = TT_DEF_TREE;
    p = tt_put_varint(p, t->count - 1);
    p = tt_put_varint(p, s->events);
    p = tt_put_varint(p, s->last_ticks);
    p = tt_put_varint(p, t->reads);
    for (unsigned g = 0; g < TT_CALLTREE_GENERATIONS; g++) {
        p = tt_put_varint(p, t->gc[g].collections);
        p = tt_put_varint(p, t->gc[g].ticks);
        p = tt_put_varint(p, t->gc[g].longest);
        p = tt_put_varint(p, t->gc[g].collected);
        p = tt_put_varint(p, t->gc[g].uncollectable);
    }
    tree_commit(c, p);
    /* As many nodes per block as the chunk has room for, a fresh chunk
     * when not one more fits. */
    for (uint32_t first = 1; first < t->count;) {
        uint32_t used = atomic_load_explicit(&c->used, memory_order_relaxed);
        uint32_t room = TT_CHUNK_PAYLOAD_SIZE - used, size = BLOCK_HEAD, count = 0;
        for (uint32_t next; first + count < t->count && size + (next = node_size(t, first + count)) <= room; count++)
            size += next;
        if (count == 0) { /* a fresh chunk holds any node: 4 fields of 10 bytes at most */
            tree_room(s, TT_CHUNK_PAYLOAD_SIZE, &c);
            continue;
        }
        tree_commit(c, put_block(t, c->data + used, first, count));
        first += count;
    }
}

/* calltree.h -- a thread's call tree, kept by the hook as it records, so
 * that profile.txt needs no read-back of the calls at the end of a run.
 *
 * Contract:
 *  - A stream's tree follows exactly the ENTER and LEAVE records the stream
 *    writes (stream.h calls tt_calltree_enter / tt_calltree_leave with the
 *    ticks each record carries, the stream's last_ticks after it), so it is
 *    the call-path tree a reader would build from the stream (profile.h):
 *    node 0 is the root (no region); every other node is a call path, its
 *    parent's plus one region, numbered in the order of its first call, so
 *    a parent's number is below its children's.
 *  - Per node: visits, and the inclusive time in ticks: the sum over its
 *    calls of LEAVE ticks - ENTER ticks, kept as -ENTER +LEAVE modulo 2^64,
 *    exact once every call is closed (tt_stream_close closes them). Ticks,
 *    not ns: the clock's calibration is known only at the end; a reader
 *    converts each node's sum once (tt_process_duration).
 *  - ENTER tries the child of the current node entered last, then the
 *    sibling after it (siblings form a ring in the order they were first
 *    called, so calls made in the same order as before find theirs at once),
 *    then a (parent, region) hash table, and creates the node. The hooks'
 *    paths without a call (ext.h) take the first two tries inline and record
 *    a call that needs the rest out of line (tt_stream_enter_now).
 *  - The hot path allocates nothing and takes no lock: room for
 *    TT_CALLTREE_RESERVE more nodes, as many as one chunk has ENTER records,
 *    is made as the stream takes each chunk (tt_calltree_reserve, once per
 *    TT_CHUNK_PAYLOAD_SIZE bytes of records, by the stream's own thread), so
 *    a chunk's calls never find the tree full. Should memory run out, the
 *    tree is given up (`lost`): nothing else changes, the stream is written
 *    without a tree and read back at the end.
 *  - After STREAM_END, tt_calltree_write puts the tree in TREE chunks
 *    (format.h) behind the stream's records, with the stream's record count,
 *    its last ticks, its collections (tt_calltree_gc) and how many of its
 *    records a profile must still read from the data (`reads`: OBJECTS,
 *    MPI messages and collectives, TASK_RESUME).
 */
#ifndef TRACETOP_CALLTREE_H
#define TRACETOP_CALLTREE_H

#include <stdint.h>

#include "format.h"

/* Nodes one chunk can add: its ENTER records, 2 bytes each at least. */
#define TT_CALLTREE_RESERVE (TT_CHUNK_PAYLOAD_SIZE / 2u)
/* The root's region, which no call's is. */
#define TT_CALLTREE_ROOT UINT32_MAX
#define TT_CALLTREE_GENERATIONS 3

/* Links are byte offsets from the first node (node k's is k times the
 * size): the hooks follow one with an add, no multiply. visits and
 * inclusive apart: side by side, the compiler updates them as a vector, at
 * several times the cost. */
typedef struct tt_calltree_node {
    uint64_t inclusive; /* ticks, modulo 2^64 while calls are open */
    uint32_t region;
    uint32_t parent; /* the root's: itself */
    uint32_t last;   /* the child entered last; the root (0): none yet */
    uint32_t next;   /* the next sibling, in a ring */
    uint64_t visits;
} tt_calltree_node;

typedef struct tt_calltree_gc {
    uint64_t collections, ticks, longest, collected, uncollectable;
} tt_calltree_gc;

typedef struct tt_calltree {
    tt_calltree_node *cur;   /* the innermost open call's node; the root: none open */
    tt_calltree_node *nodes; /* count used of cap */
    uint32_t count, cap;
    uint32_t *slots;         /* node numbers by hash of (parent's offset, region); 0: empty */
    uint32_t mask;           /* slots - 1; at least twice cap slots */
    int lost;                /* out of memory once: no tree is written */
    int closed;              /* written: no more room made */
    uint64_t reads;
    tt_calltree_gc gc[TT_CALLTREE_GENERATIONS];
} tt_calltree;

/* A tree with the root alone and room for a chunk's calls: 0, or -1 when
 * memory runs out (nothing to free then). */
int tt_calltree_init(tt_calltree *t);
void tt_calltree_free(tt_calltree *t);

/* Room for TT_CALLTREE_RESERVE more nodes (see above). */
void tt_calltree_reserve(tt_calltree *t);

/* The node at byte offset `offset` (a link). */
static inline tt_calltree_node *tt_calltree_at(const tt_calltree *t, uint32_t offset)
{
    return (tt_calltree_node *)((char *)t->nodes + offset);
}

/* The child of the current node for `region`, found or made; the root
 * (harmless to count in) when the tree is lost. */
tt_calltree_node *tt_calltree_child(tt_calltree *t, uint32_t region);

/* The child of the current node tried first: the one entered last. Its
 * region is to be compared with the call's. */
static inline tt_calltree_node *tt_calltree_last_child(const tt_calltree *t) { return tt_calltree_at(t, t->cur->last); }

/* When the child entered last (`last`) is not the call's: the sibling after
 * it when it is, else NULL. */
static inline tt_calltree_node *tt_calltree_next_child(tt_calltree *t, const tt_calltree_node *last, uint32_t region)
{
    uint32_t offset = last->next;
    tt_calltree_node *child = tt_calltree_at(t, offset);
    if (child->region != region) return NULL;
    t->cur->last = offset;
    return child;
}

/* A call of node `child` (of the current node) entered at `ticks`. */
static inline void tt_calltree_enter_node(tt_calltree *t, tt_calltree_node *child, uint64_t ticks)
{
    child->visits++;
    child->inclusive -= ticks;
    t->cur = child;
}

static inline void tt_calltree_enter(tt_calltree *t, uint32_t region, uint64_t ticks)
{
    tt_calltree_node *child = tt_calltree_last_child(t);
    if (__builtin_expect(child->region != region, 0) && !(child = tt_calltree_next_child(t, child, region)))
        child = tt_calltree_child(t, region);
    tt_calltree_enter_node(t, child, ticks);
}

/* The innermost call returned at `ticks`. */
static inline void tt_calltree_leave(tt_calltree *t, uint64_t ticks)
{
    tt_calltree_node *n = t->cur;
    n->inclusive += ticks;
    t->cur = tt_calltree_at(t, n->parent);
}

/* A collection of `generation` that lasted `ticks`, with its counts. */
void tt_calltree_gc_done(tt_calltree *t, unsigned generation, uint64_t ticks, uint64_t collected,
                         uint64_t uncollectable);

struct tt_stream;
/* Writes the tree of stream s, just closed with STREAM_END, as TREE chunks
 * (none when it was lost), and marks it closed. */
void tt_calltree_write(struct tt_stream *s);

#endif

/* calltree.h -- a thread's call tree, kept by the hook as it records, so
 * that profile.txt needs no read-back of the calls at the end of a run.
 *
 * Contract:
 *  - A stream's tree follows exactly the ENTER and LEAVE records the stream
 *    writes (stream.h calls tt_calltree_find, tt_calltree_enter_node and tt_calltree_leave with the
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
 *    sibling it links to, then a (parent, region) hash table, and creates
 *    the node. Siblings link in a ring in the order they were first called,
 *    and a child the table found becomes the one the child entered before it
 *    links to: calls made in the same order as before, or alternating
 *    between two in a loop, find theirs at once. The links only guess. The fast
 *    path (src/ext/fastpath.h: tt_fast_*) takes the first two tries inline and records
 *    a call that needs the rest out of line (tt_stream_enter_now).
 *  - The tree is also the stream's stack of open calls (stream.h): `cur`
 *    and its parent links are the recorded calls open, and each node's
 *    `skipped` counts the calls not recorded open above it (the top of the
 *    stream's stack of those), so that a return tests that one field of the
 *    node it pops. The root's has TT_CALLTREE_ROOT_SKIPPED set besides, so
 *    that a return with no recorded call open fails the same test. A node
 *    is open at most once at a time (its path fixes its depth), and one
 *    not open has `skipped` 0.
 *  - The hot path allocates nothing and takes no lock: room for
 *    TT_CALLTREE_RESERVE more nodes, as many as one chunk has ENTER records,
 *    is made as the stream takes each chunk (tt_calltree_reserve, once per
 *    TT_CHUNK_PAYLOAD_SIZE bytes of records, by the stream's own thread), so
 *    a chunk's calls never find the tree full. Should memory run out, the
 *    tree is given up (`lost`): its nodes stay as they are, but a call can
 *    no longer find its own, so the stream gives up recording calls (its
 *    fast path closed): at its next call, it closes what
 *    is open, and drops every call and return from then on (stream.h); it
 *    is written without a tree and read back at the end.
 *  - After STREAM_END, tt_calltree_write puts the tree in TREE chunks
 *    (format.h) behind the stream's records, with the stream's record count,
 *    its last ticks, its collections (tt_calltree_gc) and how many of its
 *    records a profile must still read from the data (`reads`: those
 *    tt_ev_counted names, OBJECTS and MPI messages sent and collectives,
 *    whose chunks tt_stream_counted flags so that only they are read; 1 for
 *    asyncio steps it could not follow, which has the stream read).
 *  - asyncio tasks (tasklanes.h says what a step is): a step's ENTER comes
 *    out of line (tt_stream_enter_step, after TASK_RESUME), into a node of
 *    its own task: its region field is TT_CALLTREE_STEP | k, k naming the
 *    pair (region, task), so no other call's lookup finds it, and every
 *    node beneath it is the task's. A reader merges such nodes back into
 *    their path. While a step is open, the `last` links of its node's
 *    ancestors are 0, so that the first ENTER after the step's
 *    LEAVE, at whatever depth, looks its node up out of line: the step is
 *    settled there (tt_calltree_child), before that ENTER's record, while
 *    the predictor (format.h) still counts the returns since the last
 *    ENTER: those down to the step's node are the coroutines that await
 *    (the nodes down its `last` links), and the time to the task's next
 *    step is added to them (awaited, suspensions) and to the next step's
 *    node (suspended). Nothing is saved: an open call's parent's last child
 *    is that call, so the links put back are the step's path. The hooks'
 *    paths are unchanged: a step costs its ancestors' links cleared and
 *    put back, and one lookup out of line after it.
 *  - Memory: a task's nodes stay in the tree after it ends, so the tree
 *    follows the steps of the first TT_CALLTREE_TASKS_MAX tasks of a session
 *    alone, and no more once TT_CALLTREE_STEP_NODES nodes were made inside
 *    steps: from then on a step is a plain call of its path (the profile's
 *    tree is the same: a reader merges a step's node into its path) and its
 *    task's times come from the records, read back at the end (`reads`), so
 *    that a program making tasks for days keeps a tree of bounded size.
 */
#ifndef TRACETOP_CALLTREE_H
#define TRACETOP_CALLTREE_H

#include <stdint.h>

#include "format.h"
#include "u64map.h"

/* Nodes one chunk can add: its ENTER records, 2 bytes each at least. */
#define TT_CALLTREE_RESERVE (TT_CHUNK_PAYLOAD_SIZE / 2u)
/* The root's region, which no call's is. */
#define TT_CALLTREE_ROOT UINT32_MAX
#define TT_CALLTREE_GENERATIONS 3
/* The tasks whose steps a tree follows, by id, and the nodes it makes
 * inside steps (above: memory). */
#define TT_CALLTREE_TASKS_MAX 1024u
#define TT_CALLTREE_STEP_NODES 65536u
/* Set in the region field of a step's node (above); calls' regions stay below. */
#define TT_CALLTREE_STEP 0x80000000u
/* Set in the root's `skipped` (above); the counts stay below. */
#define TT_CALLTREE_ROOT_SKIPPED 0x80000000u

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
    uint32_t skipped; /* calls not recorded open above it while open (above) */
} tt_calltree_node;

typedef struct tt_calltree_gc {
    uint64_t collections, ticks, longest, collected, uncollectable;
} tt_calltree_gc;

/* An asyncio step open, or ended and not yet settled. */
typedef struct tt_calltree_step {
    uint32_t node, task; /* its node's offset; its task id */
    uint64_t begin;      /* its ENTER's ticks */
    uint64_t before;     /* its node's inclusive before that ENTER */
} tt_calltree_step;

/* A task of this stream, by id. */
typedef struct tt_calltree_task {
    int stepped;     /* a step of it ended: `end` and `chain` hold */
    uint64_t end;    /* ticks its last step ended */
    uint32_t *chain; /* the nodes its last step's last returns left: offsets */
    size_t chain_len, chain_cap;
    uint32_t key;  /* k + 1 of its last step's pair (region, task): see `keys`; 0: none */
    uint32_t node; /* its last step's node: offset; 0: none */
} tt_calltree_task;

/* What a node adds for the tasks (written with it when not all 0). */
typedef struct tt_calltree_waits {
    uint64_t suspended;            /* a step's node: its task's suspended time before its steps here */
    uint64_t awaited, suspensions; /* a node a step's last returns left: its share of the waits after */
} tt_calltree_waits;

typedef struct tt_calltree {
    tt_calltree_node *cur;   /* the innermost open recorded call's node; the root: none open */
    tt_calltree_node *nodes; /* count used of cap */
    uint32_t count, cap;
    uint32_t *slots; /* node numbers by hash of (parent's offset, region); 0: empty */
    uint32_t mask;   /* slots - 1; at least twice cap slots */
    int lost;        /* out of memory once: no tree is written */
    int closed;      /* written: no more room made */
    uint64_t reads;
    tt_calltree_gc gc[TT_CALLTREE_GENERATIONS];
    /* asyncio steps (above); all zero in a stream without any */
    tt_u64map keys; /* (task, region) -> k + 1 */
    uint32_t *key_region, *key_task, key_count, key_cap;
    tt_calltree_step *open; /* innermost last */
    size_t open_count, open_cap;
    tt_calltree_task *tasks;
    uint32_t task_cap;
    tt_calltree_waits *waits; /* by node number, count of them once any */
    uint32_t waits_cap;
    uint64_t carry;      /* returns since the last ENTER before this chunk (none in it) */
    int carry_unknown;   /* ... not known: a chunk that did not decode */
    int zero_entered;    /* region 0 has a node: a predictor's last of 0 may be its ENTER */
    int steps_lost;      /* given up (memory, an unknown count, too many tasks): read back */
    uint32_t step_nodes; /* nodes made inside steps */
} tt_calltree;

/* A tree with the root alone and room for a chunk's calls: 0, or -1 when
 * memory runs out (nothing to free then). */
int tt_calltree_init(tt_calltree *t);
/* Frees it: it is lost, with nothing open (`cur` a root of its own). */
void tt_calltree_free(tt_calltree *t);

/* Room for TT_CALLTREE_RESERVE more nodes (see above). */
void tt_calltree_reserve(tt_calltree *t);

/* The node at byte offset `offset` (a link). */
static inline tt_calltree_node *tt_calltree_at(const tt_calltree *t, uint32_t offset)
{
    return (tt_calltree_node *)((char *)t->nodes + offset);
}

/* Node n's byte offset: its link. */
static inline uint32_t tt_calltree_offset(const tt_calltree *t, const tt_calltree_node *n)
{
    return (uint32_t)((const char *)n - (const char *)t->nodes);
}

/* The region whose call node n (not the root) is: a step's is its pair's. */
static inline uint32_t tt_calltree_region(const tt_calltree *t, const tt_calltree_node *n)
{
    uint32_t region = n->region;
    return __builtin_expect(region >= TT_CALLTREE_STEP, 0) ? t->key_region[region & ~TT_CALLTREE_STEP] : region;
}

/* The child of the current node for `region`, found or made; the root
 * (harmless to count in) when the tree is lost. Settles the steps that
 * ended first (see above). */
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

/* The node of a call of `region` from the current one, to enter once its
 * record is made (tt_calltree_enter_node). */
static inline tt_calltree_node *tt_calltree_find(tt_calltree *t, uint32_t region)
{
    tt_calltree_node *child = tt_calltree_last_child(t);
    if (__builtin_expect(child->region != region, 0) && !(child = tt_calltree_next_child(t, child, region)))
        child = tt_calltree_child(t, region);
    return child;
}

/* The node of a step of `task` resuming `region`, from the current node
 * (a plain call's when steps are given up); its record is made next. */
tt_calltree_node *tt_calltree_step_find(tt_calltree *t, uint32_t region, uint32_t task);
/* Enters it at `ticks`: the step begins. */
void tt_calltree_step_enter(tt_calltree *t, tt_calltree_node *node, uint32_t task, uint64_t ticks);

/* The stream's predictor is about to be reset (a fresh chunk). */
void tt_calltree_rotated(tt_calltree *t);

/* The innermost call, of the current node n, returned at `ticks`. */
static inline void tt_calltree_leave(tt_calltree *t, tt_calltree_node *n, uint64_t ticks)
{
    n->inclusive += ticks;
    t->cur = tt_calltree_at(t, n->parent);
}

/* The measurement was off for `ticks` while the calls open now were open
 * (format.h: RECORDING_OFF, RECORDING_ON): their inclusive time leaves
 * those ticks out, as a reader's does, which closes them at the switch off
 * and opens them again at the switch on. */
void tt_calltree_gap(tt_calltree *t, uint64_t ticks);

/* A collection of `generation` that lasted `ticks`, with its counts. */
void tt_calltree_gc_done(tt_calltree *t, unsigned generation, uint64_t ticks, uint64_t collected,
                         uint64_t uncollectable);

struct tt_stream;
/* Writes the tree of stream s, just closed with STREAM_END, as TREE chunks
 * (none when it was lost), and marks it closed. */
void tt_calltree_write(struct tt_stream *s);

#endif

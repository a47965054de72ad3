/* calltree.c -- the slow parts of a thread's call tree (calltree.h): room,
 * lookups of paths not tried inline, and the TREE chunks. */
#include "calltree.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "records.h"
#include "stream.h"

/* The returns since the last ENTER record when not known (calltree.h). */
#define UNKNOWN UINT64_MAX

static tt_stream *stream_of(tt_calltree *t) { return (tt_stream *)((char *)t - offsetof(tt_stream, tree)); }

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
    t->nodes[0] = (tt_calltree_node){.region = TT_CALLTREE_ROOT, .skipped = TT_CALLTREE_ROOT_SKIPPED};
    t->cur = t->nodes;
    return 0;
}

/* The current node of a freed tree: a root with nothing open, never written
 * (a lost tree's stream pushes nothing). */
static tt_calltree_node no_calls = {.region = TT_CALLTREE_ROOT, .skipped = TT_CALLTREE_ROOT_SKIPPED};

void tt_calltree_free(tt_calltree *t)
{
    free(t->nodes);
    free(t->slots);
    tt_u64map_free(&t->keys);
    free(t->key_region);
    free(t->key_task);
    free(t->open);
    for (uint32_t i = 0; i < t->task_cap; i++) free(t->tasks[i].chain);
    free(t->tasks);
    free(t->waits);
    t->key_region = t->key_task = NULL;
    t->open = NULL;
    t->tasks = NULL;
    t->waits = NULL;
    t->task_cap = t->open_count = 0;
    t->nodes = NULL;
    t->cur = &no_calls;
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

static void settle(tt_calltree *t);

/* The current node's child at `offset`, found otherwise than by its last
 * link: the child entered last leads to it from now on (calltree.h), so
 * that a loop calling two functions in turn finds each at once the next
 * time. */
static tt_calltree_node *found_child(tt_calltree *t, uint32_t offset)
{
    uint32_t last = t->cur->last;
    if (last && last != offset) tt_calltree_at(t, last)->next = offset;
    t->cur->last = offset;
    return tt_calltree_at(t, offset);
}

tt_calltree_node *tt_calltree_child(tt_calltree *t, uint32_t region)
{
    if (t->lost) return t->nodes;
    /* A step's ancestors have no last child while it is open (a fresh node
     * neither): the first ENTER after its LEAVE comes here. Settled, their
     * links are back, and guess as the hooks' would have. */
    if (t->open_count && !t->cur->last) {
        settle(t);
        tt_calltree_node *guess = tt_calltree_last_child(t);
        if (guess->region == region || (guess = tt_calltree_next_child(t, guess, region))) return guess;
    }
    tt_calltree_node *nodes = t->nodes;
    uint32_t parent = (uint32_t)((char *)t->cur - (char *)nodes), j = slot_of(t, parent, region), n;
    uint32_t last = t->cur->last;
    for (; (n = t->slots[j]) != 0; j = (j + 1) & t->mask)
        if (nodes[n].parent == parent && nodes[n].region == region) return found_child(t, n * (uint32_t)sizeof *nodes);
    if (t->count == t->cap) { /* only when memory ran out making room */
        t->lost = 1;
        return nodes;
    }
    n = t->count++;
    t->step_nodes += t->open_count != 0;
    t->slots[j] = n;
    t->zero_entered |= region == 0;
    /* In the ring of parent's children after the one entered last, so that
     * calls made in turn follow each other there. */
    uint32_t offset = n * (uint32_t)sizeof *nodes;
    nodes[n] = (tt_calltree_node){
        .region = region, .parent = parent, .next = last ? tt_calltree_at(t, last)->next : offset};
    if (last) tt_calltree_at(t, last)->next = offset;
    t->cur->last = offset;
    return &nodes[n];
}

/* ---- asyncio steps (calltree.h) ---- */

/* 1 when the stream's current chunk holds an ENTER record: read back, for
 * the rare predictor whose last is 0 where region 0 has a node (its ENTER
 * leaves the same last as none). -1 when the chunk does not decode. */
static int chunk_has_enter(tt_stream *s)
{
    tt_chunk *c = atomic_load_explicit(&s->chunk, memory_order_relaxed);
    tt_predictor predict = {0};
    tt_records it;
    tt_records_init(&it, c->data, atomic_load_explicit(&c->used, memory_order_relaxed), c->base_ticks, &predict);
    tt_event_record r;
    const char *why;
    int rc;
    while ((rc = tt_records_next_event(&it, &r, &why)) == 1)
        if (r.tag == TT_EV_ENTER) return 1;
    return rc < 0 ? -1 : 0;
}

/* The returns recorded since the last ENTER record, from the predictor the
 * records left (a chunk resets it: `carry` holds the count before, when
 * the chunk has no ENTER); UNKNOWN when that cannot be told. */
static uint64_t returns_since_enter(tt_calltree *t)
{
    tt_stream *s = stream_of(t);
    uint64_t leaves = s->predict.leaves_shifted >> 5;
    if (s->predict.last != 0) return leaves;
    int entered = t->zero_entered ? chunk_has_enter(s) : 0;
    if (entered < 0 || t->carry_unknown) return UNKNOWN;
    return entered ? leaves : t->carry + leaves;
}

void tt_calltree_rotated(tt_calltree *t)
{
    uint64_t returns = returns_since_enter(t);
    t->carry_unknown = returns == UNKNOWN;
    t->carry = t->carry_unknown ? 0 : returns;
}

/* The node of the open step that encloses the innermost one, the root
 * (offset 0) when none does: the links above it are its own to put back. */
static uint32_t enclosing_step(const tt_calltree *t) { return t->open_count > 1 ? t->open[t->open_count - 2].node : 0; }

/* Puts the links of the innermost open step's ancestors back, up to
 * `stop` (enclosing_step): an open call's parent's last child is that call
 * (calltree.h), so they are the step's path, with nothing to save. */
static void restore_links(tt_calltree *t, uint32_t stop)
{
    for (uint32_t a = t->open[t->open_count - 1].node; a != stop && a != 0;) {
        uint32_t parent = tt_calltree_at(t, a)->parent;
        tt_calltree_at(t, parent)->last = a;
        a = parent;
    }
}

/* Steps are followed no further: the stream is read back (reads). What
 * only following them needs is freed; the nodes made stay, their keys'
 * regions and tasks with them. */
static void lose_steps(tt_calltree *t)
{
    for (; t->open_count; t->open_count--) restore_links(t, enclosing_step(t));
    if (!t->steps_lost) t->reads++;
    t->steps_lost = 1;
    tt_u64map_free(&t->keys);
    free(t->open);
    for (uint32_t i = 0; i < t->task_cap; i++) free(t->tasks[i].chain);
    free(t->tasks);
    t->open = NULL;
    t->open_cap = 0;
    t->tasks = NULL;
    t->task_cap = 0;
}

/* arr grown for at least `need` elements of `size` bytes, the new ones
 * zeroed (*cap updated), or NULL when memory runs out (arr unchanged). */
static void *grow_zeroed(void *arr, uint32_t *cap, uint32_t need, size_t size)
{
    size_t grown_cap = *cap;
    if (need > UINT32_MAX / 2) return NULL; /* doubling must keep the capacity a u32 */
    char *grown = tt_grow(arr, &grown_cap, need, size);
    if (!grown) return NULL;
    memset(grown + (size_t)*cap * size, 0, (grown_cap - *cap) * size);
    *cap = (uint32_t)grown_cap;
    return grown;
}

/* Room in `waits` for every node of the tree (a step's and its chain's
 * among them, with no search for the last of those): 0, or -1 out of
 * memory. */
static int waits_cover(tt_calltree *t)
{
    uint32_t need = t->count;
    if (need <= t->waits_cap) return 0;
    tt_calltree_waits *waits = grow_zeroed(t->waits, &t->waits_cap, need, sizeof *waits);
    if (!waits) return -1;
    t->waits = waits;
    return 0;
}

static tt_calltree_waits *waits_at(tt_calltree *t, uint32_t offset)
{
    return &t->waits[offset / (uint32_t)sizeof(tt_calltree_node)];
}

/* task_of when `task` is past the room: out of its way, as the room
 * doubles. */
static tt_calltree_task *__attribute__((noinline)) grow_tasks(tt_calltree *t, uint32_t task)
{
    tt_calltree_task *tasks = grow_zeroed(t->tasks, &t->task_cap, task + 1, sizeof *tasks);
    if (!tasks) return NULL;
    t->tasks = tasks;
    return &t->tasks[task];
}

/* The stream's state of `task`, NULL when memory runs out. */
static inline tt_calltree_task *task_of(tt_calltree *t, uint32_t task)
{
    return task < t->task_cap ? &t->tasks[task] : grow_tasks(t, task);
}

/* Ends the innermost open step, whose node the last `returns` returns left
 * (the ones after it, `above`, came after its LEAVE). 0, or -1 out of memory. */
static int end_step(tt_calltree *t, uint64_t returns)
{
    const tt_calltree_step *st = &t->open[t->open_count - 1];
    tt_calltree_node *node = tt_calltree_at(t, st->node);
    restore_links(t, enclosing_step(t));
    tt_calltree_task *task = task_of(t, st->task);
    if (!task || TT_RESERVE(task->chain, task->chain_cap, returns) != 0) return -1;
    task->stepped = 1;
    task->end = node->inclusive - st->before + st->begin;
    /* The returns left the step's node and the nodes down its last links:
     * nothing was entered since. */
    uint32_t offset = st->node;
    task->chain_len = 0;
    for (uint64_t i = 0; i < returns; i++, offset = tt_calltree_at(t, offset)->last)
        task->chain[task->chain_len++] = offset;
    t->open_count--;
    return 0;
}

/* Ends the steps whose node is no longer open (see calltree.h). */
static void settle(tt_calltree *t)
{
    if (t->steps_lost) return;
    uint64_t returns = returns_since_enter(t);
    while (t->open_count) {
        /* Ended when the current node is its node's parent or above: the
         * levels up to it are the returns after its LEAVE. */
        uint32_t offset = tt_calltree_at(t, t->open[t->open_count - 1].node)->parent;
        uint64_t above = 0;
        for (;; above++) {
            if (tt_calltree_at(t, offset) == t->cur) break;
            if (offset == 0) return; /* open: the current node is beneath it */
            offset = tt_calltree_at(t, offset)->parent;
        }
        if (returns == UNKNOWN || returns <= above || end_step(t, returns - above) != 0) {
            lose_steps(t);
            return;
        }
    }
}

/* k + 1 for the pair (region, task), numbered when new; 0 when it cannot
 * be. tk is task_of(task), NULL when it could not be made. A task's steps
 * mostly resume one coroutine: the pair of its last step is tried before
 * the map. */
static uint32_t step_key(tt_calltree *t, tt_calltree_task *tk, uint32_t region, uint32_t task)
{
    if (tk && tk->key && t->key_region[tk->key - 1] == region) return tk->key;
    int fresh;
    uint64_t *k = tt_u64map_slot(&t->keys, tt_u64_pair(task, region), &fresh);
    if (k && fresh) {
        if (t->key_count == t->key_cap) {
            uint32_t cap = t->key_cap ? 2 * t->key_cap : 16;
            uint32_t *regions = realloc(t->key_region, cap * sizeof *regions);
            if (regions) t->key_region = regions;
            uint32_t *tasks = regions ? realloc(t->key_task, cap * sizeof *tasks) : NULL;
            if (tasks) t->key_task = tasks;
            if (tasks) t->key_cap = cap;
        }
        if (t->key_count < t->key_cap) {
            t->key_region[t->key_count] = region;
            t->key_task[t->key_count] = task;
            *k = ++t->key_count;
        }
    }
    if (!k || !*k || *k >= TT_CALLTREE_STEP) return 0;
    if (tk) tk->key = (uint32_t)*k;
    return (uint32_t)*k;
}

tt_calltree_node *tt_calltree_step_find(tt_calltree *t, uint32_t region, uint32_t task)
{
    if (t->lost) return t->nodes;
    if (t->open_count) settle(t);
    if (t->steps_lost || region >= TT_CALLTREE_STEP) return tt_calltree_find(t, region);
    if (task >= TT_CALLTREE_TASKS_MAX || t->step_nodes >= TT_CALLTREE_STEP_NODES) {
        lose_steps(t);
        return tt_calltree_find(t, region);
    }
    tt_calltree_task *tk = task_of(t, task);
    uint32_t k = step_key(t, tk, region, task);
    if (!k) {
        lose_steps(t);
        return tt_calltree_find(t, region);
    }
    /* A task's steps mostly resume from the same node, the loop's: its last
     * step's node is tried before the table. */
    uint32_t offset = tk ? tk->node : 0;
    const tt_calltree_node *last = tt_calltree_at(t, offset);
    if (offset && last->region == (TT_CALLTREE_STEP | (k - 1)) && tt_calltree_at(t, last->parent) == t->cur)
        return found_child(t, offset);
    return tt_calltree_child(t, TT_CALLTREE_STEP | (k - 1));
}

void tt_calltree_step_enter(tt_calltree *t, tt_calltree_node *node, uint32_t task, uint64_t ticks)
{
    uint64_t before = node->inclusive;
    tt_calltree_enter_node(t, node, ticks);
    if (t->lost || t->steps_lost || !(node->region & TT_CALLTREE_STEP) || node->region == TT_CALLTREE_ROOT) return;
    uint32_t offset = tt_calltree_offset(t, node);
    tt_calltree_task *tk = task_of(t, task);
    if (!tk || TT_RESERVE(t->open, t->open_cap, t->open_count + 1) != 0) {
        lose_steps(t);
        return;
    }
    if (tk->stepped && ticks >= tk->end) {
        if (waits_cover(t) != 0) {
            lose_steps(t);
            return;
        }
        uint64_t gap = ticks - tk->end;
        for (size_t i = 0; i < tk->chain_len; i++) {
            tt_calltree_waits *c = waits_at(t, tk->chain[i]);
            c->awaited += gap, c->suspensions++;
        }
        waits_at(t, offset)->suspended += gap;
    }
    /* The node's ancestors up to the enclosing step's node (those above it
     * are 0 already), the root's included when none encloses it. */
    uint32_t stop = t->open_count ? t->open[t->open_count - 1].node : 0;
    t->open[t->open_count++] = (tt_calltree_step){offset, task, ticks, before};
    tk->node = offset;
    for (uint32_t a = node->parent;; a = tt_calltree_at(t, a)->parent) {
        tt_calltree_at(t, a)->last = 0;
        if (a == stop || a == 0) break;
    }
}

void tt_calltree_gap(tt_calltree *t, uint64_t ticks)
{
    if (t->lost) return;
    for (tt_calltree_node *n = t->cur; n != t->nodes; n = tt_calltree_at(t, n->parent)) n->inclusive -= ticks;
    /* A step's end is its node's inclusive less `before` plus its begin:
     * the same gap taken from `before` keeps that end where it is. */
    for (size_t i = 0; i < t->open_count; i++) t->open[i].before -= ticks;
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

/* Node n as TREE_NODES writes it (format.h): its region, and for a step's
 * node or one an asyncio step awaited in, its task + 1 and waits. */
typedef struct node_fields {
    uint64_t region; /* region << 1 | more */
    uint32_t task;   /* task + 1; 0: none */
    const tt_calltree_waits *waits;
} node_fields;

static node_fields fields_of(const tt_calltree *t, uint32_t n)
{
    static const tt_calltree_waits none;
    const tt_calltree_waits *w = n < t->waits_cap ? &t->waits[n] : &none;
    uint32_t region = t->nodes[n].region, task = 0;
    if (region & TT_CALLTREE_STEP) {
        task = t->key_task[region & ~TT_CALLTREE_STEP] + 1;
        region = t->key_region[region & ~TT_CALLTREE_STEP];
    }
    int more = task || w->suspended || w->suspensions;
    return (node_fields){(uint64_t)region << 1 | (uint64_t)more, task, w};
}

/* The bytes of node n's fields in a TREE_NODES block. */
static uint32_t node_size(const tt_calltree *t, uint32_t n)
{
    const tt_calltree_node *node = &t->nodes[n];
    node_fields f = fields_of(t, n);
    uint32_t size = varint_size(n - node->parent / sizeof *node) + varint_size(f.region) + varint_size(node->visits) +
                    varint_size(node->inclusive);
    if (f.region & 1)
        size += varint_size(f.task) + varint_size(f.waits->suspended) + varint_size(f.waits->awaited) +
                varint_size(f.waits->suspensions);
    return size;
}

/* TREE_NODES' tag and count, at most. */
#define BLOCK_HEAD (1u + 5u)

/* Nodes [first, first + count) as one TREE_NODES block at p: field by
 * field, each a column, which zstd takes to less than the records would;
 * the asyncio fields of the nodes that have them last. */
static uint8_t *put_block(const tt_calltree *t, uint8_t *p, uint32_t first, uint32_t count)
{
    const tt_calltree_node *nodes = t->nodes;
    *p++ = TT_DEF_TREE_NODE;
    p = tt_put_varint(p, count);
    for (uint32_t n = first; n < first + count; n++) p = tt_put_varint(p, n - nodes[n].parent / sizeof *nodes);
    for (uint32_t n = first; n < first + count; n++) p = tt_put_varint(p, fields_of(t, n).region);
    for (uint32_t n = first; n < first + count; n++) p = tt_put_varint(p, nodes[n].visits);
    for (uint32_t n = first; n < first + count; n++) p = tt_put_varint(p, nodes[n].inclusive);
    for (uint32_t n = first; n < first + count; n++) {
        node_fields f = fields_of(t, n);
        if (!(f.region & 1)) continue;
        p = tt_put_varint(p, f.task);
        p = tt_put_varint(p, f.waits->suspended);
        p = tt_put_varint(p, f.waits->awaited);
        p = tt_put_varint(p, f.waits->suspensions);
    }
    return p;
}

void tt_calltree_write(tt_stream *s)
{
    tt_calltree *t = &s->tree;
    if (!t->lost && t->open_count) settle(t); /* every call is closed */
    t->closed = 1;
    if (t->lost) return;
    tt_chunk *c;
    uint8_t *p = tree_room(s, 1 + 10 * (5 + 5 * TT_CALLTREE_GENERATIONS), &c);
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
        if (count == 0) { /* a fresh chunk holds any node: 8 fields of 10 bytes at most */
            tree_room(s, TT_CHUNK_PAYLOAD_SIZE, &c);
            continue;
        }
        tree_commit(c, put_block(t, c->data + used, first, count));
        first += count;
    }
}

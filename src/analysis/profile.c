/* profile.c -- the call-path profile and its text summary (see profile.h).
 *
 * One pass per stream through the reader, doing as little per event as it
 * can: the cursor guarantees well nesting, so the open call path is one
 * node, `cur`. ENTER moves to the child of cur for its region (cached per
 * node: a loop calls the same child again) and counts a visit; LEAVE moves
 * to the parent. A node's inclusive time is the sum of its LEAVE times
 * minus the sum of its ENTER times, so each event adds its time to one
 * counter, in modular arithmetic, which is exact once every ENTER has its
 * LEAVE (the cursor closes what is left open). The times summed are the
 * clock's ticks, converted to ns once per node (tt_process_duration): the
 * definition the hook's own call tree (calltree.h) follows too, so that a
 * profile made from the trees the hook wrote is the same to the ns.
 *
 * Everything else follows from the tree once the stream is read (finish_thread):
 * a node's exclusive time is its inclusive time minus its children's; a
 * region's visits and exclusive time are the sums over its nodes; and its
 * inclusive time, counted once per outermost activation so that recursion
 * is not counted twice, is the sum over its nodes that have no ancestor of
 * the same region.
 *
 * With the asyncio tasks asked (tt_profile_build_tasks), a process that has
 * tasks is read through the same loop made with a test per ENTER and per
 * LEAVE that tells tasklanes.c where steps begin and end, and which nodes a
 * step touched: the tasks' times come from the tree (tasklanes.h), in the
 * same read; or from the tree the writer kept, whose steps' nodes are
 * merged back into their paths here (thread_from_tree).
 */
#include "profile.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "tasklanes.h"

#define NONE UINT32_MAX

/* ---- open-addressing hash sets of indices (0 marks an empty slot) ---- */

typedef struct index_set {
    uint32_t *slots; /* index + 1 */
    size_t mask;     /* slots - 1; the set keeps at most half of them used */
    size_t used;
} index_set;

static uint64_t hash_u64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

static uint64_t hash_str(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ULL;
    return h;
}

/* Makes room for one more index; `rehash` gives the hash of a stored index. */
static int set_reserve(index_set *set, uint64_t (*rehash)(const void *ctx, uint32_t index), const void *ctx)
{
    if ((set->used + 1) * 2 <= (set->slots ? set->mask + 1 : 0)) return 0;
    size_t size = set->slots ? (set->mask + 1) * 2 : 64;
    uint32_t *slots = calloc(size, sizeof *slots);
    if (!slots) return -1;
    for (size_t i = 0; set->slots && i <= set->mask; i++) {
        if (!set->slots[i]) continue;
        size_t j = rehash(ctx, set->slots[i] - 1) & (size - 1);
        while (slots[j]) j = (j + 1) & (size - 1);
        slots[j] = set->slots[i];
    }
    free(set->slots);
    set->slots = slots;
    set->mask = size - 1;
    return 0;
}

/* ---- building ---- */

/* The child of a node that ENTER tries first: the one entered last from
 * it (a loop calls the same function again). Kept per node at index
 * node + 1; index 0 stands for the roots' level, where cur is NONE. */
typedef struct child_link {
    uint32_t region; /* of `node`; NONE before the first call */
    uint32_t node;
} child_link;

typedef struct builder {
    const tt_trace *trace;
    tt_profile *prof;
    size_t thread_cap, region_cap, problem_cap;
    index_set names; /* merged regions by name */

    /* The process being read: its region ids -> merged region (NONE until
     * first needed, so regions never entered never appear). */
    uint32_t *merged;
    size_t merged_cap;

    /* The thread being read. Per node: its last child entered (links), its
     * visits while reading (in the node, the compiler would update them
     * and the inclusive time together as a vector, at several times the
     * cost), and its last child created (at index node + 1, as links), to
     * chain a new one behind. */
    tt_profile_thread *th;
    size_t node_cap;
    index_set paths; /* nodes by (parent, region) */
    child_link *links;
    uint64_t *visits;
    uint32_t *last_created;
    size_t link_cap, visits_cap, created_cap;
    /* Per merged region, for finish_thread: its nodes open on the walk's
     * path, and its exclusive time on this thread. Zero between threads. */
    uint32_t *active;
    uint64_t *thread_excl;
    size_t active_cap, excl_cap;

    /* The process being read, and per merged region its exclusive time
     * in it (zero between processes). */
    const tt_process *process;
    uint64_t *process_excl;
    size_t process_excl_cap, process_cap;

    index_set pairs; /* prof->messages by (sender, receiver) */
    size_t message_cap;
    index_set object_places; /* prof->objects by (region, type name) */
    size_t object_cap;

    /* The thread's times are ns summed (a trace that keeps a range, whose
     * edges have no ticks), else ticks, converted once per node and per
     * generation of collections (finish_thread). */
    int summed_ns;
    uint64_t gc_ticks[TT_PROFILE_GC_GENERATIONS], gc_longest[TT_PROFILE_GC_GENERATIONS];

    /* The asyncio tasks, made in the same read (NULL: not asked); only the
     * processes that have tasks read (the profile is not asked): tasks_only. */
    tt_tasks_reading *tasks;
    int tasks_only;
} builder;

static uint64_t name_rehash(const void *ctx, uint32_t index)
{
    return hash_str(((const tt_profile *)ctx)->regions[index].name);
}

static uint64_t path_key(uint32_t parent, uint32_t region) { return hash_u64((uint64_t)parent << 32 | region); }

static uint64_t path_rehash(const void *ctx, uint32_t index)
{
    const tt_profile_node *n = &((const tt_profile_thread *)ctx)->nodes[index];
    return path_key(n->parent, n->region);
}

static uint64_t pair_key(uint32_t sender, uint32_t receiver) { return hash_u64((uint64_t)sender << 32 | receiver); }

static uint64_t pair_rehash(const void *ctx, uint32_t index)
{
    const tt_profile_messages *m = &((const tt_profile *)ctx)->messages[index];
    return pair_key(m->sender, m->receiver);
}

static uint64_t object_key(uint32_t region, const char *type) { return hash_u64(region) ^ hash_str(type); }

static uint64_t object_rehash(const void *ctx, uint32_t index)
{
    const tt_profile_objects *o = &((const tt_profile *)ctx)->objects[index];
    return object_key(o->region, o->type);
}

static int add_problem(builder *b, const char *line, int corrupt)
{
    tt_profile *prof = b->prof;
    if (TT_RESERVE(prof->problems, b->problem_cap, prof->problem_count + 1) != 0) return -1;
    if (!(prof->problems[prof->problem_count] = strdup(line))) return -1;
    prof->problem_count++;
    prof->corrupt |= corrupt;
    return 0;
}

/* The merged region of process-local region `id` of p (created on first use):
 * its index, or NONE when memory runs out. */
static uint32_t merged_region(builder *b, const tt_process *p, uint32_t id)
{
    if (b->merged[id] != NONE) return b->merged[id];
    tt_profile *prof = b->prof;
    const tt_region *r = &p->regions[id];
    if (set_reserve(&b->names, name_rehash, prof) != 0) return NONE;
    size_t j = hash_str(r->name) & b->names.mask;
    for (; b->names.slots[j]; j = (j + 1) & b->names.mask)
        if (strcmp(prof->regions[b->names.slots[j] - 1].name, r->name) == 0)
            return b->merged[id] = b->names.slots[j] - 1;

    size_t n = prof->region_count;
    if (n >= NONE || TT_RESERVE(prof->regions, b->region_cap, n + 1) != 0 ||
        TT_RESERVE(b->active, b->active_cap, n + 1) != 0 || TT_RESERVE(b->thread_excl, b->excl_cap, n + 1) != 0 ||
        TT_RESERVE(b->process_excl, b->process_excl_cap, n + 1) != 0)
        return NONE;
    prof->regions[n] = (tt_profile_region){.name = r->name, .file = r->file, .line = r->line, .kind = r->kind};
    b->active[n] = 0;
    b->thread_excl[n] = 0;
    b->process_excl[n] = 0;
    b->names.slots[j] = (uint32_t)n + 1;
    b->names.used++;
    prof->region_count++;
    return b->merged[id] = (uint32_t)n;
}

/* The call-path node for `region` under `parent` (created on first call):
 * its index, or NONE when memory runs out. Out of line: read_events calls
 * it rarely, and keeps its locals in registers. */
static uint32_t __attribute__((noinline)) path_node(builder *b, uint32_t parent, uint32_t region)
{
    tt_profile_thread *th = b->th;
    if (set_reserve(&b->paths, path_rehash, th) != 0) return NONE;
    size_t j = path_key(parent, region) & b->paths.mask;
    for (; b->paths.slots[j]; j = (j + 1) & b->paths.mask) {
        const tt_profile_node *n = &th->nodes[b->paths.slots[j] - 1];
        if (n->parent == parent && n->region == region) return b->paths.slots[j] - 1;
    }

    size_t count = th->node_count;
    if (count >= NONE - 1 || TT_RESERVE(th->nodes, b->node_cap, count + 1) != 0 ||
        TT_RESERVE(b->links, b->link_cap, count + 2) != 0 || TT_RESERVE(b->visits, b->visits_cap, count + 1) != 0 ||
        TT_RESERVE(b->last_created, b->created_cap, count + 2) != 0)
        return NONE;
    uint32_t index = (uint32_t)count;
    th->nodes[index] = (tt_profile_node){.region = region, .parent = parent, .first_child = NONE, .next_sibling = NONE};
    b->links[index + 1] = (child_link){NONE, NONE};
    b->visits[index] = 0;
    b->last_created[index + 1] = NONE;
    if (b->tasks && tt_tasks_reading_node(b->tasks, index) != 0) return NONE;
    uint32_t *last = &b->last_created[(uint32_t)(parent + 1)];
    if (*last != NONE)
        th->nodes[*last].next_sibling = index;
    else if (parent != NONE)
        th->nodes[parent].first_child = index;
    *last = index;
    b->paths.slots[j] = index + 1;
    b->paths.used++;
    th->node_count++;
    return index;
}

/* The child of `cur` to try when `last`, the child entered last, is not
 * the one entered now: the sibling after it, or the first child after the
 * last. Functions that call several others mostly call them in the same
 * order every time, which is the order they were first called in, the
 * order of the siblings. NONE when cur had no child yet. */
static inline uint32_t next_in_turn(const tt_profile_node *nodes, uint32_t cur, uint32_t last)
{
    if (last == NONE) return NONE;
    uint32_t next = nodes[last].next_sibling;
    if (next != NONE) return next;
    return cur == NONE ? 0 : nodes[cur].first_child;
}

/* An MPI event, which the profile counts if it is a message sent (by the
 * sender, so that each counts once) or the end of a collective. 0, or -1
 * when memory runs out. Messages whose ranks the trace does not tell are
 * left out. */
static int __attribute__((noinline)) count_mpi(builder *b, const tt_event *ev)
{
    tt_profile *prof = b->prof;
    const tt_process *p = b->process;
    if (ev->kind != TT_EV_MPI_SEND && ev->kind != TT_EV_MPI_ISEND && ev->kind != TT_EV_MPI_COLLECTIVE_END) return 0;
    if (ev->kind == TT_EV_MPI_COLLECTIVE_END) {
        if (ev->op < TT_PROFILE_COLLECTIVES) {
            tt_profile_collective *c = &prof->collectives[ev->op];
            c->calls++;
            c->sent += ev->sent;
            c->received += ev->received;
        }
        return 0;
    }
    uint64_t receiver = tt_comm_world_rank(p, ev->comm, ev->peer);
    if (!p->mpi_size || receiver > UINT32_MAX) return 0;
    uint32_t sender = (uint32_t)p->mpi_rank;
    if (set_reserve(&b->pairs, pair_rehash, prof) != 0) return -1;
    size_t j = pair_key(sender, (uint32_t)receiver) & b->pairs.mask;
    for (; b->pairs.slots[j]; j = (j + 1) & b->pairs.mask) {
        tt_profile_messages *m = &prof->messages[b->pairs.slots[j] - 1];
        if (m->sender == sender && m->receiver == receiver) {
            m->count++;
            m->bytes += ev->bytes;
            return 0;
        }
    }
    size_t n = prof->message_count;
    if (n >= NONE || TT_RESERVE(prof->messages, b->message_cap, n + 1) != 0) return -1;
    prof->messages[n] = (tt_profile_messages){sender, (uint32_t)receiver, 1, ev->bytes};
    b->pairs.slots[j] = (uint32_t)n + 1;
    b->pairs.used++;
    prof->message_count++;
    return 0;
}

static uint32_t merged_region(builder *b, const tt_process *p, uint32_t id);

/* An OBJECTS event, added to its (region, type). 0, or -1 when memory runs out. */
static int count_objects(builder *b, const tt_event *ev)
{
    tt_profile *prof = b->prof;
    uint32_t region = NONE;
    if (ev->region != NONE && (region = merged_region(b, b->process, ev->region)) == NONE) return -1;
    const char *type = b->process->strings[ev->name];
    if (set_reserve(&b->object_places, object_rehash, prof) != 0) return -1;
    size_t j = object_key(region, type) & b->object_places.mask;
    for (; b->object_places.slots[j]; j = (j + 1) & b->object_places.mask) {
        tt_profile_objects *o = &prof->objects[b->object_places.slots[j] - 1];
        if (o->region == region && strcmp(o->type, type) == 0) {
            o->created += ev->created;
            o->destroyed += ev->destroyed;
            return 0;
        }
    }
    size_t n = prof->object_count;
    if (n >= NONE || TT_RESERVE(prof->objects, b->object_cap, n + 1) != 0) return -1;
    prof->objects[n] = (tt_profile_objects){region, type, ev->bytes, ev->created, ev->destroyed};
    b->object_places.slots[j] = (uint32_t)n + 1;
    b->object_places.used++;
    prof->object_count++;
    return 0;
}

/* The events that are neither ENTER nor LEAVE that the profile counts. */
static int __attribute__((noinline)) count_other(builder *b, const tt_event *ev)
{
    if (ev->kind == TT_EV_OBJECTS) return count_objects(b, ev);
    if (ev->kind >= TT_EV_MPI_SEND && ev->kind <= TT_EV_MPI_COLLECTIVE_END) return count_mpi(b, ev);
    return 0;
}

/* The same for tt_stream_counted_read. */
static int count_counted(void *ctx, const tt_event *ev, tt_error *err)
{
    return count_other(ctx, ev) != 0 ? tt_fail(err, "out of memory") : 0;
}

static void __attribute__((noinline)) count_gc(builder *b, const tt_event *ev)
{
    if (ev->generation >= TT_PROFILE_GC_GENERATIONS) return;
    tt_profile_gc *g = &b->prof->gc[ev->generation];
    g->collections++;
    g->collected += ev->collected;
    g->uncollectable += ev->uncollectable;
    /* In ticks, converted once per thread (finish_thread), as a node's time is. */
    uint64_t duration = b->summed_ns ? ev->duration_ns : ev->duration_ticks;
    b->gc_ticks[ev->generation] += duration;
    if (duration > b->gc_longest[ev->generation]) b->gc_longest[ev->generation] = duration;
}

/* Calls read at a time (tt_cursor_next_calls): enough that the loop's
 * set-up weighs nothing, few enough to stay in the cache. */
#define CALLS 256

/* Reads the events of cursor c into b->th's tree: 0, or -1 when memory
 * runs out. The loop every event goes through: what it uses is in locals,
 * which the calls to the cursor cannot change, and only path_node can.
 * ENTER and LEAVE come in bulk; another event, or one the cursor reads
 * with care, one at a time through the same loop. Made twice: with the
 * asyncio tasks (b->tasks, for a process that has some) and without, so
 * that a program without tasks pays nothing for them. */
static inline __attribute__((always_inline)) int read_events_with(builder *b, tt_cursor *c, int with_tasks)
{
    tt_profile_thread *th = b->th;
    tt_profile_node *nodes = th->nodes;
    child_link *links = b->links;
    uint64_t *visits = b->visits;
    tt_tasks_reading *tasks = b->tasks;
    uint32_t cur = NONE;
    /* The tasks' state the loop tests (tasklanes.h), in locals: the stamp an
     * ENTER's node must have not to be told (none when a step is pending),
     * the depth of the innermost step, and the node last entered and its
     * depth (where the returns that end a step began). */
    const uint32_t *seen = NULL;
    uint32_t stamp = 0, step_depth = UINT32_MAX, last_node = NONE, last_depth = 0;
    if (with_tasks) {
        seen = tasks->seen;
        stamp = tt_tasks_reading_stamp(tasks);
        step_depth = tasks->step_depth;
    }
    tt_call calls[CALLS];
    tt_event ev;
    int begun = 0;
    uint64_t time = 0;
    for (;;) {
        size_t n = tt_cursor_next_calls(c, calls, CALLS);
        ev.resumed = 0;
        if (!n) {
            if (!tt_cursor_next(c, &ev)) break;
            time = ev.time;
            if (!begun) th->begin_ns = time;
            begun = 1;
            if (ev.kind == TT_EV_ENTER || ev.kind == TT_EV_LEAVE) {
                calls[0] = (tt_call){
                    .time = ev.time, .ticks = ev.ticks, .region = ev.region, .depth = ev.depth, .kind = ev.kind};
                n = 1;
            } else if (ev.kind == TT_EV_GC) {
                count_gc(b, &ev);
            } else if (with_tasks && ev.kind == TT_EV_TASK_RESUME) {
                tt_tasks_reading_resume(tasks, &ev);
                stamp = tt_tasks_reading_stamp(tasks);
            } else if (ev.kind >= TT_EV_MPI_SEND && count_other(b, &ev) != 0) {
                return -1;
            }
        } else if (!begun) {
            th->begin_ns = calls[0].time;
            begun = 1;
        }
        for (const tt_call *call = calls; call < calls + n; call++) {
            time = call->time;
            if (call->kind == TT_EV_ENTER) {
                child_link *link = &links[(uint32_t)(cur + 1)];
                uint32_t node = link->node;
                if (link->region != call->region) {
                    node = next_in_turn(nodes, cur, node);
                    if (node == NONE || nodes[node].region != call->region) {
                        if ((node = path_node(b, cur, call->region)) == NONE) return -1;
                        nodes = th->nodes;
                        links = b->links;
                        visits = b->visits;
                        if (with_tasks) seen = tasks->seen;
                        link = &links[(uint32_t)(cur + 1)];
                    }
                    *link = (child_link){call->region, node};
                }
                visits[node]++;
                nodes[node].inclusive_ns -= call->ticks;
                cur = node;
                if (with_tasks) {
                    last_node = node;
                    last_depth = call->depth;
                    if (seen[node] != stamp) {
                        if (tt_tasks_reading_enter(tasks, nodes, node, call->depth, time, call->ticks) != 0) return -1;
                        stamp = tt_tasks_reading_stamp(tasks);
                        step_depth = tasks->step_depth;
                    }
                }
            } else {
                nodes[cur].inclusive_ns += call->ticks;
                cur = nodes[cur].parent;
                if (with_tasks && call->depth + 1 == step_depth) {
                    if (tt_tasks_reading_leave(tasks, nodes, last_node, last_depth - call->depth, cur, call->depth,
                                               time, call->ticks) != 0)
                        return -1;
                    stamp = tt_tasks_reading_stamp(tasks);
                    step_depth = tasks->step_depth;
                }
            }
        }
        /* A call going on after a gap (reader.h) is no new visit. */
        if (ev.resumed) visits[cur]--;
    }
    th->end_ns = time;
    return 0;
}

static int __attribute__((noinline)) read_events(builder *b, tt_cursor *c) { return read_events_with(b, c, 0); }

static int __attribute__((noinline)) read_events_tasks(builder *b, tt_cursor *c) { return read_events_with(b, c, 1); }

/* Thread b->th from a tree whose steps' nodes (format.h) are paths of their
 * own: each node into its path's (path_node), in the tree's order, so that
 * a path is numbered by its first node, which was its first call. */
static int merge_steps(builder *b, const tt_stream_tree *tree)
{
    uint32_t *path = malloc((tree->node_count ? tree->node_count : 1) * sizeof *path);
    if (!path) return -1;
    for (size_t i = 0; i < tree->node_count; i++) {
        const tt_tree_node *t = &tree->nodes[i];
        uint32_t node = path_node(b, t->parent == NONE ? NONE : path[t->parent], t->region);
        if (node == NONE) {
            free(path);
            return -1;
        }
        path[i] = node;
        b->visits[node] += t->visits;
        b->th->nodes[node].inclusive_ns += t->inclusive_ticks;
    }
    free(path);
    return 0;
}

/* Thread b->th from the call tree its writer kept (reader.h: tt_stream_tree)
 * in place of its records: the same nodes in the same order as read_events
 * makes them (both number a path at its first call), their times in ticks;
 * its first event from cursor c (what the cursor found wrong, should it
 * find no first event). 0, or -1 when memory runs out. */
static int thread_from_tree(builder *b, tt_cursor *c, const tt_stream_tree *tree)
{
    tt_profile_thread *th = b->th;
    size_t count = tree->node_count;
    if (b->tasks && b->process->task_count && tt_tasks_reading_tree(b->tasks, tree) != 0) return -1;
    if (tree->steps) {
        if (merge_steps(b, tree) != 0) return -1;
        count = 0;
    }
    if (count >= NONE - 1 || TT_RESERVE(th->nodes, b->node_cap, count + 1) != 0 ||
        TT_RESERVE(b->visits, b->visits_cap, count + 1) != 0 ||
        TT_RESERVE(b->last_created, b->created_cap, count + 2) != 0)
        return -1;
    b->last_created[0] = NONE;
    for (uint32_t i = 0; i < count; i++) {
        const tt_tree_node *t = &tree->nodes[i];
        th->nodes[i] = (tt_profile_node){.region = t->region,
                                         .parent = t->parent,
                                         .first_child = NONE,
                                         .next_sibling = NONE,
                                         .inclusive_ns = t->inclusive_ticks};
        b->visits[i] = t->visits;
        b->last_created[i + 1] = NONE;
        uint32_t *last = &b->last_created[(uint32_t)(t->parent + 1)];
        if (*last != NONE)
            th->nodes[*last].next_sibling = i;
        else if (t->parent != NONE)
            th->nodes[t->parent].first_child = i;
        *last = i;
    }
    if (!tree->steps) th->node_count = count;
    for (size_t g = 0; g < TT_PROFILE_GC_GENERATIONS; g++) {
        tt_profile_gc *pg = &b->prof->gc[g];
        pg->collections += tree->gc[g].collections;
        pg->collected += tree->gc[g].collected;
        pg->uncollectable += tree->gc[g].uncollectable;
        b->gc_ticks[g] += tree->gc[g].ticks;
        if (tree->gc[g].longest > b->gc_longest[g]) b->gc_longest[g] = tree->gc[g].longest;
    }
    tt_event first;
    th->end_ns = tt_process_time(b->process, tree->end_ticks);
    th->events = tree->events;
    if (tt_cursor_next(c, &first)) {
        th->begin_ns = tt_cursor_began(c) ? tt_cursor_began(c) : first.time; /* a ring's dropped chunks */
        return 0;
    }
    /* Its first chunk of records is damaged (the tree was reached past it,
     * reader.h: tt_trace_trust_records): the span has no beginning. */
    th->begin_ns = th->end_ns;
    return tt_cursor_state(c) == TT_STREAM_COMPLETE
               ? 0
               : add_problem(b, tt_cursor_problem(c), tt_cursor_state(c) == TT_STREAM_CORRUPT);
}

/* The tree of stream `stream` of p when the profile can be made from it: 1
 * with *tree set, 0 when the stream's records are to be read (no tree; or
 * records the profile counts that the tree does not hold, outside the
 * chunks flagged as holding them (format.h); or a trace read in part; or
 * the tasks alone, whose lanes take their steps from the records), -1 when
 * memory runs out. */
static int usable_tree(builder *b, const tt_process *p, size_t stream, tt_stream_tree *tree)
{
    if (b->summed_ns || p->left_out || b->tasks_only) return 0;
    tt_error err;
    int rc = tt_stream_tree_read(b->trace, p, stream, tree, &err);
    /* A ring's (format.h) dropped chunks took their counted records with
     * them: its records hold no more, the tree the calls of the whole run. */
    if (rc == 1 && tree->reads != tree->counted_records && !p->dropped_chunks) {
        tt_stream_tree_free(tree);
        rc = 0;
    }
    return rc;
}

/* Derives what the tree implies (see the top of this file) for thread th of
 * process p: exclusive times, and the thread's share of the merged regions.
 * Fails only when memory runs out. */
static int finish_thread(builder *b, const tt_process *p)
{
    tt_profile *prof = b->prof;
    tt_profile_thread *th = b->th;
    tt_profile_node *nodes = th->nodes;
    uint32_t count = (uint32_t)th->node_count;

    /* In index order, a region's first node comes first: merged regions are
     * numbered in the order the trace first enters them. */
    for (uint32_t n = 0; n < count; n++) {
        uint32_t region = merged_region(b, p, nodes[n].region);
        if (region == NONE) return -1;
        nodes[n].visits = b->visits[n];
        if (!b->summed_ns) nodes[n].inclusive_ns = tt_process_duration(p, nodes[n].inclusive_ns);
        nodes[n].exclusive_ns += nodes[n].inclusive_ns;
        if (nodes[n].parent != NONE) nodes[nodes[n].parent].exclusive_ns -= nodes[n].inclusive_ns;
    }
    for (uint32_t n = 0; n < count; n++) {
        tt_profile_region *r = &prof->regions[b->merged[nodes[n].region]];
        r->visits += nodes[n].visits;
        r->exclusive_ns += nodes[n].exclusive_ns;
        b->thread_excl[b->merged[nodes[n].region]] += nodes[n].exclusive_ns;
        b->process_excl[b->merged[nodes[n].region]] += nodes[n].exclusive_ns;
    }

    /* Depth first through the tree, counting the open nodes of each region
     * on the path: a node opened when there are none is outermost. */
    uint32_t n = count ? 0 : NONE;
    while (n != NONE) {
        uint32_t region = b->merged[nodes[n].region];
        if (b->active[region]++ == 0) prof->regions[region].inclusive_ns += nodes[n].inclusive_ns;
        if (nodes[n].first_child != NONE) {
            n = nodes[n].first_child;
            continue;
        }
        /* Close n, and its ancestors while they have no next sibling. */
        for (;;) {
            b->active[b->merged[nodes[n].region]]--;
            if (nodes[n].next_sibling != NONE) {
                n = nodes[n].next_sibling;
                break;
            }
            if ((n = nodes[n].parent) == NONE) break;
        }
    }

    uint64_t best = 0;
    for (size_t i = 0; i < prof->region_count; i++) {
        if (b->thread_excl[i] > best) {
            best = b->thread_excl[i];
            th->top_region = i;
        }
        b->thread_excl[i] = 0;
    }
    for (size_t g = 0; g < TT_PROFILE_GC_GENERATIONS; g++) {
        uint64_t total = b->gc_ticks[g], longest = b->gc_longest[g];
        if (!b->summed_ns) total = tt_process_duration(p, total), longest = tt_process_duration(p, longest);
        prof->gc[g].total_ns += total;
        if (longest > prof->gc[g].longest_ns) prof->gc[g].longest_ns = longest;
        b->gc_ticks[g] = b->gc_longest[g] = 0;
    }
    prof->events += th->events;
    prof->total_ns += th->end_ns - th->begin_ns - tt_process_off_ns(p, th->begin_ns, th->end_ns);
    return 0;
}

/* Reads one stream into a new profile thread. Fails only when memory runs out. */
static int build_thread(builder *b, size_t process, size_t stream)
{
    tt_profile *prof = b->prof;
    const tt_process *p = tt_trace_process(b->trace, process);
    tt_cursor *c;
    tt_error err;
    if (tt_cursor_open(b->trace, p, stream, &c, &err) != 0) return add_problem(b, err.message, 0);
    if (TT_RESERVE(prof->threads, b->thread_cap, prof->thread_count + 1) != 0 ||
        TT_RESERVE(b->links, b->link_cap, 1) != 0 || TT_RESERVE(b->last_created, b->created_cap, 1) != 0) {
        tt_cursor_close(c);
        return -1;
    }
    b->th = &prof->threads[prof->thread_count++];
    *b->th = (tt_profile_thread){.process = process, .stream = stream, .top_region = SIZE_MAX};
    b->node_cap = 0;
    free(b->paths.slots); /* sized for this thread's tree, not the biggest one's */
    b->paths = (index_set){0};
    b->links[0] = (child_link){NONE, NONE};
    b->last_created[0] = NONE;

    int rc;
    b->summed_ns = tt_trace_keeps_range(b->trace);
    tt_stream_tree tree;
    int has_tree = usable_tree(b, p, stream, &tree);
    if (has_tree < 0) {
        rc = -1;
    } else if (has_tree) {
        if (b->tasks && p->task_count) tt_tasks_reading_stream(b->tasks, stream);
        rc = thread_from_tree(b, c, &tree);
        /* Then the records the tree does not hold, from their chunks alone,
         * before finish_thread, as read_events counts them. */
        if (rc == 0) rc = tt_stream_counted_read(p, stream, &tree, count_counted, b, &err);
        if (rc == 1) rc = add_problem(b, err.message, 1);
        b->th->records_read = tree.counted_chunk_records;
        tt_stream_tree_free(&tree);
    } else if (b->tasks && p->task_count) {
        tt_tasks_reading_stream(b->tasks, stream);
        rc = read_events_tasks(b, c);
    } else {
        rc = read_events(b, c);
    }
    if (!has_tree) b->th->events = b->th->records_read = tt_cursor_events_read(c);
    const tt_thread *thread = &p->threads[stream];
    if (thread->usage_count) {
        const tt_thread_usage *last = &thread->usage[thread->usage_count - 1];
        b->th->has_usage = 1;
        b->th->cpu_ns = last->cpu_ns;
        b->th->samples = last->samples;
        b->th->gil_samples = last->gil_samples;
    }
    if (rc == 0 && !has_tree && tt_cursor_state(c) != TT_STREAM_COMPLETE)
        rc = add_problem(b, tt_cursor_problem(c), tt_cursor_state(c) == TT_STREAM_CORRUPT);
    tt_cursor_close(c);
    return rc == 0 ? finish_thread(b, p) : rc;
}

/* Its threads, events, span and top region, from the threads just read. */
static void finish_process(builder *b, tt_profile_process *pp, size_t first_thread)
{
    tt_profile *prof = b->prof;
    for (size_t i = first_thread; i < prof->thread_count; i++) {
        const tt_profile_thread *th = &prof->threads[i];
        if (!th->events) continue; /* its times are 0 */
        if (!pp->events || th->begin_ns < pp->begin_ns) pp->begin_ns = th->begin_ns;
        if (th->end_ns > pp->end_ns) pp->end_ns = th->end_ns;
        pp->events += th->events;
    }
    pp->threads = prof->thread_count - first_thread;
    uint64_t best = 0;
    for (size_t i = 0; i < prof->region_count; i++) {
        if (b->process_excl[i] > best) {
            best = b->process_excl[i];
            pp->top_region = i;
        }
        b->process_excl[i] = 0;
    }
}

static int build_process(builder *b, size_t index)
{
    tt_profile *prof = b->prof;
    const tt_process *p = tt_trace_process(b->trace, index);
    if (b->tasks && !p->task_count && b->tasks_only) return 0;
    if (b->tasks) tt_tasks_reading_process(b->tasks, index);
    if (p->defs_cut && add_problem(b, p->defs_cut, p->defs_state == TT_STREAM_CORRUPT) != 0) return -1;
    /* +1: the "<undefined>" placeholder region. */
    if (TT_RESERVE(b->merged, b->merged_cap, p->region_count + 1) != 0 ||
        TT_RESERVE(prof->processes, b->process_cap, prof->process_count + 1) != 0)
        return -1;
    for (size_t i = 0; i <= p->region_count; i++) b->merged[i] = NONE;
    b->process = p;
    size_t first_thread = prof->thread_count;
    for (size_t s = 0; s < p->thread_count; s++)
        if (p->threads[s].present && build_thread(b, index, s) != 0) return -1;
    tt_profile_process *pp = &prof->processes[prof->process_count++];
    *pp = (tt_profile_process){.process = index, .top_region = SIZE_MAX};
    finish_process(b, pp, first_thread);
    return 0;
}

static int by_ranks(const void *a, const void *b)
{
    const tt_profile_messages *x = a, *y = b;
    if (x->sender != y->sender) return x->sender < y->sender ? -1 : 1;
    return (x->receiver > y->receiver) - (x->receiver < y->receiver);
}

int tt_profile_build(const tt_trace *t, tt_profile **out, tt_error *err)
{
    return tt_profile_build_process(t, SIZE_MAX, out, err);
}

int tt_profile_build_process(const tt_trace *t, size_t process, tt_profile **out, tt_error *err)
{
    return tt_profile_build_tasks(t, process, out, NULL, err);
}

int tt_profile_build_tasks(const tt_trace *t, size_t process, tt_profile **out, tt_tasks **tasks, tt_error *err)
{
    if (out) *out = NULL;
    if (tasks) *tasks = NULL;
    tt_tasks_reading reading;
    if (tasks && tt_tasks_reading_open(&reading, t, process, err) != 0) return -1;
    reading.step_ns = !out;
    tt_profile *prof = calloc(1, sizeof *prof);
    if (!prof) {
        if (tasks) tt_tasks_reading_close(&reading, tasks, 1);
        return tt_fail(err, "out of memory");
    }
    prof->trace = t;
    builder b = {.trace = t, .prof = prof, .tasks = tasks ? &reading : NULL, .tasks_only = !out};
    int rc = 0;
    for (size_t i = 0; rc == 0 && process == SIZE_MAX && i < tt_trace_problem_count(t); i++) {
        int corrupt;
        const char *line = tt_trace_problem(t, i, &corrupt);
        rc = add_problem(&b, line, corrupt);
    }
    for (size_t i = 0; rc == 0 && i < tt_trace_process_count(t); i++)
        if (process == SIZE_MAX || process == i) rc = build_process(&b, i);
    if (rc == 0 && prof->message_count > 1)
        qsort(prof->messages, prof->message_count, sizeof *prof->messages, by_ranks);

    free(b.names.slots);
    free(b.merged);
    free(b.paths.slots);
    free(b.links);
    free(b.visits);
    free(b.last_created);
    free(b.active);
    free(b.thread_excl);
    free(b.process_excl);
    free(b.pairs.slots);
    free(b.object_places.slots);
    if (tasks && tt_tasks_reading_close(&reading, tasks, rc != 0) != 0) rc = -1;
    if (rc != 0 || !out) tt_profile_free(prof);
    if (rc != 0) return tt_fail(err, "out of memory");
    if (out) *out = prof;
    return 0;
}

void tt_profile_free(tt_profile *p)
{
    if (!p) return;
    for (size_t i = 0; i < p->thread_count; i++) free(p->threads[i].nodes);
    free(p->threads);
    free(p->regions);
    free(p->processes);
    free(p->messages);
    free(p->objects);
    for (size_t i = 0; i < p->problem_count; i++) free(p->problems[i]);
    free(p->problems);
    free(p);
}

/* ---- text ---- */

typedef struct strbuf {
    char *s;
    size_t len, cap;
    int failed;
} strbuf;

static int sb_reserve(strbuf *b, size_t more)
{
    if (b->failed) return -1;
    if (TT_RESERVE(b->s, b->cap, b->len + more + 1) != 0) b->failed = 1;
    return b->failed ? -1 : 0;
}

static void sb_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(strbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || sb_reserve(b, (size_t)n) != 0) return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* Display width of UTF-8 text: its code points (wide characters are rare
 * enough in names not to warrant a width table). */
static size_t text_width(const char *s)
{
    size_t w = 0;
    for (; *s; s++) w += ((uint8_t)*s & 0xc0) != 0x80;
    return w;
}

/* Appends a name padded to `width` columns. Control characters (a thread
 * may be named anything) become '?' so that a row stays one line. */
static void sb_cell(strbuf *b, const char *s, size_t width)
{
    size_t len = strlen(s), w = text_width(s);
    if (sb_reserve(b, len + (w < width ? width - w : 0)) != 0) return;
    for (size_t i = 0; i < len; i++) {
        uint8_t ch = (uint8_t)s[i];
        b->s[b->len++] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
    }
    for (; w < width; w++) b->s[b->len++] = ' ';
    b->s[b->len] = '\0';
}

/* How times are shown: seconds, or milliseconds when the whole trace is short. */
typedef struct time_unit {
    const char *name;
    double ns;
} time_unit;

static double in_unit(const time_unit *u, uint64_t ns) { return (double)ns / u->ns; }

static double percent(uint64_t part, uint64_t total) { return total ? 100.0 * (double)part / (double)total : 0.0; }

static size_t digits(uint64_t v)
{
    size_t n = 1;
    while (v >= 10) v /= 10, n++;
    return n;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* "file.py:12", or "-" when unknown. */
static void location(const tt_profile_region *r, char *buf, size_t size)
{
    if (!*r->file)
        snprintf(buf, size, "-");
    else if (r->line)
        snprintf(buf, size, "%s:%" PRIu32, base_name(r->file), r->line);
    else
        snprintf(buf, size, "%s", base_name(r->file));
}

/* qsort comparators take no context in C11: the keys are sorted by pointer. */
static int compare_key(uint64_t x, uint64_t y, const char *nx, const char *ny)
{
    if (x != y) return x > y ? -1 : 1;
    return strcmp(nx, ny);
}

static int by_exclusive(const void *a, const void *b)
{
    const tt_profile_region *x = *(const tt_profile_region *const *)a, *y = *(const tt_profile_region *const *)b;
    return compare_key(x->exclusive_ns, y->exclusive_ns, x->name, y->name);
}

static int by_inclusive(const void *a, const void *b)
{
    const tt_profile_region *x = *(const tt_profile_region *const *)a, *y = *(const tt_profile_region *const *)b;
    return compare_key(x->inclusive_ns, y->inclusive_ns, x->name, y->name);
}

static void render_regions(strbuf *b, const tt_profile *p, const time_unit *u, const tt_profile_region **order,
                           size_t top, int inclusive)
{
    for (size_t i = 0; i < p->region_count; i++) order[i] = &p->regions[i];
    qsort(order, p->region_count, sizeof *order, inclusive ? by_inclusive : by_exclusive);
    size_t rows = p->region_count < top ? p->region_count : top;

    size_t visits_w = 6, name_w = 6;
    for (size_t i = 0; i < rows; i++) {
        if (digits(order[i]->visits) > visits_w) visits_w = digits(order[i]->visits);
        if (text_width(order[i]->name) > name_w) name_w = text_width(order[i]->name);
    }
    /* Past this a long name breaks the alignment of its own row only. */
    if (name_w > 60) name_w = 60;

    const char *first = inclusive ? "incl" : "excl", *second = inclusive ? "excl" : "incl";
    char h1[16], h2[16], h3[16];
    snprintf(h1, sizeof h1, "%s %s", first, u->name);
    snprintf(h2, sizeof h2, "%s %%", first);
    snprintf(h3, sizeof h3, "%s %s", second, u->name);
    sb_printf(b, "\nTop regions by %s time\n  %8s  %7s  %8s  %*s  ", inclusive ? "inclusive" : "exclusive", h1, h2, h3,
              (int)visits_w, "visits");
    sb_cell(b, "region", name_w);
    sb_printf(b, "  location\n");
    for (size_t i = 0; i < rows; i++) {
        const tt_profile_region *r = order[i];
        uint64_t key = inclusive ? r->inclusive_ns : r->exclusive_ns;
        uint64_t other = inclusive ? r->exclusive_ns : r->inclusive_ns;
        char loc[512];
        location(r, loc, sizeof loc);
        sb_printf(b, "  %8.3f  %6.1f%%  %8.3f  %*" PRIu64 "  ", in_unit(u, key), percent(key, p->total_ns),
                  in_unit(u, other), (int)visits_w, r->visits);
        sb_cell(b, r->name, name_w);
        sb_printf(b, "  ");
        sb_cell(b, loc, 0);
        sb_printf(b, "\n");
    }
}

typedef struct thread_row {
    size_t index;
    uint64_t span;
} thread_row;

/* Busiest first; ties in trace order. */
static int by_span(const void *a, const void *b)
{
    const thread_row *x = a, *y = b;
    if (x->span != y->span) return x->span > y->span ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

static int by_index(const void *a, const void *b)
{
    const thread_row *x = a, *y = b;
    return (x->index > y->index) - (x->index < y->index);
}

/* Keeps the `top` rows with the longest spans, back in trace order; returns
 * how many rows remain. */
static size_t keep_longest(thread_row *order, size_t rows, size_t top)
{
    if (rows <= top) return rows;
    qsort(order, rows, sizeof *order, by_span);
    qsort(order, top, sizeof *order, by_index);
    return top;
}

/* The threads in trace order; when there are more than `top`, the `top`
 * with the longest spans. */
static void render_threads(strbuf *b, const tt_profile *p, const time_unit *u, thread_row *order, size_t top)
{
    for (size_t i = 0; i < p->thread_count; i++)
        order[i] = (thread_row){i, p->threads[i].end_ns - p->threads[i].begin_ns};
    size_t rows = keep_longest(order, p->thread_count, top);

    size_t pid_w = 7, name_w = 6, events_w = 6;
    for (size_t i = 0; i < rows; i++) {
        const tt_profile_thread *th = &p->threads[order[i].index];
        const tt_process *proc = tt_trace_process(p->trace, th->process);
        const char *name = proc->threads[th->stream].name;
        if (digits(proc->pid) > pid_w) pid_w = digits(proc->pid);
        if (text_width(name) > name_w) name_w = text_width(name);
        if (digits(th->events) > events_w) events_w = digits(th->events);
    }
    if (name_w > 40) name_w = 40;

    char span[16];
    snprintf(span, sizeof span, "span %s", u->name);
    sb_printf(b, "\nThreads\n  %-*s  ", (int)pid_w, "process");
    sb_cell(b, "thread", name_w);
    char cpu[16];
    snprintf(cpu, sizeof cpu, "cpu %s", u->name);
    sb_printf(b, "  %*s  %8s  %8s  %5s  %5s  top region (excl)\n", (int)events_w, "events", span, cpu, "cpu%", "GIL%");
    for (size_t i = 0; i < rows; i++) {
        const tt_profile_thread *th = &p->threads[order[i].index];
        const tt_process *proc = tt_trace_process(p->trace, th->process);
        sb_printf(b, "  %-*" PRIu64 "  ", (int)pid_w, proc->pid);
        sb_cell(b, proc->threads[th->stream].name, name_w);
        sb_printf(b, "  %*" PRIu64 "  %8.3f  ", (int)events_w, th->events, in_unit(u, order[i].span));
        if (th->has_usage)
            sb_printf(b, "%8.3f  %5.1f  ", in_unit(u, th->cpu_ns), percent(th->cpu_ns, order[i].span));
        else
            sb_printf(b, "%8s  %5s  ", "-", "-");
        if (th->samples)
            sb_printf(b, "%5.1f  ", percent(th->gil_samples, th->samples));
        else
            sb_printf(b, "%5s  ", "-");
        sb_cell(b, th->top_region == SIZE_MAX ? "-" : p->regions[th->top_region].name, 0);
        sb_printf(b, "\n");
    }
    if (rows < p->thread_count) sb_printf(b, "  (%zu more threads not shown)\n", p->thread_count - rows);
}

/* The processes in trace order; when there are more than `top`, the `top`
 * with the longest spans. */
static void render_processes(strbuf *b, const tt_profile *p, const time_unit *u, thread_row *order, size_t top)
{
    for (size_t i = 0; i < p->process_count; i++)
        order[i] = (thread_row){i, p->processes[i].end_ns - p->processes[i].begin_ns};
    size_t rows = keep_longest(order, p->process_count, top);
    size_t pid_w = 7, threads_w = 7, events_w = 6;
    for (size_t i = 0; i < rows; i++) {
        const tt_profile_process *pp = &p->processes[order[i].index];
        if (digits(tt_trace_process(p->trace, pp->process)->pid) > pid_w)
            pid_w = digits(tt_trace_process(p->trace, pp->process)->pid);
        if (digits(pp->threads) > threads_w) threads_w = digits(pp->threads);
        if (digits(pp->events) > events_w) events_w = digits(pp->events);
    }
    char span[16];
    snprintf(span, sizeof span, "span %s", u->name);
    sb_printf(b, "\nProcesses\n  %-*s  %*s  %*s  %8s  top region (excl)\n", (int)pid_w, "process", (int)threads_w,
              "threads", (int)events_w, "events", span);
    for (size_t i = 0; i < rows; i++) {
        const tt_profile_process *pp = &p->processes[order[i].index];
        sb_printf(b, "  %-*" PRIu64 "  %*zu  %*" PRIu64 "  %8.3f  ", (int)pid_w,
                  tt_trace_process(p->trace, pp->process)->pid, (int)threads_w, pp->threads, (int)events_w, pp->events,
                  in_unit(u, order[i].span));
        sb_cell(b, pp->top_region == SIZE_MAX ? "-" : p->regions[pp->top_region].name, 0);
        sb_printf(b, "\n");
    }
    if (rows < p->process_count) sb_printf(b, "  (%zu more processes not shown)\n", p->process_count - rows);
}

static int by_bytes(const void *a, const void *b)
{
    const tt_profile_messages *x = *(const tt_profile_messages *const *)a, *y = *(const tt_profile_messages *const *)b;
    if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
    return by_ranks(x, y);
}

static int by_rank_pointers(const void *a, const void *b)
{
    return by_ranks(*(const tt_profile_messages *const *)a, *(const tt_profile_messages *const *)b);
}

/* The communication matrix as a list (the `top` pairs that sent the most
 * bytes, by rank), and the collectives. */
static void render_mpi(strbuf *b, const tt_profile *p, const tt_profile_messages **order, size_t top)
{
    if (p->message_count) {
        for (size_t i = 0; i < p->message_count; i++) order[i] = &p->messages[i];
        size_t rows = p->message_count;
        if (rows > top) {
            qsort(order, rows, sizeof *order, by_bytes);
            rows = top;
            qsort(order, rows, sizeof *order, by_rank_pointers);
        }
        uint64_t count = 0, bytes = 0;
        size_t count_w = 8, bytes_w = 5;
        for (size_t i = 0; i < p->message_count; i++) {
            count += p->messages[i].count;
            bytes += p->messages[i].bytes;
            if (digits(p->messages[i].count) > count_w) count_w = digits(p->messages[i].count);
            if (digits(p->messages[i].bytes) > bytes_w) bytes_w = digits(p->messages[i].bytes);
        }
        sb_printf(b, "\nMPI messages sent, by rank: %" PRIu64 " message%s, %" PRIu64 " bytes\n  %6s  %6s  %*s  %*s\n",
                  count, count == 1 ? "" : "s", bytes, "from", "to", (int)count_w, "messages", (int)bytes_w, "bytes");
        for (size_t i = 0; i < rows; i++)
            sb_printf(b, "  %6" PRIu32 "  %6" PRIu32 "  %*" PRIu64 "  %*" PRIu64 "\n", order[i]->sender,
                      order[i]->receiver, (int)count_w, order[i]->count, (int)bytes_w, order[i]->bytes);
        if (rows < p->message_count) sb_printf(b, "  (%zu more pairs not shown)\n", p->message_count - rows);
    }
    int any = 0;
    for (size_t op = 0; op < TT_PROFILE_COLLECTIVES; op++) any |= p->collectives[op].calls != 0;
    if (!any) return;
    sb_printf(b, "\nMPI collectives, all ranks\n  %-20s  %8s  %14s  %14s\n", "operation", "calls", "bytes sent",
              "bytes received");
    for (size_t op = 0; op < TT_PROFILE_COLLECTIVES; op++) {
        const tt_profile_collective *c = &p->collectives[op];
        if (c->calls)
            sb_printf(b, "  %-20s  %8" PRIu64 "  %14" PRIu64 "  %14" PRIu64 "\n", tt_mpi_collective_name((unsigned)op),
                      c->calls, c->sent, c->received);
    }
}

/* ---- objects ---- */

static uint64_t alive(const tt_profile_objects *o) { return o->created > o->destroyed ? o->created - o->destroyed : 0; }

static int by_type(const void *a, const void *b)
{
    return strcmp((*(const tt_profile_objects *const *)a)->type, (*(const tt_profile_objects *const *)b)->type);
}

static int by_created(const void *a, const void *b)
{
    const tt_profile_objects *x = *(const tt_profile_objects *const *)a, *y = *(const tt_profile_objects *const *)b;
    if (x->created != y->created) return x->created > y->created ? -1 : 1;
    return strcmp(x->type, y->type);
}

/* Leak candidates: most bytes still alive first, then most objects. */
static int by_alive(const void *a, const void *b)
{
    const tt_profile_objects *x = *(const tt_profile_objects *const *)a, *y = *(const tt_profile_objects *const *)b;
    uint64_t bx = alive(x) * x->size, by = alive(y) * y->size;
    if (bx != by) return bx > by ? -1 : 1;
    if (alive(x) != alive(y)) return alive(x) > alive(y) ? -1 : 1;
    return strcmp(x->type, y->type);
}

static const char *creator(const tt_profile *p, const tt_profile_objects *o)
{
    return o->region == NONE ? "(outside any recorded region)" : p->regions[o->region].name;
}

/* Rows of (function, type) with their counts; `leaks`: the alive ones. */
static void render_object_places(strbuf *b, const tt_profile *p, const tt_profile_objects **order, size_t top,
                                 int leaks)
{
    size_t rows = 0;
    for (size_t i = 0; i < p->object_count; i++)
        if (!leaks || alive(&p->objects[i])) order[rows++] = &p->objects[i];
    if (!rows) return;
    qsort(order, rows, sizeof *order, leaks ? by_alive : by_created);
    size_t shown = rows < top ? rows : top, name_w = 8, type_w = 4;
    for (size_t i = 0; i < shown; i++) {
        if (text_width(creator(p, order[i])) > name_w) name_w = text_width(creator(p, order[i]));
        if (text_width(order[i]->type) > type_w) type_w = text_width(order[i]->type);
    }
    if (name_w > 60) name_w = 60;
    if (type_w > 40) type_w = 40;
    if (leaks)
        sb_printf(b, "\nObjects alive at the end, by creating region (leak candidates)\n  %12s  %14s  ", "alive",
                  "bytes");
    else
        sb_printf(b, "\nObjects created, by creating region\n  %12s  %12s  %12s  ", "created", "destroyed", "alive");
    sb_cell(b, "type", type_w);
    sb_printf(b, "  created in\n");
    for (size_t i = 0; i < shown; i++) {
        const tt_profile_objects *o = order[i];
        if (leaks)
            sb_printf(b, "  %12" PRIu64 "  %14" PRIu64 "  ", alive(o), alive(o) * o->size);
        else
            sb_printf(b, "  %12" PRIu64 "  %12" PRIu64 "  %12" PRIu64 "  ", o->created, o->destroyed, alive(o));
        sb_cell(b, o->type, type_w);
        sb_printf(b, "  ");
        sb_cell(b, creator(p, o), 0);
        sb_printf(b, "\n");
    }
    if (shown < rows) sb_printf(b, "  (%zu more not shown)\n", rows - shown);
}

/* The Objects table (per type, over every region), then the places that
 * create the most and those whose objects are still alive. */
static void render_objects(strbuf *b, const tt_profile *p, const tt_profile_objects **order, size_t top)
{
    if (!p->object_count) return;
    for (size_t i = 0; i < p->object_count; i++) order[i] = &p->objects[i];
    qsort(order, p->object_count, sizeof *order, by_type);
    /* One row per type: runs of the sorted places, summed into the first. */
    size_t types = 0;
    uint64_t created = 0, destroyed = 0;
    tt_profile_objects *sums = malloc(p->object_count * sizeof *sums);
    if (!sums) {
        b->failed = 1;
        return;
    }
    for (size_t i = 0; i < p->object_count; i++) {
        if (!types || strcmp(sums[types - 1].type, order[i]->type) != 0)
            sums[types++] = (tt_profile_objects){.type = order[i]->type, .size = order[i]->size};
        sums[types - 1].created += order[i]->created;
        sums[types - 1].destroyed += order[i]->destroyed;
        created += order[i]->created;
        destroyed += order[i]->destroyed;
    }
    for (size_t i = 0; i < types; i++) order[i] = &sums[i];
    qsort(order, types, sizeof *order, by_created);
    size_t shown = types < top ? types : top, type_w = 4;
    for (size_t i = 0; i < shown; i++)
        if (text_width(order[i]->type) > type_w) type_w = text_width(order[i]->type);
    if (type_w > 60) type_w = 60;
    sb_printf(b, "\nObjects: %" PRIu64 " created, %" PRIu64 " destroyed, %" PRIu64 " alive at the end\n  ", created,
              destroyed, created > destroyed ? created - destroyed : 0);
    sb_cell(b, "type", type_w);
    sb_printf(b, "  %12s  %12s  %12s  %14s\n", "created", "destroyed", "alive", "bytes created");
    for (size_t i = 0; i < shown; i++) {
        sb_printf(b, "  ");
        sb_cell(b, order[i]->type, type_w);
        sb_printf(b, "  %12" PRIu64 "  %12" PRIu64 "  %12" PRIu64 "  %14" PRIu64 "\n", order[i]->created,
                  order[i]->destroyed, alive(order[i]), order[i]->created * order[i]->size);
    }
    if (shown < types) sb_printf(b, "  (%zu more types not shown)\n", types - shown);
    free(sums);
    render_object_places(b, p, order, top, 0);
    render_object_places(b, p, order, top, 1);
}

/* One line for the garbage collector, when it ran: collections per
 * generation, their total and longest pause. */
static void render_gc(strbuf *b, const tt_profile *p)
{
    uint64_t collections = 0, total = 0, longest = 0, collected = 0, uncollectable = 0;
    for (size_t g = 0; g < TT_PROFILE_GC_GENERATIONS; g++) {
        collections += p->gc[g].collections;
        total += p->gc[g].total_ns;
        if (p->gc[g].longest_ns > longest) longest = p->gc[g].longest_ns;
        collected += p->gc[g].collected;
        uncollectable += p->gc[g].uncollectable;
    }
    if (!collections) return;
    sb_printf(b,
              "\nGarbage collection: %" PRIu64 " collection%s (gen0 %" PRIu64 ", gen1 %" PRIu64 ", gen2 %" PRIu64
              "), %.3f ms in total (%.1f%%), longest pause %.3f ms\n  %" PRIu64 " objects collected, %" PRIu64
              " uncollectable\n",
              collections, collections == 1 ? "" : "s", p->gc[0].collections, p->gc[1].collections,
              p->gc[2].collections, (double)total / 1e6, percent(total, p->total_ns), (double)longest / 1e6, collected,
              uncollectable);
}

/* How the process ended in words (the trace's "ended" attribute: MANIFEST.md's
 * words), NULL where the trace does not say. */
static const char *ended_as(const tt_process *proc)
{
    for (size_t i = 0; i < proc->attribute_count; i++)
        if (strcmp(proc->attributes[i].key, "ended") == 0) return proc->attributes[i].value;
    return NULL;
}

/* 1 when the process's parent is measured too. */
static int has_parent_in_trace(const tt_trace *t, const tt_process *proc)
{
    for (size_t i = 0; i < tt_trace_process_count(t); i++)
        if (tt_trace_process(t, i)->pid == proc->ppid && tt_trace_process(t, i) != proc) return 1;
    return 0;
}

char *tt_profile_render_text(const tt_profile *p, size_t top)
{
    if (top == 0) top = 25;
    strbuf b = {0};
    size_t nproc = tt_trace_process_count(p->trace);
    time_unit u = p->total_ns >= 100000000 ? (time_unit){"s", 1e9} : (time_unit){"ms", 1e6};

    sb_printf(&b, "tracetop summary \xe2\x80\x94 ");
    if (p->process_count < nproc) sb_printf(&b, "%zu of ", p->process_count); /* of one process */
    sb_printf(&b, "%zu process%s, %zu thread%s, %" PRIu64 " events, %.3f %s measured\n", nproc, nproc == 1 ? "" : "es",
              p->thread_count, p->thread_count == 1 ? "" : "s", p->events, in_unit(&u, p->total_ns), u.name);
    for (size_t i = 0; i < p->process_count; i++) {
        const tt_process *proc = tt_trace_process(p->trace, p->processes[i].process);
        sb_printf(&b, "process %" PRIu64 " \"", proc->pid);
        sb_cell(&b, proc->name, 0);
        sb_printf(&b, "\" (");
        if (proc->mpi_size) sb_printf(&b, "rank %" PRIu64 " of %" PRIu64 ", ", proc->mpi_rank, proc->mpi_size);
        if (has_parent_in_trace(p->trace, proc)) sb_printf(&b, "child of %" PRIu64 ", ", proc->ppid);
        const char *how = ended_as(proc);
        if (!proc->ended)
            sb_printf(&b, "did not end normally");
        else if (how && strcmp(how, "exit status 0") != 0) {
            sb_printf(&b, "ended: ");
            sb_cell(&b, how, 0); /* the trace's, shown as a name is */
        } else
            sb_printf(&b, "ended normally");
        /* A process that ended counted what it recorded: what is not read of it was lost. */
        const tt_profile_process *pp = &p->processes[i];
        if (proc->ended && pp->events < proc->events && tt_trace_whole(p->trace))
            sb_printf(&b, "; %" PRIu64 " of its %" PRIu64 " events lost", proc->events - pp->events, proc->events);
        sb_printf(&b, ")\n");
        if (proc->dropped_chunks)
            sb_printf(&b,
                      "  dropped by --keep %.1f MiB: the oldest %" PRIu64 " chunk%s of events, up to the first %.3f s "
                      "of a thread; the calls profiled are the whole run's, objects and MPI messages those kept\n",
                      (double)proc->keep / (1 << 20), proc->dropped_chunks, proc->dropped_chunks == 1 ? "" : "s",
                      (double)proc->dropped_ns / 1e9);
        uint64_t open = 0;
        for (size_t s = 0; s < proc->thread_count; s++) open += proc->threads[s].open_at_start;
        if (open)
            sb_printf(&b,
                      "  %" PRIu64 " call%s already running when the measurement began (tracetop attach): "
                      "their start is unknown, their time counts from there\n",
                      open, open == 1 ? " was" : "s were");
        for (size_t a = 0; a < proc->attribute_count; a++)
            if (strcmp(proc->attributes[a].key, "not recorded") == 0) {
                sb_printf(&b, "  not recorded: ");
                sb_cell(&b, proc->attributes[a].value, 0);
                sb_printf(&b, "\n");
            }
    }

    const tt_profile_region **regions = malloc((p->region_count ? p->region_count : 1) * sizeof *regions);
    size_t rows = p->thread_count > p->process_count ? p->thread_count : p->process_count;
    thread_row *threads = malloc((rows ? rows : 1) * sizeof *threads);
    const tt_profile_messages **messages = malloc((p->message_count ? p->message_count : 1) * sizeof *messages);
    const tt_profile_objects **objects = malloc((p->object_count ? p->object_count : 1) * sizeof *objects);
    if (regions && threads && messages && objects) {
        render_regions(&b, p, &u, regions, top, 0);
        render_regions(&b, p, &u, regions, top, 1);
        render_threads(&b, p, &u, threads, top);
        if (p->process_count > 1) render_processes(&b, p, &u, threads, top);
        render_mpi(&b, p, messages, top);
        render_objects(&b, p, objects, top);
        render_gc(&b, p);
    }
    free(regions);
    free(threads);
    free(messages);
    free(objects);
    if (!regions || !threads || !messages || !objects || b.failed) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

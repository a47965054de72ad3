/* tasklanes.c -- asyncio tasks as lanes (see tasklanes.h). */
#define _GNU_SOURCE
#include "tasklanes.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "u64map.h"

#define NONE UINT32_MAX

struct tt_open_step {
    size_t lane;
    uint32_t depth; /* the reader's depth once its ENTER was read */
    uint32_t region;
    uint32_t node; /* its call-tree node */
    uint64_t begin, begin_ticks;
};

static int add_await(tt_tasks_reading *r, size_t process, uint32_t region, uint64_t ticks, uint64_t ns,
                     uint64_t suspensions)
{
    tt_tasks *t = r->tasks;
    int fresh;
    uint64_t *index = tt_u64map_slot(&r->awaited, tt_u64_pair((uint32_t)process, region), &fresh);
    if (!index) return -1;
    if (fresh) {
        if (TT_RESERVE(t->awaits, r->await_cap, t->await_count + 1) != 0) return -1;
        *index = t->await_count;
        t->awaits[t->await_count++] = (tt_task_await){.process = process, .region = region};
    }
    t->awaits[*index].suspended_ticks += ticks;
    t->awaits[*index].suspended_ns += ns;
    t->awaits[*index].suspensions += suspensions;
    return 0;
}

/* Adds ticks to the exclusive time of `region` in lane. */
static int add_exclusive(tt_tasks_reading *r, size_t lane, uint32_t region, uint64_t ticks)
{
    int fresh;
    uint64_t *at = tt_u64map_slot(&r->exclusive, tt_u64_pair((uint32_t)lane, region), &fresh);
    if (!at) return -1;
    *at += ticks;
    return 0;
}

/* Stamps node (open at `time`, in ticks) for the segment. */
static int touch(tt_tasks_reading *r, const tt_profile_node *nodes, uint32_t node, uint64_t time)
{
    if (TT_RESERVE(r->touched, r->touched_cap, r->touched_count + 1) != 0) return -1;
    r->touched[r->touched_count++] = node;
    r->seen[node] = r->segment;
    r->start[node] = nodes[node].inclusive_ns + time;
    return 0;
}

/* The innermost open step's segment begins at `time`, cur at `depth` open:
 * the nodes open from its ENTER's depth to cur are touched. */
static int begin_segment(tt_tasks_reading *r, const tt_profile_node *nodes, uint32_t cur, uint32_t depth, uint64_t time)
{
    r->touched_count = 0;
    if (!r->open_count) {
        r->segment = 0;
        r->step_depth = UINT32_MAX;
        return 0;
    }
    if (++r->stamps == UINT32_MAX) { /* after 2^32 - 2 segments: stamps are given again from 1 */
        memset(r->seen, 0, r->seen_cap * sizeof *r->seen);
        r->stamps = 1;
    }
    r->segment = r->stamps;
    r->step_depth = r->open[r->open_count - 1].depth;
    for (uint32_t d = depth; d >= r->step_depth && d != 0; d--, cur = nodes[cur].parent)
        if (touch(r, nodes, cur, time) != 0) return -1;
    return 0;
}

/* The segment ends at `time`, cur at `depth` open: each node touched gives
 * its inclusive time since to its region, and takes it from its parent's. */
static int end_segment(tt_tasks_reading *r, const tt_profile_node *nodes, uint32_t cur, uint32_t depth, uint64_t time)
{
    if (!r->segment) return 0;
    for (uint32_t d = depth; d >= r->step_depth && d != 0; d--, cur = nodes[cur].parent)
        if (r->seen[cur] == r->segment) r->start[cur] -= time; /* open: its inclusive time counts up to now */
    const struct tt_open_step *step = &r->open[r->open_count - 1];
    /* Per node its inclusive ticks in the segment (in start), then its
     * exclusive ticks (in excl): one sum in the map per node. */
    if (TT_RESERVE(r->excl, r->excl_cap, r->start_cap) != 0) return -1;
    for (size_t i = 0; i < r->touched_count; i++) {
        uint32_t n = r->touched[i];
        r->excl[n] = r->start[n] = nodes[n].inclusive_ns - r->start[n];
    }
    for (size_t i = 0; i < r->touched_count; i++)
        if (r->touched[i] != step->node) r->excl[nodes[r->touched[i]].parent] -= r->start[r->touched[i]];
    for (size_t i = 0; i < r->touched_count; i++)
        if (add_exclusive(r, step->lane, nodes[r->touched[i]].region, r->excl[r->touched[i]]) != 0) return -1;
    return 0;
}

int tt_tasks_reading_open(tt_tasks_reading *r, const tt_trace *t, size_t process, tt_error *err)
{
    *r = (tt_tasks_reading){.pending = NONE, .step_depth = UINT32_MAX};
    size_t total = 0;
    for (size_t i = 0; i < tt_trace_process_count(t); i++)
        if (process == SIZE_MAX || process == i) total += tt_trace_process(t, i)->task_count;
    if (!(r->tasks = calloc(1, sizeof *r->tasks)) ||
        !(r->tasks->lanes = calloc(total ? total : 1, sizeof *r->tasks->lanes))) {
        free(r->tasks);
        r->tasks = NULL;
        return tt_fail(err, "out of memory for %zu tasks", total);
    }
    r->tasks->trace = t;
    return 0;
}

void tt_tasks_reading_process(tt_tasks_reading *r, size_t index)
{
    tt_tasks *t = r->tasks;
    r->process = tt_trace_process(t->trace, index);
    r->process_index = index;
    r->first = t->lane_count;
    for (uint32_t k = 0; k < r->process->task_count; k++)
        t->lanes[t->lane_count++] = (tt_task_lane){
            .process = index, .task = k, .first_region = NONE, .top_region = NONE};
}

void tt_tasks_reading_stream(tt_tasks_reading *r, size_t stream)
{
    r->stream = stream;
    r->pending = NONE;
    r->segment = 0;
    r->step_depth = UINT32_MAX;
    r->open_count = 0;
    r->touched_count = 0;
}

int tt_tasks_reading_node(tt_tasks_reading *r, uint32_t node)
{
    if (TT_RESERVE(r->seen, r->seen_cap, (size_t)node + 1) != 0 ||
        TT_RESERVE(r->start, r->start_cap, (size_t)node + 1) != 0)
        return -1;
    r->seen[node] = 0;
    return 0;
}

void tt_tasks_reading_resume(tt_tasks_reading *r, const tt_event *ev)
{
    if (ev->task >= r->process->task_count) { /* the placeholder has no lane */
        r->pending = NONE;
        return;
    }
    r->pending = (uint32_t)(r->first + ev->task);
    if (r->tasks->lanes[r->pending].step_count == 0) r->tasks->lanes[r->pending].stream = r->stream;
}

/* A step of `lane` begins at `time` (`ticks`): the time since its last one
 * was suspended, in the coroutines its last step left. */
static int begin_step(tt_tasks_reading *r, size_t lane_index, const tt_profile_node *nodes, uint32_t node,
                      uint32_t depth, uint64_t time, uint64_t ticks)
{
    tt_task_lane *lane = &r->tasks->lanes[lane_index];
    uint64_t end = lane->step_count ? lane->steps[lane->step_count - 1].end : 0;
    if (lane->step_count && (r->step_ns ? time >= end : ticks >= lane->end_ticks)) {
        uint64_t gap = ticks - lane->end_ticks, gap_ns = time - end;
        lane->suspended_ticks += gap;
        lane->suspended_ns += gap_ns;
        for (size_t i = 0; i < lane->chain_len; i++)
            if (add_await(r, lane->process, lane->chain[i], gap, gap_ns, 1) != 0) return -1;
    }
    if (TT_RESERVE(r->open, r->open_cap, r->open_count + 1) != 0) return -1;
    r->open[r->open_count++] = (struct tt_open_step){lane_index, depth, nodes[node].region, node, time, ticks};
    return 0;
}

int tt_tasks_reading_enter(tt_tasks_reading *r, const tt_profile_node *nodes, uint32_t node, uint32_t depth,
                           uint64_t time, uint64_t ticks)
{
    if (r->pending == NONE) {
        if (!r->segment) { /* stamped by a step that ended */
            r->seen[node] = 0;
            return 0;
        }
        return touch(r, nodes, node, ticks);
    }
    size_t lane = r->pending;
    r->pending = NONE;
    if (end_segment(r, nodes, node, depth, ticks) != 0 || begin_step(r, lane, nodes, node, depth, time, ticks) != 0)
        return -1;
    return begin_segment(r, nodes, node, depth, ticks);
}

int tt_tasks_reading_leave(tt_tasks_reading *r, const tt_profile_node *nodes, uint32_t deepest, uint32_t returns,
                           uint32_t cur, uint32_t depth, uint64_t time, uint64_t ticks)
{
    if (end_segment(r, nodes, cur, depth, ticks) != 0) return -1;
    const struct tt_open_step *o = &r->open[--r->open_count];
    tt_task_lane *lane = &r->tasks->lanes[o->lane];
    if (TT_RESERVE(lane->steps, lane->step_cap, lane->step_count + 1) != 0) return -1;
    lane->steps[lane->step_count++] = (tt_task_step){o->begin, time, o->region};
    lane->running_ticks += ticks - o->begin_ticks;
    lane->running_ns += time - o->begin;
    lane->end_ticks = ticks;
    /* The coroutines among the regions these returns left, outermost first:
     * from the step's own up to the first one left. */
    const tt_process *p = r->process;
    if (TT_RESERVE(r->chain, r->chain_cap, returns) != 0) return -1;
    size_t n = 0;
    for (uint32_t i = 0, at = deepest; i < returns; i++, at = nodes[at].parent)
        if (nodes[at].region < p->region_count && p->regions[nodes[at].region].awaits) r->chain[n++] = nodes[at].region;
    lane->chain_len = 0;
    if (TT_RESERVE(lane->chain, lane->chain_cap, n) != 0) return -1;
    while (n) lane->chain[lane->chain_len++] = r->chain[--n];
    return begin_segment(r, nodes, cur, depth, ticks);
}

int tt_tasks_reading_tree(tt_tasks_reading *r, const tt_stream_tree *tree)
{
    /* Per node: its lane (that of the step's node it is, or is beneath),
     * in seen (NONE: none), and its exclusive ticks, in excl. */
    size_t count = tree->node_count;
    const tt_process *p = r->process;
    if (TT_RESERVE(r->seen, r->seen_cap, count) != 0 || TT_RESERVE(r->excl, r->excl_cap, count) != 0) return -1;
    for (size_t i = 0; i < count; i++) {
        const tt_tree_node *n = &tree->nodes[i];
        r->excl[i] = n->inclusive_ticks;
        if (n->parent != NONE) r->excl[n->parent] -= n->inclusive_ticks;
        uint32_t lane = n->parent == NONE ? NONE : r->seen[n->parent];
        if (n->task < p->task_count) { /* the placeholder has no lane */
            tt_task_lane *l = &r->tasks->lanes[lane = (uint32_t)(r->first + n->task)];
            if (!l->step_count) {
                l->stream = r->stream;
                l->first_region = n->region;
            }
            l->step_count += n->visits;
            l->running_ticks += n->inclusive_ticks;
            l->suspended_ticks += n->suspended_ticks;
        }
        r->seen[i] = lane;
        if (n->suspensions && n->region < p->region_count && p->regions[n->region].awaits &&
            add_await(r, r->process_index, n->region, n->awaited_ticks, 0, n->suspensions) != 0)
            return -1;
    }
    for (size_t i = 0; i < count; i++)
        if (r->seen[i] != NONE && add_exclusive(r, r->seen[i], tree->nodes[i].region, r->excl[i]) != 0) return -1;
    return 0;
}

int tt_trace_has_tasks(const tt_trace *t)
{
    for (size_t i = 0; i < tt_trace_process_count(t); i++)
        if (tt_trace_process(t, i)->task_count) return 1;
    return 0;
}

static int by_begin(const void *x, const void *y)
{
    const tt_task_step *a = x, *b = y;
    return (a->begin > b->begin) - (a->begin < b->begin);
}

static int by_suspended(const void *x, const void *y)
{
    const tt_task_await *a = x, *b = y;
    if (a->suspended_ns != b->suspended_ns) return a->suspended_ns < b->suspended_ns ? 1 : -1;
    return (a->region > b->region) - (a->region < b->region);
}

/* Lanes without a step go; the rest get their most used region; ticks
 * become ns. */
static void finish(tt_tasks_reading *r)
{
    tt_tasks *t = r->tasks;
    uint64_t key, ticks;
    for (size_t at = 0; tt_u64map_next(&r->exclusive, &at, &key, &ticks);) {
        tt_task_lane *lane = &t->lanes[key >> 32];
        uint32_t region = (uint32_t)key;
        /* ties go to the lower region id, so that the map's order never shows */
        if (lane->top_region == NONE || ticks > lane->top_ns || (ticks == lane->top_ns && region < lane->top_region)) {
            lane->top_ns = ticks;
            lane->top_region = region;
        }
    }
    size_t kept = 0;
    for (size_t i = 0; i < t->lane_count; i++) {
        tt_task_lane *lane = &t->lanes[i];
        const tt_process *p = tt_trace_process(t->trace, lane->process);
        free(lane->chain);
        lane->chain = NULL;
        if (!lane->step_count) {
            free(lane->steps);
            continue;
        }
        if (lane->steps) {
            qsort(lane->steps, lane->step_count, sizeof *lane->steps, by_begin);
            lane->first_region = lane->steps[0].region;
        }
        if (!r->step_ns) {
            lane->running_ns = tt_process_duration(p, lane->running_ticks);
            lane->suspended_ns = tt_process_duration(p, lane->suspended_ticks);
        }
        lane->top_ns = tt_process_duration(p, lane->top_ns);
        t->lanes[kept++] = *lane;
    }
    t->lane_count = kept;
    for (size_t i = 0; !r->step_ns && i < t->await_count; i++)
        t->awaits[i].suspended_ns = tt_process_duration(tt_trace_process(t->trace, t->awaits[i].process),
                                                        t->awaits[i].suspended_ticks);
    if (t->await_count) qsort(t->awaits, t->await_count, sizeof *t->awaits, by_suspended); /* NULL when none */
}

int tt_tasks_reading_close(tt_tasks_reading *r, tt_tasks **out, int failed)
{
    *out = NULL;
    if (!failed && r->tasks) {
        finish(r);
        *out = r->tasks;
    } else {
        tt_tasks_free(r->tasks);
    }
    tt_u64map_free(&r->exclusive);
    tt_u64map_free(&r->awaited);
    free(r->seen);
    free(r->start);
    free(r->excl);
    free(r->touched);
    free(r->open);
    free(r->chain);
    *r = (tt_tasks_reading){0};
    return *out ? 0 : -1;
}

int tt_tasks_build(const tt_trace *t, tt_tasks **out, tt_error *err)
{
    return tt_profile_build_tasks(t, SIZE_MAX, NULL, out, err);
}

void tt_tasks_free(tt_tasks *tasks)
{
    if (!tasks) return;
    for (size_t i = 0; i < tasks->lane_count; i++) {
        free(tasks->lanes[i].steps);
        free(tasks->lanes[i].chain);
    }
    free(tasks->lanes);
    free(tasks->awaits);
    free(tasks);
}

const char *tt_task_lane_name(const tt_tasks *tasks, const tt_task_lane *lane)
{
    return tt_trace_process(tasks->trace, lane->process)->task_names[lane->task];
}

size_t tt_task_lane_window(const tt_task_lane *lane, uint64_t begin, uint64_t end, uint64_t gap, uint64_t *out,
                           size_t max)
{
    /* the first step that ends at or after begin */
    size_t lo = 0, hi = lane->step_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (lane->steps[mid].end < begin)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t n = 0;
    uint64_t from = 0, to = 0;
    for (size_t i = lo; i < lane->step_count && lane->steps[i].begin <= end; i++) {
        const tt_task_step *s = &lane->steps[i];
        if (i > lo && s->begin <= to + gap) {
            if (s->end > to) to = s->end;
            continue;
        }
        if (i > lo && n++ < max) {
            out[2 * (n - 1)] = from;
            out[2 * (n - 1) + 1] = to;
        }
        from = s->begin;
        to = s->end;
    }
    if (lo < lane->step_count && lane->steps[lo].begin <= end && n++ < max) {
        out[2 * (n - 1)] = from;
        out[2 * (n - 1) + 1] = to;
    }
    return n;
}

/* ---- text ---- */

static void cell(FILE *f, const char *s, size_t width)
{
    size_t w = 0;
    for (const char *q = s; *q; q++) {
        fputc((uint8_t)*q < 0x20 || *q == 0x7f ? '?' : *q, f);
        w += ((uint8_t)*q & 0xc0) != 0x80;
    }
    for (; w < width; w++) fputc(' ', f);
}

static size_t width_of(const char *s)
{
    size_t w = 0;
    for (; *s; s++) w += ((uint8_t)*s & 0xc0) != 0x80;
    return w;
}

static const char *region_name(const tt_tasks *tasks, size_t process, uint32_t region)
{
    const tt_process *p = tt_trace_process(tasks->trace, process);
    return region == NONE ? "-" : p->regions[region < p->region_count ? region : p->region_count].name;
}

char *tt_tasks_render_text(const tt_tasks *tasks, size_t top)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return NULL;
    if (tasks->lane_count) {
        uint64_t running = 0, suspended = 0, steps = 0;
        size_t name_w = 4, thread_w = 6, first_w = 15;
        for (size_t i = 0; i < tasks->lane_count; i++) {
            const tt_task_lane *l = &tasks->lanes[i];
            const tt_process *p = tt_trace_process(tasks->trace, l->process);
            running += l->running_ns;
            suspended += l->suspended_ns;
            steps += l->step_count;
            if (i >= top) continue;
            size_t w = width_of(tt_task_lane_name(tasks, l));
            if (w > name_w) name_w = w;
            if ((w = width_of(p->threads[l->stream].name)) > thread_w) thread_w = w;
            if ((w = width_of(region_name(tasks, l->process, l->first_region))) > first_w) first_w = w;
        }
        fprintf(f, "\nAsyncio tasks: %zu task%s, %" PRIu64 " steps, %.3f ms running, %.3f ms suspended (awaiting)\n  ",
                tasks->lane_count, tasks->lane_count == 1 ? "" : "s", steps, (double)running / 1e6,
                (double)suspended / 1e6);
        cell(f, "task", name_w);
        fputs("  ", f);
        cell(f, "thread", thread_w);
        fputs("   steps    running ms  suspended ms  ", f);
        cell(f, "first coroutine", first_w);
        fputs("  most time in\n", f);
        for (size_t i = 0; i < tasks->lane_count && i < top; i++) {
            const tt_task_lane *l = &tasks->lanes[i];
            const tt_process *p = tt_trace_process(tasks->trace, l->process);
            fputs("  ", f);
            cell(f, tt_task_lane_name(tasks, l), name_w);
            fputs("  ", f);
            cell(f, p->threads[l->stream].name, thread_w);
            fprintf(f, "  %6zu  %12.3f  %12.3f  ", l->step_count, (double)l->running_ns / 1e6,
                    (double)l->suspended_ns / 1e6);
            cell(f, region_name(tasks, l->process, l->first_region), first_w);
            fputs("  ", f);
            cell(f, region_name(tasks, l->process, l->top_region), 0);
            fputc('\n', f);
        }
        if (tasks->lane_count > top) fprintf(f, "  (%zu more tasks not shown)\n", tasks->lane_count - top);
    }
    if (tasks->await_count) {
        size_t name_w = 9;
        for (size_t i = 0; i < tasks->await_count && i < top; i++) {
            size_t w = width_of(region_name(tasks, tasks->awaits[i].process, tasks->awaits[i].region));
            if (w > name_w) name_w = w;
        }
        fputs("\nAwait time per coroutine (suspended at an await, with the coroutines awaiting it)\n  ", f);
        cell(f, "coroutine", name_w);
        fputs("  suspended ms  suspensions\n", f);
        for (size_t i = 0; i < tasks->await_count && i < top; i++) {
            const tt_task_await *a = &tasks->awaits[i];
            fputs("  ", f);
            cell(f, region_name(tasks, a->process, a->region), name_w);
            fprintf(f, "  %12.3f  %11" PRIu64 "\n", (double)a->suspended_ns / 1e6, a->suspensions);
        }
        if (tasks->await_count > top) fprintf(f, "  (%zu more coroutines not shown)\n", tasks->await_count - top);
    }
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

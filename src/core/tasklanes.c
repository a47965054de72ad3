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

typedef struct open_step {
    size_t lane;
    uint32_t depth; /* the reader's depth once its ENTER was read */
    uint32_t region;
    uint64_t begin;
} open_step;

typedef struct builder {
    tt_tasks *tasks;
    size_t await_cap;
    tt_u64map exclusive; /* (lane, region) -> ns */
    tt_u64map awaited;   /* (process, region) -> index into awaits */
    uint32_t *regions; /* by depth: the region open there */
    size_t region_cap;
    /* By depth: the value in `exclusive` that the region open there adds to
     * (key: its lane and region), good while the map has as many keys as
     * then (u64map.h: a value stays where it is until a new key; NULL:
     * none yet). Every event in a step adds to one: a lookup only when the
     * region at a depth changed, or a key was added, not per event nor per
     * call of a loop. The first place_count are set. */
    struct {
        uint64_t key;
        uint64_t *value;
        size_t keys;
    } *places;
    size_t place_cap, place_count;
    open_step *open;
    size_t open_count, open_cap;
} builder;

static int add_await(builder *b, size_t process, uint32_t region, uint64_t ns)
{
    tt_tasks *t = b->tasks;
    int fresh;
    uint64_t *index = tt_u64map_slot(&b->awaited, tt_u64_pair((uint32_t)process, region), &fresh);
    if (!index) return -1;
    if (fresh) {
        if (TT_RESERVE(t->awaits, b->await_cap, t->await_count + 1) != 0) return -1;
        *index = t->await_count;
        t->awaits[t->await_count++] = (tt_task_await){.process = process, .region = region};
    }
    t->awaits[*index].suspended_ns += ns;
    t->awaits[*index].suspensions++;
    return 0;
}

/* A step of lane begins at `time`: the time since its last one was
 * suspended, in the coroutines its last step left. */
static int begin_step(builder *b, size_t lane_index, const tt_event *ev)
{
    tt_task_lane *lane = &b->tasks->lanes[lane_index];
    if (lane->step_count && ev->time >= lane->steps[lane->step_count - 1].end) {
        uint64_t gap = ev->time - lane->steps[lane->step_count - 1].end;
        lane->suspended_ns += gap;
        for (size_t i = 0; i < lane->chain_len; i++)
            if (add_await(b, lane->process, lane->chain[i], gap) != 0) return -1;
    }
    if (TT_RESERVE(b->open, b->open_cap, b->open_count + 1) != 0) return -1;
    b->open[b->open_count++] = (open_step){lane_index, ev->depth, ev->region, ev->time};
    return 0;
}

/* The innermost open step ends with this LEAVE, the last of `returns` in a
 * row: the coroutines among the regions they left are what awaits. */
static int end_step(builder *b, const tt_process *p, const tt_event *ev, uint32_t returns)
{
    open_step *o = &b->open[--b->open_count];
    tt_task_lane *lane = &b->tasks->lanes[o->lane];
    if (TT_RESERVE(lane->steps, lane->step_cap, lane->step_count + 1) != 0) return -1;
    lane->steps[lane->step_count++] = (tt_task_step){o->begin, ev->time, o->region};
    lane->running_ns += ev->time - o->begin;
    lane->chain_len = 0;
    for (uint32_t d = ev->depth; d < ev->depth + returns && d < b->region_cap; d++) {
        uint32_t region = b->regions[d];
        if (region >= p->region_count || !p->regions[region].awaits) continue;
        if (TT_RESERVE(lane->chain, lane->chain_cap, lane->chain_len + 1) != 0) return -1;
        lane->chain[lane->chain_len++] = region;
    }
    return 0;
}

/* The exclusive ns of the region open at `depth` (1 ..) in the innermost
 * open step, found in the map: key is (its lane, the region). NULL when
 * memory runs out. */
static uint64_t *__attribute__((noinline)) exclusive_found(builder *b, uint32_t depth, uint64_t key)
{
    if (TT_RESERVE(b->places, b->place_cap, (size_t)depth) != 0) return NULL;
    for (; b->place_count < depth; b->place_count++) b->places[b->place_count].value = NULL;
    int fresh;
    uint64_t *ns = tt_u64map_slot(&b->exclusive, key, &fresh);
    if (!ns) return NULL;
    b->places[depth - 1].key = key;
    b->places[depth - 1].value = ns;
    b->places[depth - 1].keys = b->exclusive.count;
    return ns;
}

/* The innermost open step, as the loop keeps it at hand: its depth
 * (UINT32_MAX for none) and its lane, shifted as in the keys. */
typedef struct inner_step {
    uint32_t depth;
    uint64_t lane;
} inner_step;

static inner_step innermost(const builder *b)
{
    if (!b->open_count) return (inner_step){UINT32_MAX, 0};
    return (inner_step){b->open[b->open_count - 1].depth, tt_u64_pair((uint32_t)b->open[b->open_count - 1].lane, 0)};
}

/* The ns since the last event, at `depth` (the depth before this event):
 * exclusive time of the region open there when it is in a step. 0, or -1
 * when memory runs out. */
static inline int add_exclusive(builder *b, inner_step step, uint32_t depth, uint64_t ns)
{
    if (depth < step.depth || !depth || depth > b->region_cap) return 0;
    uint64_t key = step.lane | b->regions[depth - 1];
    uint64_t *at;
    if (depth <= b->place_count && b->places[depth - 1].value && b->places[depth - 1].key == key &&
        b->places[depth - 1].keys == b->exclusive.count)
        at = b->places[depth - 1].value;
    else if (!(at = exclusive_found(b, depth, key)))
        return -1;
    *at += ns;
    return 0;
}

/* Calls read at a time (tt_cursor_next_calls). */
#define CALLS 256

/* Reads one stream of process `process`, whose tasks' lanes start at `first`.
 * ENTER and LEAVE come in bulk, other events one at a time, all through the
 * same steps. */
static int read_stream(builder *b, size_t process, size_t stream, size_t first, tt_error *err)
{
    const tt_trace *t = b->tasks->trace;
    const tt_process *p = tt_trace_process(t, process);
    tt_cursor *c;
    if (tt_cursor_open(t, p, stream, &c, err) != 0) return -1;
    tt_call calls[CALLS];
    tt_event ev;
    uint32_t pending = NONE, returns = 0, depth = 0;
    uint64_t last = 0;
    int rc = 0;
    b->open_count = 0;
    inner_step step = innermost(b);
    while (rc == 0) {
        size_t n = tt_cursor_next_calls(c, calls, CALLS);
        if (!n) {
            if (!tt_cursor_next(c, &ev)) break;
            if (ev.kind == TT_EV_ENTER || ev.kind == TT_EV_LEAVE) {
                calls[0] = (tt_call){.time = ev.time, .region = ev.region, .depth = ev.depth, .kind = ev.kind};
                n = 1;
            } else {
                rc = add_exclusive(b, step, depth, ev.time - last);
                last = ev.time;
                if (ev.kind == TT_EV_TASK_RESUME) {
                    pending = ev.task < p->task_count ? ev.task : NONE; /* the placeholder has no lane */
                    if (pending != NONE && b->tasks->lanes[first + pending].step_count == 0)
                        b->tasks->lanes[first + pending].stream = stream;
                }
                continue;
            }
        }
        if (!b->open_count && pending == NONE) {
            /* Outside every step, with none about to begin: the calls matter
             * only for the depth they leave (and the time). A step begins
             * with an ENTER, which sets what these would have (returns, the
             * regions from its depth on). */
            depth = calls[n - 1].depth;
            last = calls[n - 1].time;
            continue;
        }
        for (const tt_call *call = calls; rc == 0 && call < calls + n; call++) {
            if ((rc = add_exclusive(b, step, depth, call->time - last)) != 0) break;
            last = call->time;
            /* What begin_step and end_step read of it. */
            ev.time = call->time;
            ev.region = call->region;
            ev.depth = call->depth;
            if (call->kind == TT_EV_ENTER) {
                returns = 0;
                if (TT_RESERVE(b->regions, b->region_cap, (size_t)call->depth) != 0) rc = -1;
                else b->regions[call->depth - 1] = call->region;
                if (rc == 0 && pending != NONE) {
                    rc = begin_step(b, first + pending, &ev);
                    step = innermost(b);
                }
                pending = NONE;
            } else {
                returns++;
                if (step.depth == call->depth + 1) {
                    rc = end_step(b, p, &ev, returns);
                    step = innermost(b);
                }
            }
            depth = call->depth;
        }
    }
    tt_cursor_close(c);
    if (rc != 0) tt_fail(err, "out of memory reading the tasks of process %" PRIu64, p->pid);
    return rc;
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

/* Lanes without a step go; the rest get their most used region. */
static void finish(builder *b)
{
    tt_tasks *t = b->tasks;
    uint64_t key, ns;
    for (size_t at = 0; tt_u64map_next(&b->exclusive, &at, &key, &ns);) {
        tt_task_lane *lane = &t->lanes[key >> 32];
        uint32_t region = (uint32_t)key;
        /* ties go to the lower region id, so that the map's order never shows */
        if (lane->top_region == NONE || ns > lane->top_ns || (ns == lane->top_ns && region < lane->top_region)) {
            lane->top_ns = ns;
            lane->top_region = region;
        }
    }
    size_t kept = 0;
    for (size_t i = 0; i < t->lane_count; i++) {
        tt_task_lane *lane = &t->lanes[i];
        free(lane->chain);
        lane->chain = NULL;
        if (!lane->step_count) {
            free(lane->steps);
            continue;
        }
        qsort(lane->steps, lane->step_count, sizeof *lane->steps, by_begin);
        t->lanes[kept++] = *lane;
    }
    t->lane_count = kept;
    if (t->await_count) qsort(t->awaits, t->await_count, sizeof *t->awaits, by_suspended); /* NULL when none */
}

int tt_tasks_build(const tt_trace *t, tt_tasks **out, tt_error *err)
{
    tt_tasks *tasks = calloc(1, sizeof *tasks);
    builder b = {.tasks = tasks};
    size_t total = 0;
    for (size_t i = 0; i < tt_trace_process_count(t); i++) total += tt_trace_process(t, i)->task_count;
    if (!tasks || !(tasks->lanes = calloc(total ? total : 1, sizeof *tasks->lanes))) {
        free(tasks);
        tt_fail(err, "out of memory for %zu tasks", total);
        return -1;
    }
    tasks->trace = t;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < tt_trace_process_count(t); i++) {
        const tt_process *p = tt_trace_process(t, i);
        size_t first = tasks->lane_count;
        for (uint32_t k = 0; k < p->task_count; k++)
            tasks->lanes[tasks->lane_count++] = (tt_task_lane){.process = i, .task = k, .top_region = NONE};
        for (size_t s = 0; rc == 0 && p->task_count && s < p->thread_count; s++)
            if (p->threads[s].present) rc = read_stream(&b, i, s, first, err);
    }
    if (rc == 0) finish(&b);
    tt_u64map_free(&b.exclusive);
    tt_u64map_free(&b.awaited);
    free(b.regions);
    free(b.places);
    free(b.open);
    if (rc != 0) {
        tt_tasks_free(tasks);
        return -1;
    }
    *out = tasks;
    return 0;
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

void tt_tasks_keep_process(tt_tasks *tasks, size_t process)
{
    size_t kept = 0;
    for (size_t i = 0; i < tasks->lane_count; i++) {
        if (tasks->lanes[i].process == process) tasks->lanes[kept++] = tasks->lanes[i];
        else free(tasks->lanes[i].steps);
    }
    tasks->lane_count = kept;
    kept = 0;
    for (size_t i = 0; i < tasks->await_count; i++)
        if (tasks->awaits[i].process == process) tasks->awaits[kept++] = tasks->awaits[i];
    tasks->await_count = kept;
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
        if (lane->steps[mid].end < begin) lo = mid + 1;
        else hi = mid;
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
            if ((w = width_of(region_name(tasks, l->process, l->steps[0].region))) > first_w) first_w = w;
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
            cell(f, region_name(tasks, l->process, l->steps[0].region), first_w);
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
        if (tasks->await_count > top)
            fprintf(f, "  (%zu more coroutines not shown)\n", tasks->await_count - top);
    }
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

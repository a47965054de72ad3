/* lod_trace.c -- level 0 of the index read from the trace (lod_file.h):
 * the calls that a chunk of a lane's stream holds whole, decoded by the one
 * reader (reader.h) from where the index found the chunk (tt_cursor_seek),
 * and kept for the queries that follow (a view reads a chunk or two per
 * lane, the next view mostly the same ones).
 *
 * A chunk is taken as the index found it or not at all: its checksum, its
 * events and its last time must be the ones the index counted, else the
 * trace changed (or was cut, or damaged) since the index was made, and the
 * first such problem is kept, in one line, for tt_lod_read_problem.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "lod_file.h"
#include "reader.h"

#define NONE UINT32_MAX

/* Chunks kept decoded: some 16,000 calls each at most (64 KiB of records,
 * four bytes a call at least), 400 KiB. */
#define LOD_CACHED_CHUNKS 32

typedef struct kept_chunk {
    size_t lane, chunk;
    uint64_t used;      /* 0: empty */
    tt_lod_span *spans; /* by depth, each depth's in start order */
    uint32_t *at;       /* the spans at depth low + k: [at[k], at[k + 1]) */
    uint32_t low, high;
} kept_chunk;

struct lod_trace {
    pthread_mutex_t lock; /* queries run in any number of threads */
    char *dir;
    int opened;
    tt_trace *trace;    /* NULL until opened, or when it cannot be */
    uint32_t **regions; /* per process of the trace: its region ids -> the index's (NONE: not yet) */
    size_t process_count;
    uint32_t *by_name; /* the index's regions, in the order of their names */
    kept_chunk kept[LOD_CACHED_CHUNKS];
    uint64_t used;
    char *problem;
};

lod_trace *lod_trace_new(const char *experiment_dir)
{
    lod_trace *r = calloc(1, sizeof *r);
    if (!r || !(r->dir = strdup(experiment_dir))) {
        free(r);
        return NULL;
    }
    pthread_mutex_init(&r->lock, NULL);
    return r;
}

void lod_trace_free(lod_trace *r)
{
    if (!r) return;
    for (size_t i = 0; i < LOD_CACHED_CHUNKS; i++) {
        free(r->kept[i].spans);
        free(r->kept[i].at);
    }
    for (size_t i = 0; i < r->process_count; i++) free(r->regions[i]);
    free(r->regions);
    free(r->by_name);
    tt_trace_close(r->trace);
    pthread_mutex_destroy(&r->lock);
    free(r->problem);
    free(r->dir);
    free(r);
}

const char *lod_trace_problem(lod_trace *r)
{
    pthread_mutex_lock(&r->lock);
    const char *problem = r->problem;
    pthread_mutex_unlock(&r->lock);
    return problem;
}

static void say(lod_trace *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(lod_trace *r, const char *fmt, ...)
{
    if (r->problem) return; /* the first one says it */
    char line[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    r->problem = strdup(line);
}

static int by_region_name(const void *a, const void *b, void *x)
{
    return strcmp(tt_lod_region(x, *(const uint32_t *)a).name, tt_lod_region(x, *(const uint32_t *)b).name);
}

/* The index's region named as region `id` of process p (the builder merged
 * them by name, lod_build.c), or NONE. */
static uint32_t region_of(const tt_lod *x, lod_trace *r, size_t process, const tt_process *p, uint32_t id)
{
    if (!r->by_name) {
        size_t n = tt_lod_region_count(x);
        if (!(r->by_name = malloc((n ? n : 1) * sizeof *r->by_name))) return NONE;
        for (size_t i = 0; i < n; i++) r->by_name[i] = (uint32_t)i;
        qsort_r(r->by_name, n, sizeof *r->by_name, by_region_name, (void *)x);
    }
    if (!r->regions) {
        r->process_count = tt_trace_process_count(r->trace);
        if (!(r->regions = calloc(r->process_count ? r->process_count : 1, sizeof *r->regions))) return NONE;
    }
    uint32_t **map = &r->regions[process];
    if (!*map) {
        if (!(*map = malloc((p->region_count + 1) * sizeof **map))) return NONE;
        for (size_t i = 0; i <= p->region_count; i++) (*map)[i] = NONE;
    }
    if ((*map)[id] != NONE) return (*map)[id];
    const char *name = p->regions[id].name;
    size_t lo = 0, hi = tt_lod_region_count(x);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int cmp = strcmp(tt_lod_region(x, r->by_name[mid]).name, name);
        if (cmp == 0) return (*map)[id] = r->by_name[mid];
        if (cmp < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NONE;
}

typedef struct placed_call {
    uint32_t depth;
    tt_lod_span span;
} placed_call;

typedef struct open_call {
    uint64_t start;
    uint32_t region; /* CUT_CALL: the part of a call after a gap */
} open_call;

/* The region of an open call cut by a gap (reader.h), whose span the index
 * keeps itself (lod_build.c), as it does the parts before a gap. */
#define CUT_CALL UINT32_MAX

/* Reads chunk `chunk` of `lane` into k: 0, or -1 (k empty) when it is not
 * as the index found it (said) or memory runs out. */
static int decode(const tt_lod *x, lod_trace *r, size_t lane, size_t chunk, kept_chunk *k)
{
    size_t n;
    const lod_chunk_rec *ch = &lod_lane_chunks(x, lane, &n)[chunk];
    tt_lod_lane_info info = tt_lod_lane(x, lane);
    if (!r->opened) {
        tt_error err;
        r->opened = 1;
        if (tt_trace_open(r->dir, &r->trace, &err) != 0) {
            r->trace = NULL;
            say(r, "cannot read the calls from the trace: %s", err.message);
        }
    }
    if (!r->trace) return -1;
    size_t process = lod_lane_process(x, lane);
    const tt_process *p = process < tt_trace_process_count(r->trace) ? tt_trace_process(r->trace, process) : NULL;
    if (!p || p->pid != info.pid || info.stream >= p->thread_count || !p->threads[info.stream].present) {
        say(r, "the trace changed since its index was made: process %" PRIu64 " stream %" PRIu32 " is gone", info.pid,
            info.stream);
        return -1;
    }
    tt_cursor *c;
    tt_error err;
    if (tt_cursor_open(r->trace, p, info.stream, &c, &err) != 0) {
        say(r, "cannot read the calls from the trace: %s", err.message);
        return -1;
    }
    tt_chunk_start at = {ch->offset, ch->before_time, ch->before_ticks, ch->seq, ch->depth, ch->crc};
    placed_call *calls = NULL;
    open_call *stack = NULL;
    size_t count = 0, cap = 0, top = 0, stack_cap = 0;
    uint64_t events = 0, last = 0;
    int rc = tt_cursor_seek(c, &at);
    /* Calls in bulk (tt_cursor_next_calls: never past a chunk's end), any
     * other event one at a time: the one that starts the next chunk ends it. */
    tt_call bulk[256];
    for (int more = rc == 0; more;) {
        tt_event ev;
        size_t got = tt_cursor_next_calls(c, bulk, sizeof bulk / sizeof bulk[0]);
        if (got == 0) {
            if (!tt_cursor_next(c, &ev) || ev.kind == TT_EV_STREAM_END) break;
            if (ev.synthesized && ev.kind == TT_EV_ENTER) {
                if (TT_RESERVE(stack, stack_cap, top + 1) != 0) {
                    rc = -1;
                    break;
                }
                stack[top++] = (open_call){ev.time, CUT_CALL};
            }
            if (ev.synthesized) { /* a gap's edge; or the stream's end, where nothing follows */
                if (ev.kind == TT_EV_LEAVE && top) top--;
                continue;
            }
            const tt_chunk_start *now = tt_cursor_chunk(c);
            if (now->seq != ch->seq || (events == 0 && now->crc != ch->crc)) break;
            bulk[0] = (tt_call){.time = ev.time, .region = ev.region, .depth = ev.depth, .kind = ev.kind};
            got = 1;
        }
        events += got;
        last = bulk[got - 1].time;
        for (size_t i = 0; i < got; i++) {
            const tt_call *e = &bulk[i];
            if (e->kind == TT_EV_ENTER) {
                uint32_t region = region_of(x, r, process, p, e->region);
                if (region == NONE || TT_RESERVE(stack, stack_cap, top + 1) != 0) {
                    rc = -1;
                    more = 0;
                    break;
                }
                stack[top++] = (open_call){e->time, region};
            } else if (e->kind == TT_EV_LEAVE && top && stack[top - 1].region == CUT_CALL) {
                top--;
            } else if (e->kind == TT_EV_LEAVE && top) { /* (else a call begun before the chunk: not its) */
                if (TT_RESERVE(calls, cap, count + 1) != 0) {
                    rc = -1;
                    more = 0;
                    break;
                }
                top--;
                calls[count++] = (placed_call){e->depth, {stack[top].start, e->time, stack[top].region, 1}};
            }
        }
    }
    if (rc == 0 && (events != ch->events || last != ch->last)) {
        const char *why = tt_cursor_problem(c);
        if (why && events < ch->events)
            say(r, "the trace changed since its index was made: %s", why);
        else
            say(r,
                "the trace changed since its index was made: process %" PRIu64 " stream %" PRIu32 " chunk %" PRIu32
                " is not the one it was",
                info.pid, info.stream, ch->seq);
        rc = -1;
    }
    tt_cursor_close(c);
    free(stack);
    /* By depth (counted), each depth's in the order they came: start order. */
    uint32_t low = UINT32_MAX, high = 0;
    for (size_t i = 0; rc == 0 && i < count; i++) {
        if (calls[i].depth < low) low = calls[i].depth;
        if (calls[i].depth >= high) high = calls[i].depth + 1;
    }
    if (rc == 0 && count) {
        k->at = calloc((size_t)(high - low) + 1, sizeof *k->at);
        k->spans = malloc(count * sizeof *k->spans);
        if (!k->at || !k->spans) rc = -1;
    }
    if (rc == 0 && count) {
        for (size_t i = 0; i < count; i++) k->at[calls[i].depth - low + 1]++;
        for (uint32_t d = 1; d <= high - low; d++) k->at[d] += k->at[d - 1];
        for (size_t i = 0; i < count; i++) k->spans[k->at[calls[i].depth - low]++] = calls[i].span;
        for (uint32_t d = high - low; d > 0; d--) k->at[d] = k->at[d - 1];
        k->at[0] = 0;
        k->low = low;
        k->high = high;
    }
    free(calls);
    return rc;
}

size_t lod_chunk_spans(const tt_lod *x, size_t lane, size_t chunk, uint32_t depth, size_t from, tt_lod_span *out,
                       size_t max)
{
    lod_trace *r = lod_trace_of(x);
    pthread_mutex_lock(&r->lock);
    kept_chunk *k = NULL, *oldest = &r->kept[0];
    for (size_t i = 0; i < LOD_CACHED_CHUNKS && !k; i++) {
        if (r->kept[i].used && r->kept[i].lane == lane && r->kept[i].chunk == chunk) k = &r->kept[i];
        if (r->kept[i].used < oldest->used) oldest = &r->kept[i];
    }
    if (!k) {
        k = oldest;
        free(k->spans);
        free(k->at);
        *k = (kept_chunk){.lane = lane, .chunk = chunk};
        if (decode(x, r, lane, chunk, k) != 0) { /* kept empty: said once */
            free(k->spans);
            free(k->at);
            *k = (kept_chunk){.lane = lane, .chunk = chunk};
        }
    }
    k->used = ++r->used;
    size_t n = 0;
    if (depth >= k->low && depth < k->high) {
        uint32_t first = k->at[depth - k->low], end = k->at[depth - k->low + 1];
        if (from < end - first) {
            n = end - first - from < max ? end - first - from : max;
            memcpy(out, k->spans + first + from, n * sizeof *out);
        }
    }
    pthread_mutex_unlock(&r->lock);
    return n;
}

/* agg.c -- per-thread and per-function statistics of a live process (see
 * agg.h). tt_agg_slice is top's hot path: ENTER and LEAVE records are
 * decoded inline (records.h) and each costs a push or a pop and a few
 * additions; what happens once a second or once a CPU sample (the end of
 * a second, sharing CPU time out) waits for the first event past the
 * thread's next boundary. */
#include "agg.h"

#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "grow.h"
#include "records.h"

#define NONE UINT32_MAX
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* ---- functions ---- */

static uint64_t hash_function(const char *name, const char *file, uint32_t line)
{
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a over name, NUL, file, line */
    for (const char *s = name; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ULL;
    h *= 0x100000001b3ULL;
    for (const char *s = file; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ULL;
    return (h ^ line) * 0x100000001b3ULL;
}

void tt_functions_free(tt_functions *t)
{
    for (size_t i = 0; i < t->count; i++) {
        free(t->items[i].name);
        free(t->items[i].file);
    }
    free(t->items);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

static int functions_rehash(tt_functions *t)
{
    size_t size = t->slots ? (t->mask + 1) * 2 : 256;
    uint32_t *slots = calloc(size, sizeof *slots);
    if (!slots) return -1;
    for (size_t i = 0; i < t->count; i++) {
        const tt_function *f = &t->items[i];
        size_t j = hash_function(f->name, f->file, f->line) & (size - 1);
        while (slots[j]) j = (j + 1) & (size - 1);
        slots[j] = (uint32_t)i + 1;
    }
    free(t->slots);
    t->slots = slots;
    t->mask = size - 1;
    return 0;
}

uint32_t tt_functions_intern(tt_functions *t, const char *name, const char *file, uint32_t line)
{
    if ((t->count + 1) * 2 > (t->slots ? t->mask + 1 : 0) && functions_rehash(t) < 0) return NONE;
    size_t j = hash_function(name, file, line) & t->mask;
    for (; t->slots[j]; j = (j + 1) & t->mask) {
        const tt_function *f = &t->items[t->slots[j] - 1];
        if (f->line == line && strcmp(f->name, name) == 0 && strcmp(f->file, file) == 0) return t->slots[j] - 1;
    }
    if (TT_RESERVE(t->items, t->cap, t->count + 1) < 0) return NONE;
    char *n = strdup(name), *f = strdup(file);
    if (!n || !f) {
        free(n);
        free(f);
        return NONE;
    }
    t->items[t->count] = (tt_function){n, f, line};
    t->slots[j] = (uint32_t)++t->count;
    return (uint32_t)t->count - 1;
}

/* ---- definitions ---- */

void tt_agg_init(tt_agg_process *p, tt_functions *functions)
{
    memset(p, 0, sizeof *p);
    p->functions = functions;
}

static void free_thread(tt_agg_thread *th)
{
    if (!th) return;
    free(th->stack);
    free(th->stats);
    free(th->second_touched);
    free(th->usage_touched);
    if (th->ring)
        for (uint32_t i = 0; i < TT_AGG_WINDOW_MAX; i++) free(th->ring[i].entries);
    free(th->ring);
    free(th);
}

void tt_agg_free(tt_agg_process *p)
{
    for (uint32_t i = 0; i < p->string_count; i++) free(p->strings[i]);
    free(p->strings);
    free(p->regions);
    free(p->objtypes);
    for (uint32_t i = 0; i < p->thread_cap; i++) free_thread(p->threads[i]);
    free(p->threads);
    memset(p, 0, sizeof *p);
}

const char *tt_agg_string(const tt_agg_process *p, uint32_t id)
{
    return id < p->string_count && p->strings[id] ? p->strings[id] : "";
}

static const char *const beyond = "the live channel names an id beyond what it defined";

static tt_agg_thread *thread_of(tt_agg_process *p, uint64_t stream)
{
    if (stream >= p->id_bound || stream >= UINT32_MAX / 2) return NULL;
    if (stream >= p->thread_cap) {
        uint32_t cap = p->thread_cap ? p->thread_cap : 8;
        while (cap <= stream) cap *= 2;
        tt_agg_thread **grown = realloc(p->threads, cap * sizeof *grown);
        if (!grown) return NULL;
        memset(grown + p->thread_cap, 0, (cap - p->thread_cap) * sizeof *grown);
        p->threads = grown;
        p->thread_cap = cap;
    }
    if (!p->threads[stream]) {
        tt_agg_thread *th = calloc(1, sizeof *th);
        if (!th) return NULL;
        th->stream = (uint32_t)stream;
        th->name = NONE;
        th->second_generation = th->usage_generation = th->epoch = 1; /* 0: a function on neither list */
        th->boundary = UINT64_MAX;
        p->threads[stream] = th;
    }
    return p->threads[stream];
}

static int define_string(tt_agg_process *p, uint64_t id, const uint8_t *bytes, size_t len)
{
    size_t cap = p->string_cap;
    if (TT_RESERVE(p->strings, cap, id + 1) < 0) return -1;
    p->string_cap = (uint32_t)cap;
    while (p->string_count <= id) p->strings[p->string_count++] = NULL;
    free(p->strings[id]);
    if (!(p->strings[id] = malloc(len + 1))) return -1;
    memcpy(p->strings[id], bytes, len);
    p->strings[id][len] = '\0';
    return 0;
}

static int define_region(tt_agg_process *p, const tt_def_record *d)
{
    uint64_t id = d->region.id;
    size_t cap = p->region_cap;
    if (TT_RESERVE(p->regions, cap, id + 1) < 0) return -1;
    p->region_cap = (uint32_t)cap;
    while (p->region_count <= id) p->regions[p->region_count++].function = NONE;
    uint32_t name = d->region.name < p->string_count ? (uint32_t)d->region.name : NONE;
    uint32_t file = d->region.file < p->string_count ? (uint32_t)d->region.file : NONE;
    uint32_t f = tt_functions_intern(p->functions, tt_agg_string(p, name), tt_agg_string(p, file),
                                     (uint32_t)d->region.line);
    if (f == NONE) return -1;
    p->regions[id].function = f;
    p->regions[id].code = d->region.kind == TT_REGION_PYTHON || d->region.kind == TT_REGION_USER ||
                          d->region.kind == TT_REGION_GC;
    return 0;
}

static int usage_sample(tt_agg_process *p, const tt_def_record *d); /* with the events, below */

int tt_agg_defs(tt_agg_process *p, const uint8_t *log, size_t len, const char **why)
{
    if (len <= p->defs_read) return 0;
    tt_records it;
    tt_records_init(&it, log + p->defs_read, len - p->defs_read, 0, NULL);
    tt_def_record d;
    int rc;
    if (len > p->id_bound) p->id_bound = len;
    while ((rc = tt_records_next_def(&it, &d, why)) == 1) {
        int failed = 0;
        uint64_t id = d.tag == TT_DEF_STRING         ? d.string.id
                      : d.tag == TT_DEF_REGION       ? d.region.id
                      : d.tag == TT_DEF_THREAD       ? d.thread.stream
                      : d.tag == TT_DEF_THREAD_USAGE ? d.thread_usage.stream
                                                     : 0;
        if (id >= p->id_bound || id >= UINT32_MAX / 2) {
            *why = beyond;
            return -1;
        }
        switch (d.tag) {
        case TT_DEF_STRING:
            failed = define_string(p, d.string.id, d.string.bytes, d.string.len);
            break;
        case TT_DEF_REGION:
            failed = define_region(p, &d);
            break;
        case TT_DEF_THREAD: {
            tt_agg_thread *th = thread_of(p, d.thread.stream);
            failed = !th;
            if (th) th->name = d.thread.name < NONE ? (uint32_t)d.thread.name : NONE;
            break;
        }
        case TT_DEF_PROCESS:
            p->pid = d.process.pid;
            p->clock = d.process.clock;
            p->ticks_per_second = d.process.ticks_per_second;
            break;
        case TT_DEF_PROCESS_END:
            p->ended = 1;
            break;
        case TT_DEF_THREAD_USAGE:
            failed = usage_sample(p, &d);
            break;
        default: /* clock readings and attributes: top needs neither */
            break;
        }
        if (failed) {
            *why = "out of memory";
            return -1;
        }
        p->defs_read = (size_t)(it.pos - log);
    }
    return rc;
}

/* ---- events ---- */

static int grow_stats(tt_agg_process *p, tt_agg_thread *th, uint64_t region)
{
    if (region >= p->id_bound || region >= UINT32_MAX / 2) return -1;
    size_t want = region + 1 > p->region_count ? region + 1 : p->region_count;
    size_t cap = th->stat_cap;
    tt_agg_stat *stats = th->stats;
    if (TT_RESERVE(stats, cap, want) < 0) return -1;
    memset(stats + th->stat_cap, 0, (cap - th->stat_cap) * sizeof *stats);
    th->stats = stats;
    th->stat_cap = (uint32_t)cap;
    return 0;
}

static inline uint64_t exclusive_of(const tt_agg_stat *st) { return st->done.exclusive + st->second.exclusive; }

/* Puts the region on the thread's list of the current second, and of the
 * current CPU sample's span. Every region on the stack is on both: its
 * counts may change until the next event. */
static int touch(tt_agg_thread *th, uint32_t region)
{
    tt_agg_stat *st = &th->stats[region];
    if (st->second_mark != th->second_generation) {
        if (TT_RESERVE(th->second_touched, th->second_cap, th->second_count + 1) < 0) return -1;
        th->second_touched[th->second_count++] = region;
        st->second_mark = th->second_generation;
    }
    if (st->usage_mark != th->usage_generation) {
        if (TT_RESERVE(th->usage_touched, th->usage_cap, th->usage_count + 1) < 0) return -1;
        th->usage_touched[th->usage_count++] = region;
        st->usage_mark = th->usage_generation;
        st->usage_from = exclusive_of(st);
    }
    st->mark = th->epoch;
    return 0;
}

/* The stack's regions on both lists again, one of them just started over. */
static int touch_stack(tt_agg_thread *th)
{
    th->epoch++;
    for (uint32_t d = 0; d < th->depth; d++)
        if (touch(th, th->stack[d].region) < 0) return -1;
    return 0;
}

/* The exclusive time up to `now` goes to the call on top of the stack
 * (its frame, the hot memory; its region's counts have it as it returns,
 * or as a second ends or a CPU sample is taken: flush_frames). */
static inline void accrue(tt_agg_thread *th, uint64_t now)
{
    if (now <= th->accrued) return;
    if (th->depth) th->stack[th->depth - 1].own += now - th->accrued;
    th->accrued = now;
}

static void flush_frames(tt_agg_thread *th)
{
    for (uint32_t d = 0; d < th->depth; d++) {
        th->stats[th->stack[d].region].second.exclusive += th->stack[d].own;
        th->stack[d].own = 0;
    }
}

/* The inclusive time of the calls open, outermost activations, up to `now`. */
static void count_open(tt_agg_thread *th, uint64_t now)
{
    for (uint32_t d = 0; d < th->depth; d++) {
        tt_agg_frame *f = &th->stack[d];
        if (f->outer && now > f->counted) th->stats[f->region].second.inclusive += now - f->counted;
        if (now > f->counted) f->counted = now;
    }
}

static uint64_t next_boundary(const tt_agg_process *p, const tt_agg_thread *th)
{
    uint64_t end = p->ticks_per_second ? th->second_start + p->ticks_per_second : UINT64_MAX;
    return th->pending_count && th->pending[0].ticks < end ? th->pending[0].ticks : end;
}

/* The current second ends: its counts go to the ring and to `done`. */
static int end_second(tt_agg_process *p, tt_agg_thread *th)
{
    uint64_t end = th->second_start + p->ticks_per_second;
    accrue(th, end);
    flush_frames(th);
    count_open(th, end);
    if (!th->ring && !(th->ring = calloc(TT_AGG_WINDOW_MAX, sizeof *th->ring))) return -1;
    tt_agg_second *slot = &th->ring[th->ring_head];
    size_t cap = slot->cap;
    if (TT_RESERVE(slot->entries, cap, th->second_count) < 0) return -1;
    slot->cap = (uint32_t)cap;
    slot->start = th->second_start;
    slot->count = 0;
    for (size_t i = 0; i < th->second_count; i++) {
        uint32_t r = th->second_touched[i];
        tt_agg_stat *st = &th->stats[r];
        tt_agg_counts c = st->second;
        if (!c.calls && !c.exclusive && !c.inclusive && !c.cpu) continue;
        slot->entries[slot->count++] = (tt_agg_entry){r, c};
        st->done.calls += c.calls;
        st->done.exclusive += c.exclusive;
        st->done.inclusive += c.inclusive;
        st->done.cpu += c.cpu;
        st->second = (tt_agg_counts){0};
    }
    th->ring_head = (th->ring_head + 1) % TT_AGG_WINDOW_MAX;
    if (th->ring_count < TT_AGG_WINDOW_MAX) th->ring_count++;
    th->second_start = end;
    th->second_count = 0;
    th->second_generation++;
    return touch_stack(th);
}

/* A CPU sample, the thread's events counted up to its time: the CPU time
 * since the last is shared among the functions that ran since (agg.h),
 * then a span begins. */
static int take_usage(tt_agg_process *p, tt_agg_thread *th, const tt_agg_usage *u)
{
    const tt_agg_usage *last = &th->usage;
    flush_frames(th);
    if (th->usage_known && u->cpu_ns >= last->cpu_ns && u->samples >= last->samples &&
        u->gil_samples - last->gil_samples <= u->samples - last->samples && u->ticks >= last->ticks &&
        p->ticks_per_second) {
        double cpu = (double)(u->cpu_ns - last->cpu_ns) * (double)p->ticks_per_second / 1e9;
        double code = 0, other = 0;
        for (size_t i = 0; i < th->usage_count; i++) {
            uint32_t r = th->usage_touched[i];
            double own = (double)(exclusive_of(&th->stats[r]) - th->stats[r].usage_from);
            if (r < p->region_count && p->regions[r].code)
                code += own;
            else
                other += own;
        }
        /* The time the thread held the GIL; the CPU time where it is not
         * known. Code holds it first; C functions the rest, and any CPU
         * time beyond, as some compute with the GIL released. */
        uint64_t samples = u->samples - last->samples, gil = u->gil_samples - last->gil_samples;
        double held = gil ? (double)(u->ticks - last->ticks) * (double)gil / (double)samples : cpu;
        double busy_code = held < code ? held : code;
        double busy_other = held - busy_code < other ? held - busy_code : other;
        if (cpu > busy_code + busy_other) busy_other = cpu - busy_code < other ? cpu - busy_code : other;
        /* The CPU the thread had while busy: at most one tick a tick. */
        double rate = busy_code + busy_other > 0 ? cpu / (busy_code + busy_other) : 0;
        if (rate > 1) rate = 1;
        for (size_t i = 0; i < th->usage_count; i++) {
            uint32_t r = th->usage_touched[i];
            tt_agg_stat *st = &th->stats[r];
            uint64_t own = exclusive_of(st) - st->usage_from;
            if (!own) continue;
            double share = r < p->region_count && p->regions[r].code ? busy_code / code : busy_other / other;
            st->second.cpu += (uint64_t)((double)own * share * rate + 0.5);
        }
    }
    th->usage_known = 1;
    th->usage = *u;
    th->usage_count = 0;
    th->usage_generation++;
    return touch_stack(th);
}

static void drop_oldest_sample(tt_agg_thread *th)
{
    memmove(th->pending, th->pending + 1, --th->pending_count * sizeof *th->pending);
}

/* Takes the oldest CPU sample waiting. */
static int take_pending(tt_agg_process *p, tt_agg_thread *th)
{
    tt_agg_usage u = th->pending[0];
    accrue(th, u.ticks);
    drop_oldest_sample(th);
    return take_usage(p, th, &u);
}

/* What is due before the event at `now`: seconds that end, CPU samples. */
static int cross(tt_agg_process *p, tt_agg_thread *th, uint64_t now)
{
    while (th->boundary <= now) {
        int rc = th->pending_count && th->pending[0].ticks == th->boundary ? take_pending(p, th) : end_second(p, th);
        if (rc < 0) return -1;
        th->boundary = next_boundary(p, th);
    }
    return 0;
}

/* A THREAD_USAGE definition: taken at once when the thread's events are
 * past its time (or the thread has ended); else kept until they are, or
 * until the thread's first slice says where its events begin. */
static int usage_sample(tt_agg_process *p, const tt_def_record *d)
{
    tt_agg_thread *th = thread_of(p, d->thread_usage.stream);
    if (!th) return -1;
    tt_agg_usage u = {d->thread_usage.ticks, d->thread_usage.cpu_ns, d->thread_usage.samples,
                      d->thread_usage.gil_samples};
    if (th->seen && (th->ended || u.ticks <= th->accrued)) return take_usage(p, th, &u);
    if (th->pending_count == TT_AGG_USAGE_PENDING) drop_oldest_sample(th); /* its span and the next make one */
    th->pending[th->pending_count++] = u;
    if (th->seen) th->boundary = next_boundary(p, th);
    return 0;
}

/* The thread's events begin (again) at `base`, nothing open: its last CPU
 * sample by then begins the next span. */
static void restart_usage(tt_agg_thread *th, uint64_t base)
{
    th->usage_count = 0;
    th->usage_generation++;
    th->epoch++;
    th->usage_known = 0;
    while (th->pending_count && th->pending[0].ticks <= base) {
        th->usage_known = 1;
        th->usage = th->pending[0];
        drop_oldest_sample(th);
    }
}

/* 0, or -1 when out of memory, -2 when the region is beyond id_bound. */
static inline int enter(tt_agg_process *p, tt_agg_thread *th, uint64_t region, uint64_t now)
{
    if (unlikely(region >= th->stat_cap)) {
        if (region >= p->id_bound) return -2;
        if (grow_stats(p, th, region) < 0) return -1;
    }
    if (unlikely(th->depth == th->stack_cap)) {
        size_t cap = th->stack_cap;
        if (TT_RESERVE(th->stack, cap, th->depth + 1) < 0) return -1;
        th->stack_cap = (uint32_t)cap;
    }
    accrue(th, now);
    tt_agg_stat *st = &th->stats[region];
    if (unlikely(st->mark != th->epoch) && touch(th, (uint32_t)region) < 0) return -1;
    th->stack[th->depth++] = (tt_agg_frame){(uint32_t)region, st->active == 0, now, now, 0};
    st->second.calls++;
    st->active++;
    return 0;
}

/* ---- the sink ---- */

void tt_agg_sink_clear(tt_agg_sink *k)
{
    k->span_count = k->sample_count = 0;
    k->spans_lost = k->samples_lost = 0;
}

void tt_agg_sink_free(tt_agg_sink *k)
{
    free(k->spans);
    free(k->samples);
    memset(k, 0, sizeof *k);
}

static void keep_span(tt_agg_process *p, const tt_agg_thread *th, const tt_agg_frame *f, uint64_t now)
{
    tt_agg_sink *k = p->sink;
    if (k->span_count >= k->limit || TT_RESERVE(k->spans, k->span_cap, k->span_count + 1) < 0) {
        k->spans_lost++;
        return;
    }
    uint32_t function = f->region < p->region_count ? p->regions[f->region].function : NONE;
    k->spans[k->span_count++] = (tt_agg_span){(uint32_t)p->pid, th->stream, function, th->depth, f->enter, now};
}

static void keep_sample(tt_agg_process *p, const tt_agg_thread *th, const tt_event_record *r, double value)
{
    tt_agg_sink *k = p->sink;
    if (k->sample_count >= k->limit || r->id >= NONE ||
        TT_RESERVE(k->samples, k->sample_cap, k->sample_count + 1) < 0) {
        k->samples_lost++;
        return;
    }
    k->samples[k->sample_count++] = (tt_agg_sample){(uint32_t)p->pid, th->stream, (uint32_t)r->id, r->ticks, value};
}

/* 0, or -1 when out of memory, -2 when the type is beyond id_bound. */
static int count_objects(tt_agg_process *p, const tt_event_record *r)
{
    uint64_t type = r->objects.type;
    if (type >= p->id_bound || type >= UINT32_MAX / 2) return -2;
    if (type >= p->objtype_cap) {
        size_t cap = p->objtype_cap;
        tt_agg_objtype *grown = p->objtypes;
        if (TT_RESERVE(grown, cap, type + 1) < 0) return -1;
        memset(grown + p->objtype_cap, 0, (cap - p->objtype_cap) * sizeof *grown);
        p->objtypes = grown;
        p->objtype_cap = (uint32_t)cap;
    }
    tt_agg_objtype *o = &p->objtypes[type];
    o->created += r->objects.created;
    o->destroyed += r->objects.destroyed;
    /* Never below none (agg.h): those destroyed beyond were made before top attached. */
    o->alive += (int64_t)r->objects.created - (int64_t)r->objects.destroyed;
    if (o->alive < 0) o->alive = 0;
    p->objects++;
    return 0;
}

static inline void leave(tt_agg_process *p, tt_agg_thread *th, uint64_t now)
{
    if (unlikely(th->depth == 0)) return; /* entered before top saw this thread */
    accrue(th, now);
    tt_agg_frame *f = &th->stack[--th->depth];
    if (unlikely(p->sink != NULL) && now - f->enter >= p->sink->min_ticks) keep_span(p, th, f, now);
    tt_agg_stat *st = &th->stats[f->region];
    st->second.exclusive += f->own;
    if (f->outer && now > f->counted) st->second.inclusive += now - f->counted;
    st->active--;
}

/* A gap begins `now` (see agg.h): the calls open have their time counted
 * up to it, and no more until it ends. */
static void begin_gap(tt_agg_thread *th, uint64_t now)
{
    accrue(th, now);
    count_open(th, now);
    for (uint32_t d = 0; d < th->depth; d++) th->stack[d].counted = TT_AGG_NEVER;
    th->accrued = TT_AGG_NEVER;
    th->off_at = now ? now : 1;
}

/* The gap begun at th->off_at ends `now`: the calls open count again from
 * now, and their spans (the sink's) leave the gap out. */
static void end_gap(tt_agg_thread *th, uint64_t now)
{
    uint64_t gap = now > th->off_at ? now - th->off_at : 0;
    for (uint32_t d = 0; d < th->depth; d++) {
        th->stack[d].enter += gap;
        th->stack[d].counted = now;
    }
    th->accrued = now;
    th->off_at = 0;
}

static void close_open_calls(tt_agg_process *p, tt_agg_thread *th)
{
    while (th->depth) leave(p, th, th->ticks);
}

int tt_agg_slice(tt_agg_process *p, const tt_live_slice *s, const char **why)
{
    tt_agg_thread *th = thread_of(p, s->stream);
    if (!th) {
        *why = s->stream >= p->id_bound ? beyond : "out of memory";
        return -1;
    }
    uint32_t skip = 0;
    if (th->seen && s->seq == th->seq && s->offset <= th->offset && th->offset <= s->offset + s->len) {
        skip = th->offset - s->offset; /* continues the last slice */
    } else if (s->offset == 0) {
        /* The first slice of this thread, or a new start after a loss. */
        if (th->seen) {
            close_open_calls(p, th);
            th->off_at = 0; /* a gap's end may be in what was lost */
            p->resyncs++;
        } else {
            th->since = s->base_ticks;
            th->second_start = p->ticks_per_second ? s->base_ticks - s->base_ticks % p->ticks_per_second : 0;
        }
        restart_usage(th, s->base_ticks);
        th->ticks = th->accrued = s->base_ticks;
        memset(&th->predict, 0, sizeof th->predict); /* a chunk's start */
        th->seen = 1;
        th->boundary = next_boundary(p, th);
    } else {
        return 0; /* cannot be decoded before the start of its chunk comes */
    }

    const uint8_t *at = s->data + skip, *end = s->data + s->len;
    uint64_t ticks = th->ticks, events = 0;
    int failed;
    while (at < end) {
        if (likely(end - at >= (ptrdiff_t)TT_RECORD_MAX_FIXED)) {
            uint8_t tag;
            uint64_t dt = 0, id = 0;
            const uint8_t *next = tt_records_peek_call(at, &th->predict, &tag, &dt, &id);
            if (likely(next != NULL)) {
                tt_records_took_call(&th->predict, tag, id);
                ticks += dt;
                if (unlikely(ticks >= th->boundary) && (failed = cross(p, th, ticks)) < 0) goto fail;
                if (tag == TT_EV_ENTER) {
                    if (unlikely((failed = enter(p, th, id, ticks)) < 0)) goto fail;
                } else {
                    leave(p, th, ticks);
                }
                at = next;
                events++;
                continue;
            }
        }
        tt_records it;
        tt_event_record r;
        tt_records_resume(&it, at, (size_t)(end - at), ticks, &th->predict);
        if (tt_records_next_event(&it, &r, why) < 0) {
            th->ticks = ticks;
            return -1;
        }
        ticks = r.ticks;
        if (ticks >= th->boundary && (failed = cross(p, th, ticks)) < 0) goto fail;
        if (r.tag == TT_EV_ENTER) {
            if ((failed = enter(p, th, r.id, ticks)) < 0) goto fail;
            if (r.again) th->stats[r.id].second.calls--; /* a part that goes on (format.h: ENTER_AGAIN), no call */
        } else if (r.tag == TT_EV_LEAVE) {
            leave(p, th, ticks);
        } else if (p->sink && r.tag == TT_EV_COUNTER) {
            keep_sample(p, th, &r, r.double_value);
        } else if (p->sink && r.tag == TT_EV_PARAM_INT) {
            keep_sample(p, th, &r, (double)r.int_value);
        } else if (p->sink && r.tag == TT_EV_PARAM_UINT) {
            keep_sample(p, th, &r, (double)r.uint_value);
        } else if (r.tag == TT_EV_OBJECTS) {
            if ((failed = count_objects(p, &r)) < 0) goto fail;
        } else if (r.tag == TT_EV_RECORDING_OFF) {
            if (!th->off_at) begin_gap(th, ticks);
        } else if (r.tag == TT_EV_RECORDING_ON) {
            if (th->off_at) end_gap(th, ticks);
        } else if (r.tag == TT_EV_STREAM_END) {
            th->ticks = ticks;
            close_open_calls(p, th);
            th->ended = 1;
            /* Its last CPU samples: no event will come past their time. */
            while (th->pending_count)
                if (take_pending(p, th) < 0) {
                    failed = -1;
                    goto fail;
                }
            th->boundary = next_boundary(p, th);
        }
        at = it.pos;
        events++;
    }
    th->ticks = ticks;
    th->events += events;
    p->events += events;
    p->bytes += s->len - skip;
    if (s->flags & TT_LIVE_END) {
        th->seq = s->seq + 1;
        th->offset = 0;
        memset(&th->predict, 0, sizeof th->predict); /* the next chunk decodes on its own */
    } else {
        th->seq = s->seq;
        th->offset = s->offset + s->len;
    }
    return 0;

fail:
    th->ticks = ticks;
    *why = failed == -2 ? beyond : "out of memory";
    return -1;
}

void tt_agg_reset(tt_agg_process *p)
{
    for (uint32_t i = 0; i < p->objtype_cap; i++) p->objtypes[i].created = p->objtypes[i].destroyed = 0;
    for (uint32_t i = 0; i < p->thread_cap; i++) {
        tt_agg_thread *th = p->threads[i];
        if (!th) continue;
        for (uint32_t r = 0; r < th->stat_cap; r++) {
            tt_agg_stat *st = &th->stats[r];
            st->done = st->second = (tt_agg_counts){0};
            st->usage_from = 0;
        }
        for (uint32_t d = 0; d < th->depth; d++) {
            th->stack[d].enter = th->ticks;
            th->stack[d].counted = th->off_at ? TT_AGG_NEVER : th->ticks;
            th->stack[d].own = 0;
        }
        th->ring_count = 0;
        if (th->ticks > th->accrued) th->accrued = th->ticks;
        th->since = th->ticks;
        th->events = 0;
    }
}

/* view.c -- rows for top's screen from the watch's aggregations (view.h). */
#include "view.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

#define NONE UINT32_MAX
/* Rows kept steady: the top of the list, where the eye is; the rest is
 * sorted exactly. */
#define STEADY_ROWS 256

void tt_view_init(tt_view *v)
{
    memset(v, 0, sizeof *v);
    v->stream = -1;
}

void tt_view_free(tt_view *v)
{
    free(v->rows);
    free(v->rank);
    free(v->acc);
    free(v->touched);
    memset(v, 0, sizeof *v);
}

void tt_view_set_sort(tt_view *v, enum tt_sort sort)
{
    v->sort = sort;
    v->steady = 0;
}

void tt_view_set_window(tt_view *v, unsigned window)
{
    v->window = window < TT_AGG_WINDOW_MAX ? window : TT_AGG_WINDOW_MAX;
    v->steady = 0;
}

void tt_view_set_scope(tt_view *v, long pid, long stream)
{
    v->pid = pid;
    v->stream = pid ? stream : -1;
    v->steady = 0;
}

void tt_view_set_filter(tt_view *v, const char *filter)
{
    snprintf(v->filter, sizeof v->filter, "%s", filter);
    v->steady = 0;
}

const char *tt_sort_name(enum tt_sort sort)
{
    static const char *const names[TT_SORT_COUNT] = {"own", "cpu", "total", "calls", "%desc"};
    return sort < TT_SORT_COUNT ? names[sort] : "?";
}

/* ---- threads ---- */

static int shown(const tt_agg_thread *th) { return th && th->seen; }

int tt_view_thread_live(const tt_watched *p, const tt_agg_thread *th)
{
    return shown(th) && !th->ended && tt_watched_running(p);
}

/* 1 when thread (pid, stream) comes after the scope's in `t`'s order. */
static int after_scope(const tt_view *v, const tt_watch *w, size_t process, uint32_t stream)
{
    for (size_t i = 0; i < w->count; i++)
        if (w->procs[i]->pid == v->pid) return process > i || (process == i && stream > (uint64_t)v->stream);
    return 1; /* the scope's process is gone: start again */
}

void tt_view_next_thread(tt_view *v, const tt_watch *w)
{
    int from_all = v->pid == 0 || v->stream < 0;
    for (size_t i = 0; i < w->count; i++) {
        const tt_watched *p = w->procs[i];
        for (uint32_t s = 0; s < p->agg.thread_cap; s++)
            if (tt_view_thread_live(p, p->agg.threads[s]) && (from_all || after_scope(v, w, i, s))) {
                tt_view_set_scope(v, p->pid, s);
                return;
            }
    }
    tt_view_set_scope(v, 0, -1);
}

tt_view_thread tt_view_scope_thread(const tt_view *v, const tt_watch *w)
{
    if (v->pid && v->stream >= 0)
        for (size_t i = 0; i < w->count; i++) {
            const tt_agg_process *a = &w->procs[i]->agg;
            if (w->procs[i]->pid == v->pid && (uint64_t)v->stream < a->thread_cap && shown(a->threads[v->stream]))
                return (tt_view_thread){w->procs[i], a->threads[v->stream]};
        }
    return (tt_view_thread){NULL, NULL};
}

/* ---- building ---- */

static int touch(tt_view *v, uint32_t function)
{
    tt_row *r = &v->acc[function];
    if (r->function == NONE) {
        if (TT_RESERVE(v->touched, v->touched_cap, v->touched_count + 1) < 0) return -1;
        v->touched[v->touched_count++] = function;
        *r = (tt_row){.function = function};
    }
    return 0;
}

/* Adds counts of region r of process a to its function's row. */
static int add_counts(tt_view *v, const tt_agg_process *a, uint32_t r, const tt_agg_counts *c, double tick)
{
    if (r >= a->region_count || a->regions[r].function == NONE) return 0;
    if (!c->calls && !c->exclusive && !c->inclusive && !c->cpu) return 0;
    uint32_t f = a->regions[r].function;
    if (touch(v, f) < 0) return -1;
    tt_row *row = &v->acc[f];
    row->calls += c->calls;
    row->own += (double)c->exclusive * tick;
    row->total += (double)c->inclusive * tick;
    row->cpu += (double)c->cpu * tick;
    return 0;
}

/* Adds one thread's counts from `from` (ticks: the window's start, a
 * second's) on, its running calls up to `now`. */
static int add_thread(tt_view *v, const tt_watched *p, const tt_agg_thread *th, uint64_t from, uint64_t now)
{
    const tt_agg_process *a = &p->agg;
    double tick = 1.0 / (double)a->ticks_per_second;
    uint64_t begin = th->since > from ? th->since : from;
    if (now > begin) {
        double covered = (double)(now - begin) * tick;
        v->seconds += covered;
        if (covered > v->wall) v->wall = covered;
        v->thread_count++;
    }

    if (!v->window) {
        uint32_t regions = th->stat_cap < a->region_count ? th->stat_cap : a->region_count;
        for (uint32_t r = 0; r < regions; r++) {
            tt_agg_counts c = tt_agg_total(th, r);
            if (add_counts(v, a, r, &c, tick) < 0) return -1;
        }
    } else {
        /* The seconds that ended within the window, newest first; then the
         * current one. One that began before the window's start holds
         * nothing after it (agg.h: a second ends at the first event past
         * it), so running calls count from the window's start. */
        for (uint32_t k = 0; k < th->ring_count; k++) {
            const tt_agg_second *second = &th->ring[(th->ring_head + TT_AGG_WINDOW_MAX - 1 - k) % TT_AGG_WINDOW_MAX];
            if (second->start < from) break;
            for (uint32_t e = 0; e < second->count; e++)
                if (add_counts(v, a, second->entries[e].region, &second->entries[e].counts, tick) < 0) return -1;
        }
        if (th->second_start >= from)
            for (size_t i = 0; i < th->second_count; i++)
                if (add_counts(v, a, th->second_touched[i], &th->stats[th->second_touched[i]].second, tick) < 0)
                    return -1;
    }

    /* Calls open: each holds the own time of the current second not yet in
     * its counts (agg.h); the one on top owns the time since its thread's
     * last event too, and the outermost activation of each function adds
     * to its total. Nothing runs in a gap (agg.h: TT_AGG_NEVER). */
    int current = th->second_start >= from;
    for (uint32_t d = 0; d < th->depth; d++) {
        const tt_agg_frame *frame = &th->stack[d];
        uint64_t own = current ? frame->own : 0;
        uint64_t own_from = th->accrued > from ? th->accrued : from;
        if (d + 1 == th->depth && now > own_from) own += now - own_from;
        uint64_t total_from = frame->counted > from ? frame->counted : from;
        tt_agg_counts c = {0, own, frame->outer && now > total_from ? now - total_from : 0, 0};
        if (add_counts(v, a, frame->region, &c, tick) < 0) return -1;
    }
    return 0;
}

/* Adds the threads of one process the scope takes. */
static int add_process(tt_view *v, const tt_watched *p)
{
    const tt_agg_process *a = &p->agg;
    if (!a->ticks_per_second || (v->pid && p->pid != v->pid)) return 0;
    int running = tt_watched_running(p);
    /* The process's now: the clock's while it runs, else its last event. */
    uint64_t clock = running ? tt_watched_now(p) : 0;
    for (uint32_t s = 0; !running && s < a->thread_cap; s++)
        if (shown(a->threads[s]) && a->threads[s]->ticks > clock) clock = a->threads[s]->ticks;
    uint64_t from = 0, span = (uint64_t)v->window * a->ticks_per_second;
    if (v->window) {
        uint64_t second = clock - clock % a->ticks_per_second;
        from = second > span ? second - span : 0;
    }
    for (uint32_t s = 0; s < a->thread_cap; s++) {
        const tt_agg_thread *th = a->threads[s];
        if (!shown(th) || (v->stream >= 0 && th->stream != (uint64_t)v->stream)) continue;
        uint64_t now = th->ticks;
        if (!th->ended && running && p->measuring && clock > now) now = clock;
        if (add_thread(v, p, th, from, now) < 0) return -1;
    }
    return 0;
}

static int contains(const char *text, const char *part)
{
    size_t n = strlen(part);
    for (; *text; text++) {
        size_t i = 0;
        while (i < n && text[i] && tolower((unsigned char)text[i]) == tolower((unsigned char)part[i])) i++;
        if (i == n) return 1;
    }
    return n == 0;
}

static double key(const tt_row *r, enum tt_sort sort)
{
    switch (sort) {
    case TT_SORT_CPU:
        return r->cpu;
    case TT_SORT_TOTAL:
        return r->total;
    case TT_SORT_CALLS:
        return (double)r->calls;
    case TT_SORT_DESCENDANTS:
        return r->desc_percent;
    default:
        return r->own;
    }
}

/* qsort gives its comparator no context: top builds one view at a time. */
static const tt_view *sorting;
static const tt_watch *sorting_watch;

static int by_key(const void *x, const void *y)
{
    const tt_row *a = x, *b = y;
    double ka = key(a, sorting->sort), kb = key(b, sorting->sort);
    if (ka != kb) return ka > kb ? -1 : 1;
    return strcmp(sorting_watch->functions.items[a->function].name, sorting_watch->functions.items[b->function].name);
}

/* The row's place in the last build, or NONE. */
static uint32_t last_rank(const tt_view *v, uint32_t function)
{
    return function < v->rank_cap ? v->rank[function] : NONE;
}

static int by_last_rank(const void *x, const void *y)
{
    const tt_row *a = x, *b = y;
    uint32_t ra = last_rank(sorting, a->function), rb = last_rank(sorting, b->function);
    if (ra != rb) return ra < rb ? -1 : 1;
    return by_key(x, y);
}

/* a goes above b only when it leads by more than the margin. */
static int leads(const tt_row *a, const tt_row *b, enum tt_sort sort)
{
    double ka = key(a, sort), kb = key(b, sort);
    return ka > kb && ka > kb * (1.0 + TT_VIEW_STEADY);
}

static void order(tt_view *v, const tt_watch *w)
{
    sorting = v;
    sorting_watch = w;
    qsort(v->rows, v->row_count, sizeof *v->rows, by_key);
    if (!v->steady) return;
    /* The top rows in their last order (newcomers after, by key), each
     * moved up past those it leads by the margin. */
    size_t n = v->row_count < STEADY_ROWS ? v->row_count : STEADY_ROWS;
    qsort(v->rows, n, sizeof *v->rows, by_last_rank);
    for (size_t i = 1; i < n; i++) {
        tt_row x = v->rows[i];
        size_t j = i;
        for (; j > 0 && leads(&x, &v->rows[j - 1], v->sort); j--) v->rows[j] = v->rows[j - 1];
        v->rows[j] = x;
    }
}

int tt_view_build(tt_view *v, const tt_watch *w)
{
    size_t functions = w->functions.count;
    size_t old = v->acc_cap;
    if (TT_RESERVE(v->acc, v->acc_cap, functions) < 0) return -1;
    for (size_t f = old; f < v->acc_cap; f++) v->acc[f].function = NONE;
    /* Forget the last build's sums; its order stays in rank. */
    for (size_t i = 0; i < v->touched_count; i++) v->acc[v->touched[i]].function = NONE;
    v->touched_count = 0;
    v->seconds = v->wall = 0;
    v->thread_count = 0;
    for (size_t i = 0; i < w->count; i++)
        if (add_process(v, w->procs[i]) < 0) return -1;

    if (TT_RESERVE(v->rows, v->row_cap, v->touched_count) < 0) return -1;
    v->row_count = 0;
    for (size_t i = 0; i < v->touched_count; i++) {
        tt_row *r = &v->acc[v->touched[i]];
        if (!contains(w->functions.items[r->function].name, v->filter)) continue;
        r->own_percent = v->seconds > 0 ? 100.0 * r->own / v->seconds : 0;
        r->cpu_percent = v->wall > 0 ? 100.0 * r->cpu / v->wall : 0;
        r->desc_percent = r->total > r->own ? 100.0 * (r->total - r->own) / r->total : 0;
        v->rows[v->row_count++] = *r;
    }
    order(v, w);

    if (TT_RESERVE(v->rank, v->rank_cap, functions) < 0) return -1;
    memset(v->rank, 0xff, v->rank_cap * sizeof *v->rank);
    for (size_t i = 0; i < v->row_count; i++) v->rank[v->rows[i].function] = (uint32_t)i;
    v->steady = 1;
    return 0;
}

/* ---- objects ---- */

void tt_objview_free(tt_objview *o)
{
    for (size_t i = 0; i < o->row_count; i++) free(o->rows[i].type);
    free(o->rows);
    memset(o, 0, sizeof *o);
}

/* The row of the type, added when new; NULL when out of memory. Types are
 * few (tens): a linear search costs less than keeping an index. */
static tt_objrow *objrow_of(tt_objview *o, const char *type)
{
    for (size_t i = 0; i < o->row_count; i++)
        if (strcmp(o->rows[i].type, type) == 0) return &o->rows[i];
    if (TT_RESERVE(o->rows, o->row_cap, o->row_count + 1) < 0) return NULL;
    char *name = strdup(type);
    if (!name) return NULL;
    o->rows[o->row_count] = (tt_objrow){.type = name};
    return &o->rows[o->row_count++];
}

static int by_alive(const void *a, const void *b)
{
    const tt_objrow *x = a, *y = b;
    if (x->seen != y->seen) return y->seen - x->seen;
    if (x->alive != y->alive) return x->alive < y->alive ? 1 : -1;
    if (x->created != y->created) return x->created < y->created ? 1 : -1;
    return strcmp(x->type, y->type);
}

int tt_objview_build(tt_objview *o, const tt_watch *w, uint64_t now_ns)
{
    for (size_t i = 0; i < o->row_count; i++) {
        o->rows[i].created = o->rows[i].destroyed = 0;
        o->rows[i].alive = 0;
        o->rows[i].seen = 0;
    }
    o->counting = 0;
    int failed = 0;
    for (size_t i = 0; i < w->count && !failed; i++) {
        const tt_agg_process *p = &w->procs[i]->agg;
        o->counting |= p->objects != 0;
        for (uint32_t t = 0; t < p->objtype_cap; t++) {
            const tt_agg_objtype *c = &p->objtypes[t];
            if (!c->created && !c->destroyed && !c->alive) continue;
            size_t known = o->row_count;
            tt_objrow *r = objrow_of(o, tt_agg_string(p, t));
            if (!r) {
                failed = 1;
                break;
            }
            r->created += c->created;
            r->destroyed += c->destroyed;
            r->alive += c->alive;
            r->seen = 1;
            if (o->row_count > known) r->base_created = r->created, r->base_destroyed = r->destroyed;
        }
    }
    if (!o->rate_ns) o->rate_ns = now_ns;
    if (now_ns >= o->rate_ns + TT_OBJVIEW_RATE_NS) {
        double elapsed = (double)(now_ns - o->rate_ns) / 1e9;
        for (size_t i = 0; i < o->row_count; i++) {
            tt_objrow *r = &o->rows[i];
            /* A reset makes the totals smaller: no rate across it. */
            int grew = r->created >= r->base_created && r->destroyed >= r->base_destroyed;
            r->created_rate = grew ? (double)(r->created - r->base_created) / elapsed : 0;
            r->destroyed_rate = grew ? (double)(r->destroyed - r->base_destroyed) / elapsed : 0;
            r->base_created = r->created;
            r->base_destroyed = r->destroyed;
        }
        o->rate_ns = now_ns;
    }
    if (o->row_count) qsort(o->rows, o->row_count, sizeof *o->rows, by_alive); /* rows is NULL before one */
    while (o->row_count && !o->rows[o->row_count - 1].seen) free(o->rows[--o->row_count].type);
    return failed ? -1 : 0;
}

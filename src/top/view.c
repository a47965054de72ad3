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
    v->thread = -1;
    v->stream = -1;
}

void tt_view_free(tt_view *v)
{
    free(v->rows);
    free(v->rank);
    free(v->acc);
    free(v->touched);
    free(v->seen);
    memset(v, 0, sizeof *v);
}

void tt_view_set_sort(tt_view *v, enum tt_sort sort)
{
    v->sort = sort;
    v->steady = 0;
}

void tt_view_set_thread(tt_view *v, long thread)
{
    v->thread = thread;
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
    static const char *const names[TT_SORT_COUNT] = {"own", "total", "calls", "%desc"};
    return sort < TT_SORT_COUNT ? names[sort] : "?";
}

/* ---- threads ---- */

static int shown(const tt_agg_thread *th) { return th && th->seen; }

size_t tt_view_thread_count(const tt_watch *w)
{
    size_t n = 0;
    for (size_t i = 0; i < w->count; i++)
        for (uint32_t s = 0; s < w->procs[i]->agg.thread_cap; s++) n += shown(w->procs[i]->agg.threads[s]);
    return n;
}

tt_view_thread tt_view_thread_at(const tt_watch *w, size_t index)
{
    for (size_t i = 0; i < w->count; i++)
        for (uint32_t s = 0; s < w->procs[i]->agg.thread_cap; s++)
            if (shown(w->procs[i]->agg.threads[s]) && index-- == 0)
                return (tt_view_thread){w->procs[i], w->procs[i]->agg.threads[s]};
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

/* Adds one thread's counts, its running calls up to `now`. */
static int add_thread(tt_view *v, const tt_watched *p, const tt_agg_thread *th)
{
    const tt_agg_process *a = &p->agg;
    if (!a->ticks_per_second) return 0;
    double tick = 1.0 / (double)a->ticks_per_second;
    uint64_t now = th->ticks;
    if (!th->ended && tt_watched_running(p) && p->measuring) {
        uint64_t clock = tt_watched_now(p);
        if (clock > now) now = clock;
    }
    v->seconds += (double)(now - th->since) * tick;
    v->thread_count++;

    uint32_t regions = th->stat_cap < a->region_count ? th->stat_cap : a->region_count;
    for (uint32_t r = 0; r < regions; r++) {
        const tt_agg_stat *st = &th->stats[r];
        uint32_t f = a->regions[r].function;
        if ((!st->calls && !st->active) || f == NONE) continue;
        if (touch(v, f) < 0) return -1;
        tt_row *row = &v->acc[f];
        row->calls += st->calls;
        row->own += (double)st->exclusive * tick;
        row->total += (double)st->inclusive * tick;
    }

    /* Running calls: each owns its time but that of its running callee;
     * the outermost running call of a function adds to its total. */
    if (TT_RESERVE(v->seen, v->seen_cap, a->region_count) < 0) return -1;
    uint64_t generation = ++v->generation;
    for (uint32_t d = 0; d < th->depth; d++) {
        const tt_agg_frame *frame = &th->stack[d];
        if (frame->region >= a->region_count || a->regions[frame->region].function == NONE) continue;
        uint64_t elapsed = now > frame->enter ? now - frame->enter : 0;
        uint64_t callee = 0;
        if (d + 1 < th->depth && now > th->stack[d + 1].enter) callee = now - th->stack[d + 1].enter;
        uint64_t own = elapsed > frame->child + callee ? elapsed - frame->child - callee : 0;
        tt_row *row = &v->acc[a->regions[frame->region].function];
        row->own += (double)own * tick;
        if (v->seen[frame->region] != generation) {
            v->seen[frame->region] = generation;
            row->total += (double)elapsed * tick;
        }
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
    v->seconds = 0;
    v->thread_count = 0;

    size_t threads = tt_view_thread_count(w);
    if (v->thread >= (long)threads) tt_view_set_thread(v, -1);
    for (size_t i = 0; i < threads; i++) {
        if (v->thread >= 0 && (size_t)v->thread != i) continue;
        tt_view_thread t = tt_view_thread_at(w, i);
        if (v->pid && (t.process->pid != v->pid || (v->stream >= 0 && t.thread->stream != v->stream))) continue;
        if (add_thread(v, t.process, t.thread) < 0) return -1;
    }

    if (TT_RESERVE(v->rows, v->row_cap, v->touched_count) < 0) return -1;
    v->row_count = 0;
    for (size_t i = 0; i < v->touched_count; i++) {
        tt_row *r = &v->acc[v->touched[i]];
        if (!contains(w->functions.items[r->function].name, v->filter)) continue;
        r->own_percent = v->seconds > 0 ? 100.0 * r->own / v->seconds : 0;
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

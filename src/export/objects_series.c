/* objects_series.c -- the objects of one process over time (see objects_series.h).
 *
 * A batch writes its records one after another at one time, a few per type
 * (one per creating region): adding merges an event into its type's latest
 * point when that point has the same time, so a batch makes one point per
 * type without a search. Points of one time from two streams are merged
 * once sorted.
 */
#include "objects_series.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"

void tt_objects_series_reset(tt_objects_series *s)
{
    s->count = 0;
    s->type_count = 0;
    if (s->latest) memset(s->latest, 0, s->latest_cap * sizeof *s->latest);
}

int tt_objects_series_add(tt_objects_series *s, const tt_event *ev)
{
    if (ev->name >= s->latest_cap) {
        size_t cap = s->latest_cap;
        if (TT_RESERVE(s->latest, s->latest_cap, (size_t)ev->name + 1) != 0) return -1;
        memset(s->latest + cap, 0, (s->latest_cap - cap) * sizeof *s->latest);
    }
    uint32_t at = s->latest[ev->name];
    if (at && s->points[at - 1].time == ev->time) {
        s->points[at - 1].created += ev->created;
        s->points[at - 1].destroyed += ev->destroyed;
        return 0;
    }
    if (s->count >= UINT32_MAX || TT_RESERVE(s->points, s->point_cap, s->count + 1) != 0) return -1;
    s->points[s->count] = (tt_objects_point){ev->time, ev->name, ev->created, ev->destroyed};
    s->latest[ev->name] = (uint32_t)++s->count;
    return 0;
}

static int by_time_then_type(const void *a, const void *b)
{
    const tt_objects_point *p = a, *q = b;
    if (p->time != q->time) return p->time < q->time ? -1 : 1;
    return p->type < q->type ? -1 : p->type > q->type;
}

int tt_objects_series_finish(tt_objects_series *s)
{
    if (!s->count) return 0;
    qsort(s->points, s->count, sizeof *s->points, by_time_then_type);
    /* Per type: its running totals (latest_cap covers every type id); the
     * latest points are no more: latest marks the types seen. */
    uint64_t *totals = calloc(s->latest_cap * 2, sizeof *totals);
    if (!totals) return -1;
    memset(s->latest, 0, s->latest_cap * sizeof *s->latest);
    size_t kept = 0;
    for (size_t i = 0; i < s->count; i++) {
        tt_objects_point p = s->points[i];
        uint64_t *t = &totals[(size_t)p.type * 2];
        if (!s->latest[p.type]) {
            s->latest[p.type] = 1;
            if (TT_RESERVE(s->types, s->type_cap, s->type_count + 1) != 0) {
                free(totals);
                return -1;
            }
            s->types[s->type_count++] = p.type;
        }
        t[0] += p.created;
        t[1] += p.destroyed;
        p.created = t[0];
        p.destroyed = t[1];
        if (kept && s->points[kept - 1].time == p.time && s->points[kept - 1].type == p.type)
            s->points[kept - 1] = p; /* the same time and type from another stream */
        else
            s->points[kept++] = p;
    }
    s->count = kept;
    free(totals);
    return 0;
}

void tt_objects_series_free(tt_objects_series *s)
{
    free(s->points);
    free(s->types);
    free(s->latest);
    *s = (tt_objects_series){0};
}

/* overview.c -- the compact timeline of an experiment (overview.h). */
#include "overview.h"

#include <stdlib.h>
#include <string.h>

/* What is being built for one lane. */
typedef struct painter {
    const tt_overview *o;
    uint32_t *cells;   /* the lane's */
    uint64_t *covered; /* per cell: ns of the activation that holds it */
    uint32_t *regions; /* per level: the open region ... */
    uint64_t *entered; /* ... and when it was entered */
} painter;

/* The column holding time t (clamped into the range). */
static size_t column(const tt_overview *o, uint64_t t)
{
    if (t <= o->begin_ns) return 0;
    if (t >= o->end_ns) return o->width - 1;
    return (size_t)((unsigned __int128)(t - o->begin_ns) * o->width / (o->end_ns - o->begin_ns));
}

static uint64_t column_start(const tt_overview *o, size_t c)
{
    return o->begin_ns + (uint64_t)((unsigned __int128)(o->end_ns - o->begin_ns) * c / o->width);
}

/* One activation of `region` at `level` over [from, to). */
static void paint(painter *p, size_t level, uint32_t region, uint64_t from, uint64_t to)
{
    const tt_overview *o = p->o;
    if (to <= o->begin_ns || from >= o->end_ns) return;
    if (from < o->begin_ns) from = o->begin_ns;
    if (to > o->end_ns) to = o->end_ns;
    size_t last = column(o, to == from ? to : to - 1);
    for (size_t c = column(o, from); c <= last; c++) {
        uint64_t start = column_start(o, c), end = column_start(o, c + 1);
        uint64_t overlap = (to < end ? to : end) - (from > start ? from : start);
        size_t cell = level * o->width + c;
        /* >= so that an instant activation (overlap 0) still takes an empty cell */
        if (p->cells[cell] == TT_OVERVIEW_EMPTY ? overlap >= p->covered[cell] : overlap > p->covered[cell]) {
            p->cells[cell] = region;
            p->covered[cell] = overlap;
        }
    }
}

static int paint_lane(painter *p, const tt_process *proc, size_t stream, tt_error *err)
{
    tt_cursor *c;
    if (tt_cursor_open(p->o->trace, proc, stream, &c, err) != 0) return -1;
    tt_event ev;
    while (tt_cursor_next(c, &ev)) {
        if (ev.kind == TT_EV_ENTER && ev.depth - 1 < p->o->depth) {
            p->regions[ev.depth - 1] = ev.region;
            p->entered[ev.depth - 1] = ev.time;
        } else if (ev.kind == TT_EV_LEAVE && ev.depth < p->o->depth) {
            paint(p, ev.depth, p->regions[ev.depth], p->entered[ev.depth], ev.time);
        }
    }
    tt_cursor_close(c);
    return 0;
}

int tt_overview_build(const tt_trace *t, uint64_t begin_ns, uint64_t end_ns, size_t width, size_t depth,
                      tt_overview **out, tt_error *err)
{
    if (end_ns <= begin_ns || width == 0 || depth == 0 || width > SIZE_MAX / sizeof(uint64_t) / depth)
        return tt_fail(err, "bad overview range or size");
    tt_overview *o = calloc(1, sizeof *o);
    if (!o) return tt_fail(err, "out of memory for the overview");
    *o = (tt_overview){.trace = t, .begin_ns = begin_ns, .end_ns = end_ns, .width = width, .depth = depth};
    size_t lanes = 0;
    for (size_t i = 0; i < tt_trace_process_count(t); i++) {
        const tt_process *proc = tt_trace_process(t, i);
        for (size_t s = 0; s < proc->thread_count; s++) lanes += proc->threads[s].present != 0;
    }
    size_t cells = width * depth;
    painter p = {.o = o,
                 .covered = malloc(cells * sizeof *p.covered),
                 .regions = malloc(depth * sizeof *p.regions),
                 .entered = malloc(depth * sizeof *p.entered)};
    o->lanes = calloc(lanes ? lanes : 1, sizeof *o->lanes);
    int rc = p.covered && p.regions && p.entered && o->lanes ? 0 : tt_fail(err, "out of memory for the overview");
    for (size_t i = 0; rc == 0 && i < tt_trace_process_count(t); i++) {
        const tt_process *proc = tt_trace_process(t, i);
        for (size_t s = 0; rc == 0 && s < proc->thread_count; s++) {
            if (!proc->threads[s].present) continue;
            tt_overview_lane *lane = &o->lanes[o->lane_count];
            *lane = (tt_overview_lane){.process = i, .stream = s, .cells = malloc(cells * sizeof *lane->cells)};
            if (!lane->cells) {
                rc = tt_fail(err, "out of memory for the overview");
                break;
            }
            o->lane_count++;
            memset(lane->cells, 0xff, cells * sizeof *lane->cells); /* TT_OVERVIEW_EMPTY */
            memset(p.covered, 0, cells * sizeof *p.covered);
            p.cells = lane->cells;
            rc = paint_lane(&p, proc, s, err);
        }
    }
    free(p.covered);
    free(p.regions);
    free(p.entered);
    if (rc != 0) {
        tt_overview_free(o);
        return -1;
    }
    *out = o;
    return 0;
}

void tt_overview_free(tt_overview *o)
{
    if (!o) return;
    for (size_t i = 0; i < o->lane_count; i++) free(o->lanes[i].cells);
    free(o->lanes);
    free(o);
}

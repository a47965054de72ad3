/* export_pstats.c -- Python's profile statistics, as cProfile's
 * Profile.dump_stats writes them: a marshal'd dict
 *
 *     {(file, line, name): (primitive calls, calls, tottime, cumtime,
 *                           {caller: (calls, primitive calls, tottime, cumtime)})}
 *
 * that pstats.Stats loads (and so snakeviz and gprof2dot). Functions are the
 * regions merged by name, as `tracetop summary` shows them, labelled
 * (file, first line, region name), or ("~", 0, region name) without a file,
 * as cProfile labels builtins. Times are seconds.
 *
 * From the call-path profile: a call is primitive when its function is not
 * already running on the path that calls it, and cumulative time counts
 * only those, as in `summary` (recursion is not counted twice); a caller
 * entry holds the calls of the function from that caller.
 *
 * marshal is written in its version-2 types ('{' '(' 'i' 'l' 'g' 'u'),
 * which every Python 3 reads.
 */
#include <stdlib.h>
#include <string.h>

#include "converters.h"
#include "grow.h"
#include "out.h"
#include "u64map.h"

#define NONE UINT32_MAX

typedef struct stats {
    uint64_t calls, primitive, tottime_ns, cumtime_ns;
} stats;

typedef struct edge {
    uint32_t caller, callee;
    stats s;
} edge;

typedef struct pstats {
    const tt_profile *prof;
    const tt_profile_thread *th;
    const uint32_t *map; /* the thread's process: region id -> function */
    stats *functions;    /* by merged region */
    uint32_t *active;    /* by merged region: its nodes open on the walk's path */
    edge *edges;
    size_t edge_count, edge_cap;
    tt_u64map edge_of; /* (caller, callee) -> index in edges */
} pstats;

static edge *find_edge(pstats *ps, uint32_t caller, uint32_t callee)
{
    int fresh;
    uint64_t *index = tt_u64map_slot(&ps->edge_of, tt_u64_pair(caller, callee), &fresh);
    if (!index) return NULL;
    if (fresh) {
        if (TT_RESERVE(ps->edges, ps->edge_cap, ps->edge_count + 1) != 0) return NULL;
        ps->edges[ps->edge_count] = (edge){caller, callee, {0}};
        *index = ps->edge_count++;
    }
    return &ps->edges[*index];
}

static void add(stats *s, const tt_profile_node *n, int primitive)
{
    s->calls += n->visits;
    s->tottime_ns += n->exclusive_ns;
    if (primitive) {
        s->primitive += n->visits;
        s->cumtime_ns += n->inclusive_ns;
    }
}

static int enter(void *ctx, uint32_t node)
{
    pstats *ps = ctx;
    const tt_profile_node *n = &ps->th->nodes[node];
    uint32_t f = ps->map[n->region];
    int primitive = ps->active[f]++ == 0;
    add(&ps->functions[f], n, primitive);
    if (n->parent != NONE) {
        edge *e = find_edge(ps, ps->map[ps->th->nodes[n->parent].region], f);
        if (!e) return -1;
        add(&e->s, n, primitive);
    }
    return 0;
}

static void leave(void *ctx, uint32_t node)
{
    pstats *ps = ctx;
    ps->active[ps->map[ps->th->nodes[node].region]]--;
}

/* ---- marshal ---- */

static void w_int32(tt_out *o, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    tt_out_write(o, b, 4);
}

/* An int: 'i' when it fits 32 bits, else 'l' in base-2^15 digits. */
static void w_uint(tt_out *o, uint64_t v)
{
    if (v <= INT32_MAX) {
        tt_out_byte(o, 'i');
        w_int32(o, (uint32_t)v);
        return;
    }
    uint16_t digits[5];
    uint32_t n = 0;
    for (; v; v >>= 15) digits[n++] = (uint16_t)(v & 0x7fff);
    tt_out_byte(o, 'l');
    w_int32(o, n);
    for (uint32_t i = 0; i < n; i++) {
        uint8_t b[2] = {(uint8_t)digits[i], (uint8_t)(digits[i] >> 8)};
        tt_out_write(o, b, 2);
    }
}

static void w_seconds(tt_out *o, uint64_t ns)
{
    double v = (double)ns / 1e9;
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    tt_out_byte(o, 'g');
    for (int i = 0; i < 8; i++) tt_out_byte(o, (uint8_t)(bits >> (8 * i)));
}

static void w_str(tt_out *o, const char *s)
{
    size_t len = strlen(s);
    tt_out_byte(o, 'u');
    w_int32(o, (uint32_t)len);
    tt_out_write(o, s, len);
}

static void w_tuple(tt_out *o, uint32_t n)
{
    tt_out_byte(o, '(');
    w_int32(o, n);
}

static void w_label(tt_out *o, const tt_profile_region *r)
{
    w_tuple(o, 3);
    w_str(o, *r->file ? r->file : "~");
    w_uint(o, *r->file ? r->line : 0);
    w_str(o, r->name);
}

static int by_callee(const void *a, const void *b)
{
    const edge *x = a, *y = b;
    if (x->callee != y->callee) return x->callee < y->callee ? -1 : 1;
    return (x->caller > y->caller) - (x->caller < y->caller);
}

static void write_stats(tt_out *o, pstats *ps)
{
    const tt_profile *prof = ps->prof;
    if (ps->edge_count) qsort(ps->edges, ps->edge_count, sizeof *ps->edges, by_callee); /* none: edges is NULL */
    size_t e = 0;
    tt_out_byte(o, '{');
    for (uint32_t f = 0; f < prof->region_count; f++) {
        const stats *s = &ps->functions[f];
        w_label(o, &prof->regions[f]);
        w_tuple(o, 5);
        w_uint(o, s->primitive);
        w_uint(o, s->calls);
        w_seconds(o, s->tottime_ns);
        w_seconds(o, s->cumtime_ns);
        tt_out_byte(o, '{');
        for (; e < ps->edge_count && ps->edges[e].callee == f; e++) {
            const stats *c = &ps->edges[e].s;
            w_label(o, &prof->regions[ps->edges[e].caller]);
            w_tuple(o, 4);
            w_uint(o, c->calls);
            w_uint(o, c->primitive);
            w_seconds(o, c->tottime_ns);
            w_seconds(o, c->cumtime_ns);
        }
        tt_out_byte(o, '0');
    }
    tt_out_byte(o, '0');
}

int tt_export_pstats(const tt_trace *t, const char *path, tt_export_result *r, tt_error *err)
{
    tt_profile *prof;
    if (tt_export_profile(t, &prof, r, err) != 0) return -1;
    uint32_t **maps = NULL;
    size_t n = prof->region_count ? prof->region_count : 1;
    pstats ps = {.prof = prof, .functions = calloc(n, sizeof *ps.functions), .active = calloc(n, sizeof *ps.active)};
    int rc = ps.functions && ps.active && tt_export_region_maps(prof, &maps) == 0 ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < prof->thread_count; i++) {
        ps.th = &prof->threads[i];
        ps.map = maps[ps.th->process];
        rc = tt_export_walk(ps.th, enter, leave, &ps);
    }
    tt_out o;
    if (rc != 0)
        rc = tt_fail(err, "out of memory");
    else if ((rc = tt_out_open(&o, path, err)) == 0)
        write_stats(&o, &ps);
    if (maps) tt_export_free_region_maps(prof, maps);
    free(ps.functions);
    free(ps.active);
    free(ps.edges);
    tt_u64map_free(&ps.edge_of);
    tt_profile_free(prof);
    if (rc != 0) return rc;
    r->bytes = tt_out_size(&o);
    return tt_out_close(&o, err);
}

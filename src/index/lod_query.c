/* lod_query.c -- the questions a viewer asks of the level-of-detail index
 * (lod.h). Each reads the index in place and writes its answer into a
 * buffer in the layout lod.h gives, ready to hand to a browser as is.
 */
#include <string.h>

#include "grow.h"
#include "lod_file.h"

#define NONE UINT32_MAX

void tt_lod_buffer_free(tt_lod_buffer *b)
{
    free(b->data);
    *b = (tt_lod_buffer){0};
}

/* Makes the buffer exactly `size` bytes long (zeroed): 0, or -1. */
static int buffer_size(tt_lod_buffer *b, size_t size)
{
    uint8_t *data = calloc(1, size ? size : 1);
    if (!data) return -1;
    free(b->data);
    *b = (tt_lod_buffer){data, size, size};
    return 0;
}

static double ns_per_pixel(tt_lod_view v)
{
    uint64_t span = v.t1 > v.t0 ? v.t1 - v.t0 : 1;
    return (double)span / (double)(v.width ? v.width : 1);
}

unsigned tt_lod_level_for(const tt_lod *x, tt_lod_view v)
{
    double px = ns_per_pixel(v);
    unsigned level = 0;
    while (level + 1 < tt_lod_levels(x) && (double)tt_lod_grain(level + 1) <= px) level++;
    return level;
}

/* ---- spans ---- */

typedef struct placed {
    tt_lod_span span;
    uint32_t lane, depth;
} placed;

typedef struct placed_vec {
    placed *v;
    size_t n, cap;
} placed_vec;

static int put_placed(placed_vec *out, tt_lod_span s, uint32_t lane, uint32_t depth)
{
    if (TT_RESERVE(out->v, out->cap, out->n + 1) != 0) return -1;
    out->v[out->n++] = (placed){s, lane, depth};
    return 0;
}

/* How the spans of a depth are merged for a view: those below a pixel into
 * runs of at most 3 pixels, each with the region of its longest part. Kept
 * across the slices of time a level-0 query reads a lane in. */
typedef struct depth_view {
    tt_lod_span cur;
    uint64_t longest;
    int open;
} depth_view;

/* The spans of cursor c that start in [from, until) (and before the view's
 * end) through st; those it closes go to out. 0, 1 when `limit` items are
 * made (*made counts them), -1 when memory runs out. */
static int view_spans(tt_lod_cursor *c, depth_view *st, uint64_t from, uint64_t until, tt_lod_view v, double px,
                      const uint8_t *only, uint32_t lane, uint32_t depth, size_t limit, size_t *made, placed_vec *out)
{
    const tt_lod_span *s;
    for (; (s = tt_lod_peek(c)) && s->start < v.t1 && s->start < until; tt_lod_advance(c)) {
        if (s->start < from || (only && !only[s->region])) continue; /* (the slice before read it) */
        tt_lod_span next = *s;
        uint64_t len = next.end - next.start;
        if (st->open && (double)len < px && (double)st->longest < px && (double)(next.start - st->cur.end) < px &&
            (double)(next.end - st->cur.start) < 3 * px) {
            st->cur.end = next.end;
            st->cur.calls += next.calls;
            if (len > st->longest) {
                st->longest = len;
                st->cur.region = next.region;
            }
            continue;
        }
        if (st->open && put_placed(out, st->cur, lane, depth) != 0) return -1;
        if (st->open && limit && ++*made >= limit) return 1;
        st->cur = next;
        st->longest = len;
        st->open = 1;
    }
    return 0;
}

/* What can be seen of one lane, a depth after the other into found. The
 * depths read from the trace (level 0: lod_file.h) are read a slice of
 * time at a time, each slice a chunk of the trace, every depth in it
 * before the next: each chunk is read once (the index keeps the last few
 * read), where a depth after the other would read each again. */
static int view_lane(const tt_lod *x, tt_lod_view v, unsigned level, double px, const uint8_t *only, uint32_t lane,
                     size_t limit, size_t *made, placed_vec *found)
{
    uint32_t depths = tt_lod_lane(x, lane).depths;
    depth_view *st = calloc(depths ? depths : 1, sizeof *st);
    placed_vec *per = calloc(depths ? depths : 1, sizeof *per);
    uint8_t *sliced = calloc(depths ? depths : 1, 1);
    int rc = st && per && sliced ? 0 : -1;
    tt_lod_cursor *c = rc == 0 ? malloc(sizeof *c) : NULL;
    if (!c) rc = -1;
    /* The depths at which the chunks in view hold calls whole: those are
     * read a slice at a time; any other in one go (its blocks, and the
     * chunks' records, not read). */
    size_t n;
    const lod_chunk_rec *chunks = lod_lane_chunks(x, lane, &n);
    size_t k = lod_chunk_after(chunks, n, v.t0);
    int64_t *whole = rc == 0 ? calloc((size_t)depths + 1, sizeof *whole) : NULL;
    if (!whole) rc = -1;
    for (size_t i = k; rc == 0 && i < n && chunks[i].first < v.t1; i++)
        if (chunks[i].low < chunks[i].high && chunks[i].high <= depths) {
            whole[chunks[i].low]++;
            whole[chunks[i].high]--;
        }
    for (uint32_t d = 0; rc == 0 && d < depths; d++) {
        if (d) whole[d] += whole[d - 1];
        if (whole[d]) {
            tt_lod_seek(x, lane, d, level, v.t0, v.t0 + 1, c); /* (whether it is read from the trace) */
            sliced[d] = (uint8_t)c->trace;
        }
        if (sliced[d]) continue;
        tt_lod_seek(x, lane, d, level, v.t0, v.t1, c);
        rc = view_spans(c, &st[d], 0, UINT64_MAX, v, px, only, lane, d, limit, made, &per[d]);
    }
    free(whole);
    int any = depths && memchr(sliced, 1, depths) != NULL;
    for (uint64_t from = 0; rc == 0 && any && from < v.t1; k++) {
        uint64_t until = k < n && chunks[k].last < v.t1 ? chunks[k].last : v.t1;
        if (until <= from) continue;
        for (uint32_t d = 0; rc == 0 && d < depths; d++) {
            if (!sliced[d]) continue;
            tt_lod_seek(x, lane, d, level, from > v.t0 ? from : v.t0, until, c);
            rc = view_spans(c, &st[d], from, until, v, px, only, lane, d, limit, made, &per[d]);
        }
        from = until;
    }
    for (uint32_t d = 0; rc >= 0 && d < depths; d++) {
        if (rc == 0 && st[d].open && put_placed(&per[d], st[d].cur, lane, d) != 0) rc = -1;
        if (rc >= 0 && per[d].n && TT_RESERVE(found->v, found->cap, found->n + per[d].n) != 0) rc = -1;
        if (rc >= 0 && per[d].n) {
            memcpy(found->v + found->n, per[d].v, per[d].n * sizeof *per[d].v);
            found->n += per[d].n;
        }
    }
    for (uint32_t d = 0; per && d < depths; d++) free(per[d].v);
    free(per);
    free(st);
    free(sliced);
    free(c);
    return rc;
}

int tt_lod_query_spans(const tt_lod *x, tt_lod_view v, const uint32_t *lanes, size_t lane_count, const uint8_t *only,
                       size_t limit, tt_lod_buffer *out)
{
    unsigned level = only ? 0 : tt_lod_level_for(x, v);
    double px = ns_per_pixel(v);
    placed_vec found = {0};
    size_t made = 0;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < lane_count; i++)
        if (lanes[i] < tt_lod_lane_count(x)) rc = view_lane(x, v, level, px, only, lanes[i], limit, &made, &found);
    size_t count = found.n;
    if (rc < 0 || buffer_size(out, 8 + count * (2 * 8 + 4 * 4)) != 0) {
        free(found.v);
        return -1;
    }
    uint32_t head[2] = {(uint32_t)count, level};
    memcpy(out->data, head, sizeof head);
    double *start = (double *)(out->data + 8), *end = start + count;
    uint32_t *region = (uint32_t *)(end + count), *calls = region + count, *lane = calls + count, *depth = lane + count;
    for (size_t i = 0; i < count; i++) {
        start[i] = (double)found.v[i].span.start;
        end[i] = (double)found.v[i].span.end;
        region[i] = found.v[i].span.region;
        calls[i] = found.v[i].span.calls;
        lane[i] = found.v[i].lane;
        depth[i] = found.v[i].depth;
    }
    free(found.v);
    return 0;
}

/* ---- counter samples ---- */

typedef struct placed_sample {
    tt_lod_sample s;
    uint32_t track;
} placed_sample;

int tt_lod_query_samples(const tt_lod *x, tt_lod_view v, const uint32_t *tracks, size_t track_count, tt_lod_buffer *out)
{
    unsigned level = tt_lod_level_for(x, v);
    double px = ns_per_pixel(v);
    placed_sample *found = NULL;
    size_t count = 0, cap = 0;
    for (size_t i = 0; i < track_count; i++) {
        if (tracks[i] >= tt_lod_track_count(x)) continue;
        size_t n;
        const tt_lod_sample *s = tt_lod_samples(x, tracks[i], level, &n);
        /* From the last sample before the view to the first after it, so
         * that the line crosses both edges. */
        size_t lo = 0, hi = n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (s[mid].time >= v.t0)
                hi = mid;
            else
                lo = mid + 1;
        }
        int open = 0;
        placed_sample cur = {0};
        for (size_t j = lo ? lo - 1 : 0; j < n; j++) {
            /* Samples within one pixel of the first of a run make one. */
            if (open && (double)(s[j].time - cur.s.time) < px) {
                if (s[j].min < cur.s.min) cur.s.min = s[j].min;
                if (s[j].max > cur.s.max) cur.s.max = s[j].max;
                cur.s.last = s[j].last;
                continue;
            }
            if (open) {
                if (TT_RESERVE(found, cap, count + 1) != 0) goto nomem;
                found[count++] = cur;
            }
            cur = (placed_sample){s[j], tracks[i]};
            open = 1;
            if (s[j].time >= v.t1) break;
        }
        if (open) {
            if (TT_RESERVE(found, cap, count + 1) != 0) goto nomem;
            found[count++] = cur;
        }
    }
    if (buffer_size(out, 8 + count * (4 * 8 + 4) + (count % 2) * 4) != 0) goto nomem;
    uint32_t head[2] = {(uint32_t)count, level};
    memcpy(out->data, head, sizeof head);
    double *time = (double *)(out->data + 8), *min = time + count, *max = min + count, *last = max + count;
    uint32_t *track = (uint32_t *)(last + count);
    for (size_t i = 0; i < count; i++) {
        time[i] = (double)found[i].s.time;
        min[i] = found[i].s.min;
        max[i] = found[i].s.max;
        last[i] = found[i].s.last;
        track[i] = found[i].track;
    }
    free(found);
    return 0;
nomem:
    free(found);
    return -1;
}

/* ---- call-path tree of a range ---- */

uint32_t lod_tree_node_of(lod_tree *t, uint32_t parent, uint32_t region)
{
    /* Room for a node first: a key is never left without its node. */
    if (t->count >= NONE - 1 || TT_RESERVE(t->nodes, t->cap, t->count + 1) != 0) return NONE;
    int fresh;
    uint64_t *node = tt_u64map_slot(&t->by_path, tt_u64_pair(parent, region), &fresh);
    if (!node) return NONE;
    if (fresh) {
        t->nodes[t->count] = (lod_tree_node){.parent = parent, .region = region};
        *node = t->count++;
    }
    return (uint32_t)*node;
}

void lod_tree_free(lod_tree *t)
{
    free(t->nodes);
    tt_u64map_free(&t->by_path);
    *t = (lod_tree){0};
}

typedef struct open_call {
    uint32_t node;
    uint64_t end;
} open_call;

/* Adds the calls of one lane in [t0, t1) to the tree. Depth first with one
 * position per depth: the callees of successive calls at depth d are
 * successive at depth d + 1, so each position only moves forward and every
 * span in range is read once. */
static int tree_lane(const tt_lod *x, uint32_t lane, uint64_t t0, uint64_t t1, lod_tree *t)
{
    uint32_t depths = tt_lod_lane(x, lane).depths;
    if (depths == 0) return 0;
    tt_lod_cursor *at = malloc(depths * sizeof *at); /* the position at each depth */
    open_call *stack = malloc(depths * sizeof *stack);
    int rc = at && stack ? 0 : -1;
    for (uint32_t d = 0; rc == 0 && d < depths; d++) tt_lod_seek(x, lane, d, 0, t0, t1, &at[d]);
    size_t top = 0; /* open calls on the stack */
    while (rc == 0) {
        uint32_t d = (uint32_t)top; /* the depth of the next call */
        uint64_t limit = top ? stack[top - 1].end : UINT64_MAX;
        const tt_lod_span *s = d < depths ? tt_lod_peek(&at[d]) : NULL;
        if (!s || s->start >= limit || s->start >= t1) {
            if (top == 0) break;
            top--;
            continue;
        }
        tt_lod_advance(&at[d]);
        uint32_t parent = top ? stack[top - 1].node : NONE;
        uint32_t node = lod_tree_node_of(t, parent, s->region);
        if (node == NONE) {
            rc = -1;
            break;
        }
        double in = (double)((s->end < t1 ? s->end : t1) - (s->start > t0 ? s->start : t0));
        t->nodes[node].visits += 1;
        t->nodes[node].inclusive += in;
        t->nodes[node].exclusive += in;
        if (parent != NONE) t->nodes[parent].exclusive -= in;
        stack[top++] = (open_call){node, s->end};
    }
    free(at);
    free(stack);
    return rc;
}

/* Adds the whole run's tree of one lane, as the index stores it, to t. */
static int tree_stored(const tt_lod *x, uint32_t lane, lod_tree *t)
{
    size_t n;
    const lod_tree_rec *nodes = lod_lane_tree(x, lane, &n);
    uint32_t *to = malloc((n ? n : 1) * sizeof *to); /* its nodes' in t */
    if (!to) return -1;
    for (size_t i = 0; i < n; i++) {
        const lod_tree_rec *s = &nodes[i];
        uint32_t node = lod_tree_node_of(t, s->parent == NONE ? NONE : to[s->parent], s->region);
        if (node == NONE) {
            free(to);
            return -1;
        }
        to[i] = node;
        t->nodes[node].visits += (double)s->visits;
        t->nodes[node].inclusive += (double)s->inclusive;
        t->nodes[node].exclusive += (double)s->exclusive;
    }
    free(to);
    return 0;
}

int tt_lod_query_tree(const tt_lod *x, uint64_t t0, uint64_t t1, const uint32_t *lanes, size_t lane_count,
                      tt_lod_buffer *out)
{
    /* A range that holds the whole run is every call whole: the trees the
     * index keeps, merged, without reading a span. */
    int whole = t0 <= tt_lod_begin(x) && t1 > tt_lod_end(x);
    lod_tree t = {0};
    int rc = 0;
    for (size_t i = 0; rc == 0 && t0 < t1 && i < lane_count; i++)
        if (lanes[i] < tt_lod_lane_count(x))
            rc = whole ? tree_stored(x, lanes[i], &t) : tree_lane(x, lanes[i], t0, t1, &t);
    if (rc == 0 && buffer_size(out, 8 + t.count * sizeof(lod_tree_node)) != 0) rc = -1;
    if (rc == 0) {
        uint32_t head[2] = {(uint32_t)t.count, 0};
        memcpy(out->data, head, sizeof head);
        if (t.count) memcpy(out->data + 8, t.nodes, t.count * sizeof(lod_tree_node));
    }
    lod_tree_free(&t);
    return rc;
}

/* ---- one call ---- */

int tt_lod_call_at(const tt_lod *x, size_t lane, uint32_t depth, uint64_t time, tt_lod_span *span, uint64_t *self_ns,
                   size_t *first_param, size_t *param_count)
{
    tt_lod_cursor c;
    tt_lod_seek(x, lane, depth, 0, time, time < UINT64_MAX ? time + 1 : time, &c);
    const tt_lod_span *s = tt_lod_peek(&c);
    if (!s || s->start > time) return 0;
    *span = *s;
    /* Its callees: the calls at depth + 1 within it (those of the trace's
     * chunks within it summed by the index: a long call's in a few ms). */
    uint64_t callees = lod_seek_callees(x, lane, depth + 1, span->start, span->end, &c);
    for (; (s = tt_lod_peek(&c)) && s->start < span->end; tt_lod_advance(&c)) callees += s->end - s->start;
    *self_ns = span->end - span->start - callees;
    size_t n;
    const tt_lod_param *p = tt_lod_params(x, lane, &n);
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p[mid].time >= span->start)
            hi = mid;
        else
            lo = mid + 1;
    }
    *first_param = lo;
    while (hi < n && p[hi].time <= span->end) hi++;
    *param_count = hi - lo;
    return 1;
}

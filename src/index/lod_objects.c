/* lod_objects.c -- the objects of a time range, from the index's OBJECTS
 * records (lod.h): per creating region and type, and per call path for
 * the profile's columns and the allocations flame graph.
 *
 * An object belongs to its process, not to a thread (it is counted as
 * destroyed in the stream of whichever thread frees it), so a question
 * about some lanes is answered with the objects of their processes.
 */
#include <string.h>

#include "grow.h"
#include "lod.h"
#include "u64map.h"

#define NONE UINT32_MAX

/* Per track, 1 when it is an objects track (of type `type`, unless NULL)
 * of a process one of `lanes` belongs to. NULL when memory runs out. */
static uint8_t *tracks_of(const tt_lod *x, const uint32_t *lanes, size_t lane_count, const char *type)
{
    size_t tracks = tt_lod_track_count(x), all = tt_lod_lane_count(x);
    uint8_t *in = calloc(tracks ? tracks : 1, 1);
    if (!in) return NULL;
    for (size_t t = 0; t < tracks; t++) {
        tt_lod_track_info info = tt_lod_track(x, t);
        if (info.kind != TT_LOD_TRACK_OBJECTS || (type && strcmp(info.name, type) != 0)) continue;
        uint64_t pid = tt_lod_lane(x, info.lane).pid;
        for (size_t i = 0; i < lane_count && !in[t]; i++)
            if (lanes[i] < all && tt_lod_lane(x, lanes[i]).pid == pid) in[t] = 1;
    }
    return in;
}

/* The records of [t0, t1): [*first, return value). */
static size_t records_in(const tt_lod *x, uint64_t t0, uint64_t t1, const tt_lod_objects **records, size_t *first)
{
    size_t n;
    const tt_lod_objects *o = tt_lod_object_records(x, &n);
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (o[mid].time >= t0)
            hi = mid;
        else
            lo = mid + 1;
    }
    *first = lo;
    while (hi < n && o[hi].time < t1) hi++;
    *records = o;
    return hi;
}

/* ---- per region and type ---- */

typedef struct object_row { /* as the answer lays it out: 32 bytes */
    uint32_t region, track;
    double created, destroyed, bytes;
} object_row;

typedef struct row_table {
    object_row *rows;
    size_t count, cap;
    tt_u64map row_of; /* (region, track) -> index in rows */
} row_table;

/* The row of (region, track), made on first use; NULL when memory runs out. */
static object_row *row_of(row_table *t, uint32_t region, uint32_t track)
{
    int fresh;
    uint64_t *row = tt_u64map_slot(&t->row_of, tt_u64_pair(region, track), &fresh);
    if (!row) return NULL;
    if (fresh) {
        if (TT_RESERVE(t->rows, t->cap, t->count + 1) != 0) return NULL;
        t->rows[t->count] = (object_row){.region = region, .track = track};
        *row = t->count++;
    }
    return &t->rows[*row];
}

int tt_lod_query_objects(const tt_lod *x, uint64_t t0, uint64_t t1, const uint32_t *lanes, size_t lane_count,
                         tt_lod_buffer *out)
{
    uint8_t *in = tracks_of(x, lanes, lane_count, NULL);
    if (!in) return -1;
    row_table t = {0};
    const tt_lod_objects *o;
    size_t first, end = records_in(x, t0, t1, &o, &first);
    int rc = 0;
    for (size_t i = first; rc == 0 && i < end; i++) {
        if (!in[o[i].track]) continue;
        object_row *r = row_of(&t, o[i].region, o[i].track);
        if (!r) {
            rc = -1;
            break;
        }
        r->created += (double)o[i].created;
        r->destroyed += (double)o[i].destroyed;
        r->bytes += (double)o[i].created * tt_lod_track(x, o[i].track).size;
    }
    free(in);
    if (rc == 0) {
        out->size = out->cap = 8 + t.count * sizeof(object_row);
        out->data = malloc(out->size);
        if (!out->data) {
            *out = (tt_lod_buffer){0};
            rc = -1;
        } else {
            uint32_t head[2] = {(uint32_t)t.count, 0};
            memcpy(out->data, head, sizeof head);
            if (t.count) memcpy(out->data + 8, t.rows, t.count * sizeof(object_row));
        }
    }
    free(t.rows);
    tt_u64map_free(&t.row_of);
    return rc;
}

/* ---- per call path ---- */

/* The nodes of a tree answer (lod.h: tt_lod_query_tree). */
typedef struct tree_view {
    size_t count;
    const uint8_t *nodes; /* 32 bytes each: u32 parent, u32 region, f64 visits, inclusive, exclusive */
} tree_view;

static tree_view tree_of(const tt_lod_buffer *b)
{
    uint32_t count;
    memcpy(&count, b->data, 4);
    return (tree_view){count, b->data + 8};
}

static uint32_t node_region(tree_view t, size_t i)
{
    uint32_t region;
    memcpy(&region, t.nodes + i * 32 + 4, 4);
    return region;
}

static double node_value(tree_view t, size_t i, int which) /* 0 visits, 2 exclusive */
{
    double v;
    memcpy(&v, t.nodes + i * 32 + 8 + 8 * which, 8);
    return v;
}

/* The lanes of the processes of `lanes`, into scope (room for every lane):
 * their count; *same: 1 when those are `lanes` themselves. */
static size_t scope_lanes(const tt_lod *x, const uint32_t *lanes, size_t lane_count, uint32_t *scope, int *same)
{
    size_t all = tt_lod_lane_count(x), n = 0, asked = 0;
    uint8_t *seen = calloc(all ? all : 1, 1);
    for (size_t i = 0; seen && i < lane_count; i++)
        if (lanes[i] < all && !seen[lanes[i]]) {
            seen[lanes[i]] = 1;
            asked++;
        }
    for (size_t l = 0; l < all; l++) {
        uint64_t pid = tt_lod_lane(x, l).pid;
        for (size_t i = 0; i < lane_count; i++)
            if (lanes[i] < all && tt_lod_lane(x, lanes[i]).pid == pid) {
                scope[n++] = (uint32_t)l;
                break;
            }
    }
    *same = seen && asked == n;
    free(seen);
    return n;
}

int tt_lod_query_tree_objects(const tt_lod *x, uint64_t t0, uint64_t t1, const uint32_t *lanes, size_t lane_count,
                              const char *type, tt_lod_buffer *out)
{
    size_t regions = tt_lod_region_count(x), all = tt_lod_lane_count(x);
    tt_lod_buffer asked = {0}, whole = {0};
    uint8_t *in = tracks_of(x, lanes, lane_count, type);
    uint32_t *scope = malloc((all ? all : 1) * sizeof *scope);
    /* Per region (and one more for none): the weight of its call paths
     * (exclusive time, or visits where it took none), how many it has,
     * and its objects: created, destroyed, bytes. */
    double *weight = calloc(regions + 1, 2 * sizeof *weight), *objects = calloc(regions + 1, 3 * sizeof *objects);
    uint32_t *paths = calloc(regions + 1, sizeof *paths);
    int same = 0, rc = in && scope && weight && objects && paths ? 0 : -1;
    size_t scope_count = rc == 0 ? scope_lanes(x, lanes, lane_count, scope, &same) : 0;
    if (rc == 0) rc = tt_lod_query_tree(x, t0, t1, lanes, lane_count, &asked);
    if (rc == 0 && !same) rc = tt_lod_query_tree(x, t0, t1, scope, scope_count, &whole);
    if (rc == 0) {
        tree_view w = tree_of(same ? &asked : &whole);
        for (size_t i = 0; i < w.count; i++) {
            uint32_t r = node_region(w, i);
            double exclusive = node_value(w, i, 2);
            weight[2 * r] += exclusive;
            weight[2 * r + 1] += node_value(w, i, 0);
            if (exclusive > 0) paths[r]++;
        }
        const tt_lod_objects *o;
        size_t first, end = records_in(x, t0, t1, &o, &first);
        for (size_t i = first; i < end; i++) {
            if (!in[o[i].track]) continue;
            double *to = &objects[3 * (o[i].region == NONE ? regions : o[i].region)];
            to[0] += (double)o[i].created;
            to[1] += (double)o[i].destroyed;
            to[2] += (double)o[i].created * tt_lod_track(x, o[i].track).size;
        }
        tree_view t = tree_of(&asked);
        size_t n = t.count;
        out->size = out->cap = 8 + 24 + n * 28 + (n % 2) * 4;
        out->data = calloc(1, out->size);
        if (!out->data) {
            *out = (tt_lod_buffer){0};
            rc = -1;
        }
        if (rc == 0) {
            uint32_t head[2] = {(uint32_t)n, 0};
            memcpy(out->data, head, sizeof head);
            double unplaced[3] = {0, 0, 0};
            for (size_t r = 0; r <= regions; r++)
                if (r == regions || (weight[2 * r] <= 0 && weight[2 * r + 1] <= 0))
                    for (int k = 0; k < 3; k++) unplaced[k] += objects[3 * r + k];
            memcpy(out->data + 8, unplaced, sizeof unplaced);
            double *column = (double *)(out->data + 32);
            uint32_t *shared = (uint32_t *)(column + 3 * n);
            for (size_t i = 0; i < n; i++) {
                uint32_t r = node_region(t, i);
                double share = weight[2 * r] > 0       ? node_value(t, i, 2) / weight[2 * r]
                               : weight[2 * r + 1] > 0 ? node_value(t, i, 0) / weight[2 * r + 1]
                                                       : 0;
                for (int k = 0; k < 3; k++) column[k * n + i] = objects[3 * r + k] * share;
                shared[i] = paths[r] ? paths[r] : 1;
            }
        }
    }
    tt_lod_buffer_free(&asked);
    tt_lod_buffer_free(&whole);
    free(in);
    free(scope);
    free(weight);
    free(objects);
    free(paths);
    return rc;
}

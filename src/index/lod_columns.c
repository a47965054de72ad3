/* lod_columns.c -- the catalog's arrays of records as columns (lod_file.h),
 * for its compression: in an array of records of one kind, the same field of
 * successive records is alike (a time a little after the one before, a
 * small count, the same region), but zstd sees the fields interleaved. So
 * before the catalog is compressed each array's first field, a time or an
 * offset in order, becomes its difference from the record before, and the
 * array's bytes are transposed (every record's byte 0, then every byte 1,
 * ...); after it is decoded, the reverse. Sizes and offsets do not change.
 * A parameter-heavy trace's catalog shrinks some 40% more so.
 */
#include <string.h>

#include "grow.h"
#include "lod_file.h"

typedef struct columns {
    uint8_t *catalog;
    size_t size;
    int encode;
    uint8_t *scratch;
    size_t scratch_cap;
} columns;

/* 1 when [off, off + count * size) lies within the catalog, 8-byte aligned. */
static int inside(const columns *c, uint64_t off, uint64_t count, size_t size)
{
    return off % 8 == 0 && off <= c->size && count <= (c->size - off) / size;
}

/* One array: `count` records of `size` bytes at `off`, its first field a
 * u64 made a difference when `delta`. 0, or -1 when it does not fit or
 * memory runs out. */
static int array(columns *c, uint64_t off, uint64_t count, size_t size, int delta)
{
    if (!inside(c, off, count, size)) return -1;
    size_t n = (size_t)count, bytes = n * size;
    if (n < 2) return 0;
    if (TT_RESERVE(c->scratch, c->scratch_cap, bytes) != 0) return -1;
    uint8_t *a = c->catalog + off, *t = c->scratch;
    if (c->encode) {
        for (size_t i = n; delta && i-- > 1;) {
            uint64_t v, before;
            memcpy(&v, a + i * size, 8);
            memcpy(&before, a + (i - 1) * size, 8);
            v -= before;
            memcpy(a + i * size, &v, 8);
        }
        for (size_t i = 0; i < n; i++)
            for (size_t k = 0; k < size; k++) t[k * n + i] = a[i * size + k];
        memcpy(a, t, bytes);
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < size; k++) t[i * size + k] = a[k * n + i];
    memcpy(a, t, bytes);
    for (size_t i = 1; delta && i < n; i++) {
        uint64_t v, before;
        memcpy(&v, a + i * size, 8);
        memcpy(&before, a + (i - 1) * size, 8);
        v += before;
        memcpy(a + i * size, &v, 8);
    }
    return 0;
}

/* A lane's call tree (parents before their children): a node's exclusive
 * time is its inclusive time less its children's (lod_build.c makes it so,
 * in whole numbers, none below 0), so it is not stored but made again; its
 * parent is stored as how many nodes before it (0: none), a small number. */
static int tree(columns *c, uint64_t off, uint64_t count)
{
    if (!inside(c, off, count, sizeof(lod_tree_rec))) return -1;
    lod_tree_rec *t = (lod_tree_rec *)(c->catalog + off);
    if (c->encode) {
        for (uint64_t i = 0; i < count; i++) {
            t[i].exclusive = 0;
            t[i].parent = t[i].parent < i ? (uint32_t)(i - t[i].parent) : 0;
        }
        return array(c, off, count, sizeof(lod_tree_rec), 0);
    }
    if (array(c, off, count, sizeof(lod_tree_rec), 0) != 0) return -1;
    for (uint64_t i = 0; i < count; i++) {
        /* (One before the first node: damage, which the loader's checks refuse.) */
        t[i].parent = t[i].parent == 0 ? UINT32_MAX : t[i].parent <= i ? (uint32_t)(i - t[i].parent) : UINT32_MAX - 1;
        t[i].exclusive = t[i].inclusive;
    }
    for (uint64_t i = 0; i < count; i++)
        if (t[i].parent < i) t[t[i].parent].exclusive -= t[i].inclusive;
    for (uint64_t i = 0; i < count; i++)
        if ((int64_t)t[i].exclusive < 0) t[i].exclusive = 0;
    return 0;
}

/* The arrays a list of refs points to (a level not stored shares the array of
 * the level below it: done once). */
static int referred(columns *c, uint64_t refs_off, uint64_t count, size_t size)
{
    if (!inside(c, refs_off, count, sizeof(lod_ref))) return -1;
    const lod_ref *refs = (const lod_ref *)(c->catalog + refs_off);
    for (uint64_t r = 0; r < count; r++)
        if (refs[r].off != LOD_REF_TRACE &&
            (r == 0 || refs[r].off != refs[r - 1].off || refs[r].count != refs[r - 1].count) &&
            array(c, refs[r].off, refs[r].count, size, 1) != 0)
            return -1;
    return 0;
}

int lod_columns(uint8_t *catalog, size_t size, const lod_header *h, int encode)
{
    columns c = {catalog, size, encode, NULL, 0};
    int rc = inside(&c, h->lanes_off, h->lane_count, sizeof(lod_lane_rec)) &&
                     inside(&c, h->tracks_off, h->track_count, sizeof(lod_track_rec))
                 ? 0
                 : -1;
    for (uint32_t i = 0; rc == 0 && i < h->lane_count; i++) {
        lod_lane_rec l;
        memcpy(&l, catalog + h->lanes_off + i * sizeof l, sizeof l);
        if (referred(&c, l.refs_off, (uint64_t)l.depths * h->levels, sizeof(lod_block)) != 0 ||
            array(&c, l.params_off, l.param_count, sizeof(tt_lod_param), 1) != 0 ||
            array(&c, l.marks_off, l.mark_count, sizeof(tt_lod_mark), 1) != 0 ||
            tree(&c, l.tree_off, l.tree_count) != 0 ||
            array(&c, l.chunks_off, l.chunk_count, sizeof(lod_chunk_rec), 1) != 0 ||
            array(&c, l.sums_off, l.sum_count, sizeof(uint64_t), 0) != 0)
            rc = -1;
    }
    for (uint32_t i = 0; rc == 0 && i < h->track_count; i++) {
        lod_track_rec t;
        memcpy(&t, catalog + h->tracks_off + i * sizeof t, sizeof t);
        rc = referred(&c, t.refs_off, h->levels, sizeof(tt_lod_sample));
    }
    if (rc == 0) rc = array(&c, h->objects_off, h->object_count, sizeof(tt_lod_objects), 1);
    free(c.scratch);
    return rc;
}

/* lod_file.h -- the layout of the level-of-detail index (lod.h), shared by
 * its builder (lod_build.c, which writes it) and its loader (lod.c, which
 * checks it and reads it in place); lod_query.c makes and merges call
 * trees with lod_tree. Internal to the index's files.
 *
 * The index is one file: a header, the spans' blocks (each compressed on
 * its own, read in place), then the catalog: every other record, stored as
 * one compressed payload and decoded into memory when the index is loaded
 * (it is small: the blocks' records, a lane's parameters, marks and call
 * tree, the counter samples, the objects records and the strings; zstd
 * takes a small trace's index, mostly names and file paths, and the
 * objects records, mostly repeated counts, to a third or less). Decoded,
 * the catalog holds arrays of fixed-size records (8-byte aligned), then a
 * blob of NUL-terminated strings. Records refer to the catalog's arrays by
 * byte offset from its start, to strings by byte offset into the blob, and
 * a block to its bytes by offset in the file (or, LOD_BLOCK_IN_CATALOG, in
 * the catalog).
 *
 *     header
 *     blocks     the spans' blocks' bytes
 *     catalog    compressed; decoded:
 *       blocks'  lod_block[], per lane, depth and level stored
 *       regions  lod_region_rec[region_count]
 *       lanes    lod_lane_rec[lane_count]
 *       tracks   lod_track_rec[track_count]
 *       problems u32 string offset[problem_count] (padded to 8 bytes)
 *       refs     lod_ref: per lane depths * levels (depth-major), per track levels
 *       data     params, marks, samples (a level not stored shares the
 *                array of the level below it), each lane's call tree
 *       objects  tt_lod_objects[object_count], in time order
 *       small    the bytes of the last block of each depth's level (up to
 *                256 KiB in all)
 *       strings  the blob
 *
 * Spans are stored compressed, in blocks of up to LOD_BLOCK_SPANS: an array
 * of lod_block (the first start and last end of each block, for binary
 * searches, and where its bytes are), then the blocks' bytes. A block holds
 * four columns, per span: the gap from the end of the span before it (from
 * the block's start for its first), the duration, the region, and the
 * calls less one. Its bytes are four u8, the width of each column's values
 * in bytes (0 to 8 for gaps and durations, to 4 for the others: the fewest
 * that hold the column's largest), then the columns one after another, each
 * as byte planes (byte 0 of every value, then byte 1, ...): the high bytes
 * of times are nearly constant and their low bytes noise, which zstd codes
 * apart that way (varints, as in version 7, mix them: a tenth larger). Calls
 * at one depth never overlap, so gaps are never negative; a call at level 0
 * takes about two bytes, both times included. The last block of each
 * depth's level is kept in the catalog (while those take at most 256 KiB),
 * where it compresses with the others rather than alone.
 *
 * Each lane's call tree of the whole run (lod_tree_rec, parents before
 * their children) is made while the trace is read, from the reader's
 * nesting, so that the profile of the whole run is answered without
 * reading a span (lod_query.c).
 */
#ifndef TRACETOP_LOD_FILE_H
#define TRACETOP_LOD_FILE_H

#include <stdint.h>

#include "lod.h"
#include "u64map.h"

#define LOD_MAGIC "TTLODIDX"
#define LOD_VERSION 9u

typedef struct lod_header {
    char magic[8];
    uint32_t version;
    uint32_t levels;
    uint64_t signature; /* of the trace files it was built from */
    uint64_t begin, end;
    uint64_t size; /* of the whole file */
    uint64_t catalog_off, catalog_stored; /* in the file */
    uint32_t catalog_raw, catalog_codec;  /* decoded size; enum tt_codec */
    uint32_t region_count, lane_count, track_count, problem_count;
    /* In the catalog: */
    uint64_t regions_off, lanes_off, tracks_off, problems_off;
    uint64_t strings_off, strings_size;
    uint64_t objects_off, object_count;
} lod_header;

/* Spans: `count` lod_block at `off`. Samples: `count` tt_lod_sample at `off`. */
typedef struct lod_ref {
    uint64_t off, count;
} lod_ref;

typedef struct lod_block {
    uint64_t start, end;  /* of its first span, of its last span */
    uint64_t data;        /* offset of its bytes in the image */
    uint32_t spans;       /* 1 .. TT_LOD_BLOCK_SPANS */
    uint32_t codec;       /* enum tt_codec (format.h), | LOD_BLOCK_IN_CATALOG */
    uint32_t raw, stored; /* the size of its bytes decoded (at most TT_LOD_BLOCK_BYTES) and stored */
} lod_block;

/* lod_block.codec: its bytes are in the catalog, not compressed on their own. */
#define LOD_BLOCK_IN_CATALOG 0x100u

typedef struct lod_region_rec {
    uint32_t name, file, line, kind;
} lod_region_rec;

typedef struct lod_lane_rec {
    uint32_t name, process;
    uint64_t pid, native_tid;
    uint32_t stream, depths;
    uint64_t begin, end, calls;
    uint64_t refs_off; /* depths * levels lod_ref */
    uint64_t params_off, param_count;
    uint64_t marks_off, mark_count;
    uint64_t tree_off, tree_count; /* lod_tree_rec */
} lod_lane_rec;

/* A node of a lane's call tree as the catalog keeps it: whole numbers
 * (they compress to half of what doubles do). Its exclusive time, its
 * inclusive less its children's, is made again at load, and its parent is
 * stored as how many nodes before it (lod_columns.c). */
typedef struct lod_tree_rec {
    uint32_t parent, region;
    uint64_t visits, inclusive, exclusive;
} lod_tree_rec;

/* A node of a call tree: the call path of its parent (UINT32_MAX for a
 * root) then `region`; its calls, their time and their time less their
 * callees' (ns, whole numbers). The layout of an answer of
 * tt_lod_query_tree (lod.h). */
typedef struct lod_tree_node {
    uint32_t parent, region;
    double visits, inclusive, exclusive;
} lod_tree_node;

/* A call tree being made: its nodes, found by (parent, region). */
typedef struct lod_tree {
    lod_tree_node *nodes;
    size_t count, cap;
    tt_u64map by_path; /* tt_u64_pair(parent, region): node */
} lod_tree;

/* The node for `region` under `parent` in t, made on first use (lod_query.c);
 * UINT32_MAX when memory runs out. */
uint32_t lod_tree_node_of(lod_tree *t, uint32_t parent, uint32_t region);
void lod_tree_free(lod_tree *t);

/* The whole run's call tree of a lane as the index keeps it (lod.c): its
 * nodes, parents before their children. */
const lod_tree_rec *lod_lane_tree(const tt_lod *x, size_t lane, size_t *count);

typedef struct lod_track_rec {
    uint32_t name, lane, kind, size; /* size: TT_LOD_TRACK_OBJECTS's bytes per object, else 0 */
    uint64_t samples;
    double min, max;
    uint64_t refs_off; /* levels lod_ref */
} lod_track_rec;

/* The catalog's arrays (blocks' records, parameters, marks, call trees,
 * samples, objects records) as columns, before it is compressed (`encode`)
 * or after it is decoded (lod_columns.c): 0, or -1 when an array the lanes,
 * tracks or header say is there does not fit or memory runs out. */
int lod_columns(uint8_t *catalog, size_t size, const lod_header *h, int encode);

/* Starts c on the spans of block b, whose bytes are `stored` (lod.c;
 * the builder reads its levels back with it): 0 when b is damaged. c then
 * reads the block's spans with tt_lod_peek, and no further block unless
 * its blocks and block_count say where. */
int lod_block_decode(tt_lod_cursor *c, const lod_block *b, const uint8_t *stored);

/* Builds the index of an experiment, whose trace's files take trace_bytes,
 * and writes its image to the file `path`; when that cannot be written (cache_problem then says why), the
 * image is made in memory instead: *image (malloc'd, the caller frees it)
 * and *size. *image stays NULL when the file was written. Fails (err) only
 * when the trace cannot be read or memory runs out. */
int tt_lod_build_image(const char *experiment_dir, uint64_t signature, uint64_t trace_bytes, const char *path,
                       const tt_lod_progress *progress, uint8_t **image, size_t *size, tt_error *cache_problem,
                       tt_error *err);

#endif

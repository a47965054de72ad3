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
 *                array of the level below it), each lane's call tree,
 *                its chunks (lod_chunk_rec) and their sums (u64)
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
 * Level 0, every call exactly, is the trace's (version 10): a call's exact
 * start and end take the same bits in an index as in the trace (where
 * calls are tens of ns apart they are mostly the clock's noise, which no
 * coding takes out), so an index holding them could not be much smaller
 * than its trace. What the index keeps of level 0 is, per lane and depth,
 * only the calls that the trace's chunks do not hold whole: those open
 * across the edge of a chunk (or closed by the reader at a stream's end),
 * as spans in blocks as above; and per lane its chunks (lod_chunk_rec): the
 * times of each one's first and last event and where a cursor starts
 * reading it (tt_cursor_seek). The calls within a chunk (its ENTER and
 * LEAVE both read from it) are read from the trace when a query needs level
 * 0 (lod_trace.c), one chunk of some tens of thousands of events at a time;
 * a level not stored above level 0 is marked LOD_REF_TRACE, read the same
 * way. A level-0 cursor merges the two, in start order.
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
#define LOD_VERSION 10u

typedef struct lod_header {
    char magic[8];
    uint32_t version;
    uint32_t levels;
    uint64_t signature; /* of the trace files it was built from */
    uint64_t begin, end;
    uint64_t size;                        /* of the whole file */
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

/* lod_ref.off of a level of spans that is level 0: read with the trace. */
#define LOD_REF_TRACE UINT64_MAX

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
    uint64_t tree_off, tree_count;    /* lod_tree_rec */
    uint64_t chunks_off, chunk_count; /* lod_chunk_rec */
    uint64_t sums_off, sum_count;     /* u64: the chunks' sums (lod_chunk_rec.sums_at) */
    uint32_t trace_process;           /* its process's index in the trace (tt_trace_process) */
    uint32_t reserved;
} lod_lane_rec;

/* A chunk of a lane's stream (see above), in the stream's order. */
typedef struct lod_chunk_rec {
    uint64_t first, last; /* the times of its first and last event */
    uint64_t offset;      /* tt_chunk_start's */
    uint64_t before_time, before_ticks;
    uint64_t sums_at; /* the time of its whole calls at depth low + k: the lane's sums[sums_at + k] */
    uint32_t seq, depth, crc;
    uint32_t low, high; /* the depths of the calls it holds whole: low .. high - 1 */
    uint32_t events;    /* read from it (STREAM_END not counted) */
} lod_chunk_rec;

/* The spans at `depth` of the calls that chunk `chunk` of `lane` holds whole,
 * from position `from` on: up to `max` into out (lod_trace.c). Returns how
 * many; fewer than max only at the chunk's end. A chunk that cannot be read
 * as the index found it gives none, and the index says why
 * (tt_lod_read_problem). */
size_t lod_chunk_spans(const tt_lod *x, size_t lane, size_t chunk, uint32_t depth, size_t from, tt_lod_span *out,
                       size_t max);
/* The lane's chunks, and their sums (lod.c). */
const lod_chunk_rec *lod_lane_chunks(const tt_lod *x, size_t lane, size_t *count);
const uint64_t *lod_lane_sums(const tt_lod *x, size_t lane);
/* The first of n chunks whose last event is after t (lod.c). */
size_t lod_chunk_after(const lod_chunk_rec *chunks, size_t n, uint64_t t);
/* Places c at level 0 of (lane, depth) to read the calls within [start,
 * end) but those of the chunks that lie within it and hold them whole,
 * whose time it returns (their sums): the callees of a call that long
 * without reading the chunks it spans. */
uint64_t lod_seek_callees(const tt_lod *x, size_t lane, uint32_t depth, uint64_t start, uint64_t end, tt_lod_cursor *c);
/* What lod_trace.c keeps of an index: set up and freed by lod.c. */
typedef struct lod_trace lod_trace;
lod_trace *lod_trace_new(const char *experiment_dir);
void lod_trace_free(lod_trace *r);
lod_trace *lod_trace_of(const tt_lod *x);
const char *lod_trace_problem(lod_trace *r);
/* The index of the lane's process in the trace (lod.c). */
uint32_t lod_lane_process(const tt_lod *x, size_t lane);

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

/* lod.h -- the viewer's level-of-detail index of an experiment.
 *
 * A timeline viewer asks: "what is visible between t0 and t1 at this many
 * nanoseconds per pixel, in these lanes?". Reading the trace for every such
 * question costs time in proportion to the trace; this index answers in
 * time in proportion to what can be seen, whatever the trace's size.
 *
 * What it holds, built once from the one reader (reader.h):
 *  - Lanes: one per thread stream of every process, in process order.
 *  - Regions: merged by name over processes (as profile.h merges them).
 *  - Per lane and call depth, the calls ("spans") at LEVEL 0: every call,
 *    exactly, in start order. Calls at one depth of one thread never overlap,
 *    so their ends are in order too and a cursor finds the first span of a
 *    time range by binary search. Level 0 is read from the trace itself
 *    (the index keeps where each chunk of it starts, and the calls open
 *    across a chunk's edge: lod_file.h), so the index takes under half the
 *    size of the (compressed) trace (bench/viewer.py) whatever the calls'
 *    times; coarser spans are kept compressed in blocks (lod_file.h), every
 *    other record in one compressed catalog, decoded into memory when the
 *    index is loaded.
 *  - Per lane and depth, coarser LEVELs k = 1, 2, ...: level k has the calls
 *    of level k-1 merged where they are too small to tell apart at its grain
 *    of tt_lod_grain(k) ns: a call at least one grain long stays as it is,
 *    and a run of shorter ones with gaps below a grain becomes one block
 *    (at most 8 grains long) that counts the calls it holds and takes the
 *    region of its longest part. Its times are kept to an eighth of its
 *    grain, rounded outward (what it holds stays within it), where that
 *    does not make it overlap the next: level 0 alone is exact to the ns.
 *    Grains double from 64 ns at level 1. A
 *    level that would keep more than a sixth of the last level stored
 *    (LOD_LEVEL_SHRINK) is not stored (it is that level), so the levels
 *    above 0 together hold at most a fifth as many items as level 0. A
 *    level of one block (TT_LOD_BLOCK_SPANS spans or fewer) is not merged
 *    further, nor, in a trace of at most 65,536 calls, a level 0 of up to
 *    four blocks (lod_build.c), and levels above the last one stored
 *    anywhere are left out. A query at p ns per pixel reads the coarsest
 *    level whose grain is at most p, so it reads at most some four items
 *    per depth and pixel, or a small trace's depth whole.
 *  - Counter tracks: the COUNTER samples of a lane by name, and the PARAM_INT
 *    and PARAM_UINT values as tracks of their own; per level, min, max and
 *    last of the samples in each grain-sized bucket.
 *  - Per lane, the parameters (with the depth they were recorded at) and
 *    the marks.
 *  - Per lane, its call tree of the whole run (a node per call path, made
 *    from the reader's nesting as the trace is read): the whole run's
 *    profile without a span read, whatever the trace's size.
 *  - Objects (--objects, OBJECTS in format.h): per process and object type,
 *    a track of the objects alive over time (created less destroyed, summed
 *    over the process's streams, a sample at each OBJECTS record), made
 *    after every other track; and the OBJECTS records themselves, in time
 *    order, each with its creating region and its type's track, for the
 *    objects of a time range (lod_objects.c). Records are written about
 *    every 100 ms, so a range's objects are those recorded within it.
 *
 * Contract:
 *  - tt_lod_open loads the index cached in the experiment directory
 *    (TT_LOD_FILE) when it is there, intact and made from the trace as it is
 *    now (a signature of the trace files' names, sizes and times); otherwise
 *    it builds the index and caches it (atomically, through a temporary
 *    file). An experiment directory that cannot be written is no error: the
 *    index is then kept in memory only and tt_lod_cache_problem says why.
 *  - A loaded index is read-only: any number of threads may query it at once.
 *  - Queries allocate only their result (and scratch they free), read
 *    the index (its spans mapped from its file) and, at level 0, the chunks
 *    of the trace in their range, and never fail for a range or lane that is out of bounds: they
 *    answer what lies within. The index keeps the last 64 blocks of spans
 *    they decompressed (some 3 MiB at most) and the calls of the last 32
 *    chunks of the trace they read, for the queries that follow.
 *  - A damaged cache file is never trusted: every offset, count and string
 *    in it is checked when it is loaded, and one that does not fit makes a
 *    rebuild. The spans are not read then (loading costs the metadata
 *    only): a cursor stops at a span whose bytes or region do not fit.
 *  - What the reader found cut or damaged while building is kept, one line
 *    each (tt_lod_problem), and stored in the cache with the rest.
 */
#ifndef TRACETOP_LOD_H
#define TRACETOP_LOD_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define TT_LOD_FILE "view.idx"
#define TT_LOD_MAX_LEVELS 32

typedef struct tt_lod tt_lod;

/* ---- the records, as the cache file stores them (little-endian hosts) ---- */

/* A span as queries see it (the file stores them compressed, lod_file.h). */
typedef struct tt_lod_span {
    uint64_t start, end; /* ns since the epoch */
    uint32_t region;     /* index into the regions */
    uint32_t calls;      /* 1: one call, exactly; more: a block of that many */
} tt_lod_span;

typedef struct tt_lod_sample {
    uint64_t time;         /* of the first sample in the bucket */
    double min, max, last; /* level 0: all three the sample's value */
} tt_lod_sample;

enum tt_lod_param_kind { TT_LOD_PARAM_INT = 1, TT_LOD_PARAM_UINT = 2, TT_LOD_PARAM_STRING = 3 };

typedef struct tt_lod_param {
    uint64_t time;
    uint32_t depth; /* regions open when it was recorded: it belongs to the innermost */
    uint32_t name;  /* string offset */
    uint32_t kind;  /* enum tt_lod_param_kind */
    uint32_t text;  /* string offset of the value (TT_LOD_PARAM_STRING) */
    int64_t value;  /* TT_LOD_PARAM_INT; TT_LOD_PARAM_UINT as its bits */
} tt_lod_param;

typedef struct tt_lod_mark {
    uint64_t time;
    uint32_t name; /* string offset */
    uint32_t depth;
} tt_lod_mark;

/* ---- what the index describes ---- */

typedef struct tt_lod_region_info {
    const char *name, *file;
    uint32_t line;
    uint8_t kind; /* enum tt_region_kind; 0 for "<undefined>" */
} tt_lod_region_info;

typedef struct tt_lod_lane_info {
    const char *name;    /* the thread's name */
    const char *process; /* what the process ran */
    uint64_t pid, native_tid;
    uint32_t stream;
    uint32_t depths;     /* call depths with spans */
    uint64_t begin, end; /* first and last event; both 0 without events */
    uint64_t calls;      /* level 0 spans */
    uint32_t params, marks;
} tt_lod_lane_info;

enum tt_lod_track_kind { TT_LOD_TRACK_COUNTER = 1, TT_LOD_TRACK_PARAM = 2, TT_LOD_TRACK_OBJECTS = 3 };

typedef struct tt_lod_track_info {
    const char *name; /* TT_LOD_TRACK_OBJECTS: the type's name */
    uint32_t lane;    /* TT_LOD_TRACK_OBJECTS: the first lane of its process */
    uint32_t kind;    /* enum tt_lod_track_kind */
    uint64_t samples; /* at level 0 */
    double min, max;  /* over all samples */
    uint32_t size;    /* TT_LOD_TRACK_OBJECTS: the bytes of one object (format.h); else 0 */
} tt_lod_track_info;

/* An OBJECTS record: the objects of one type (its track) created in one
 * region by a process, counted since the previous record of that place. */
typedef struct tt_lod_objects {
    uint64_t time;
    uint32_t track;  /* a TT_LOD_TRACK_OBJECTS track */
    uint32_t region; /* the creating region; UINT32_MAX: none was recorded */
    uint64_t created, destroyed;
} tt_lod_objects;

/* How a build goes, for a caller that shows it, from the building thread:
 * `say` is told the events read so far every TT_LOD_PROGRESS_EVENTS events
 * (TT_LOD_READING), then the spans merged into coarser levels so far after
 * each block merged (TT_LOD_MERGING), then once that the index is written
 * (TT_LOD_WRITING): no phase of a long build goes by unsaid. */
#define TT_LOD_PROGRESS_EVENTS (1u << 18)
typedef enum tt_lod_phase { TT_LOD_READING, TT_LOD_MERGING, TT_LOD_WRITING } tt_lod_phase;
typedef struct tt_lod_progress {
    void (*say)(void *ctx, tt_lod_phase phase, uint64_t done);
    void *ctx;
} tt_lod_progress;

/* Loads or builds the index of the experiment at `experiment_dir`. *built
 * (when not NULL) says whether it was built now; `progress` (or NULL) is
 * told how a build goes. */
int tt_lod_open(const char *experiment_dir, tt_lod **out, int *built, const tt_lod_progress *progress, tt_error *err);
void tt_lod_close(tt_lod *x);

/* The grain of level k in ns (level 0: 0, every call). */
uint64_t tt_lod_grain(unsigned level);

uint64_t tt_lod_begin(const tt_lod *x); /* earliest event, ns since the epoch */
uint64_t tt_lod_end(const tt_lod *x);   /* latest event */
unsigned tt_lod_levels(const tt_lod *x);
size_t tt_lod_region_count(const tt_lod *x);
tt_lod_region_info tt_lod_region(const tt_lod *x, size_t index);
size_t tt_lod_lane_count(const tt_lod *x);
tt_lod_lane_info tt_lod_lane(const tt_lod *x, size_t index);
size_t tt_lod_track_count(const tt_lod *x);
tt_lod_track_info tt_lod_track(const tt_lod *x, size_t index);
size_t tt_lod_problem_count(const tt_lod *x);
const char *tt_lod_problem(const tt_lod *x, size_t index);
/* NULL when the index came from or went to the cache file; else why not. */
const char *tt_lod_cache_problem(const tt_lod *x);

/* Spans are stored in blocks of up to TT_LOD_BLOCK_SPANS, each compressed
 * on its own (lod_file.h); decoded, a block takes at most
 * TT_LOD_BLOCK_BYTES (the widths of its columns, then their bytes). */
#define TT_LOD_BLOCK_SPANS 2048u
#define TT_LOD_BLOCK_BYTES (4u + TT_LOD_BLOCK_SPANS * 24u)
/* A level-0 cursor takes the calls a chunk of the trace holds this many at a time. */
#define TT_LOD_CHUNK_SPANS 512u

/* Reading the spans of one depth of a lane at one level, in order. The
 * index keeps them compressed (lod_file.h): a cursor decompresses the block
 * it reads into its own buffer (or copies it from the blocks the index
 * keeps) and decodes it (so a cursor is not copied once placed). At level 0
 * it merges those (the calls open across a chunk's edge) with the calls the
 * trace's chunks hold whole, read from the trace (lod_file.h). Its fields
 * are the cursor's own. */
typedef struct tt_lod_cursor {
    const tt_lod *x;
    const struct lod_block *blocks;
    size_t block_count, block; /* the block being read */
    const uint8_t *col[4];     /* in raw: gaps, durations, regions, calls less one */
    uint8_t width[4];          /* bytes per value of each column */
    uint32_t spans, next;      /* in the block; the next to decode */
    uint64_t prev_end;
    uint64_t region_count; /* a span's region is below it */
    uint64_t until;        /* no span that starts at or after it is read */
    int have;              /* span holds the span at the cursor */
    tt_lod_span span;
    /* Level 0: the blocks' next span, and the trace's. */
    int trace, have_block, taken; /* taken: 1 span came from the blocks, 2 from the trace */
    int chunk_done;               /* local holds the last of its chunk's calls */
    uint64_t skip_from, skip_to;  /* the chunks within are not read (lod_seek_callees) */
    tt_lod_span block_span;
    size_t lane, chunk, chunk_count, chunk_from; /* chunk_from: where `local` was taken in it */
    uint32_t depth, local_count, local_next;
    tt_lod_span local[TT_LOD_CHUNK_SPANS];
    uint8_t raw[TT_LOD_BLOCK_BYTES];
} tt_lod_cursor;

/* Places c at the first span of (lane, depth, level) that ends after t0,
 * to read those that start before t1. Out of range: c reads no span. */
void tt_lod_seek(const tt_lod *x, size_t lane, uint32_t depth, unsigned level, uint64_t t0, uint64_t t1,
                 tt_lod_cursor *c);
/* The span at the cursor, or NULL at the end (or where the data is damaged:
 * a span whose bytes or region do not fit ends the reading; a chunk of the
 * trace that is not as the index found it gives no calls, and
 * tt_lod_read_problem says why). */
const tt_lod_span *tt_lod_peek(tt_lod_cursor *c);
/* Moves past the span tt_lod_peek gave. */
static inline void tt_lod_advance(tt_lod_cursor *c) { c->have = 0; }
/* NULL while every chunk of the trace a query read was as the index found
 * it; else the first problem, in one line (a trace changed or cut since the
 * index was made: open it again to make a new one). */
const char *tt_lod_read_problem(const tt_lod *x);
const tt_lod_param *tt_lod_params(const tt_lod *x, size_t lane, size_t *count);
const tt_lod_mark *tt_lod_marks(const tt_lod *x, size_t lane, size_t *count);
const tt_lod_sample *tt_lod_samples(const tt_lod *x, size_t track, unsigned level, size_t *count);
/* The OBJECTS records of every process, in time order. */
const tt_lod_objects *tt_lod_object_records(const tt_lod *x, size_t *count);
/* A string of the index by its offset (tt_lod_param.name, .text, marks). */
const char *tt_lod_string(const tt_lod *x, uint32_t offset);

/* ---- queries (lod_query.c) ---- */

/* A growable result of a query: a byte buffer the caller frees. */
typedef struct tt_lod_buffer {
    uint8_t *data;
    size_t size, cap;
} tt_lod_buffer;

void tt_lod_buffer_free(tt_lod_buffer *b);

/* A viewport: [t0, t1) in ns since the epoch over `width` pixels. */
typedef struct tt_lod_view {
    uint64_t t0, t1;
    uint32_t width;
} tt_lod_view;

/* The level a view reads: the coarsest whose grain fits in a pixel. */
unsigned tt_lod_level_for(const tt_lod *x, tt_lod_view v);

/* What can be seen of `lanes` (lane_count of them) in view v, as
 *     u32 count, u32 level, f64 start[count], f64 end[count],
 *     u32 region[count], u32 calls[count], u32 lane[count], u32 depth[count]
 * (times in ns since the epoch). Items below a pixel are merged further so
 * that a depth yields about one item per pixel. When `only` is not NULL
 * (a flag per region), only calls of those regions are given, read from
 * level 0: the occurrences of a search. `limit` caps the items (0: none).
 * 0, or -1 when memory runs out. */
int tt_lod_query_spans(const tt_lod *x, tt_lod_view v, const uint32_t *lanes, size_t lane_count, const uint8_t *only,
                       size_t limit, tt_lod_buffer *out);

/* The samples of `tracks` in view v, as
 *     u32 count, u32 level, f64 time[count], f64 min[count], f64 max[count],
 *     f64 last[count], u32 track[count] (+ u32 padding when count is odd). */
int tt_lod_query_samples(const tt_lod *x, tt_lod_view v, const uint32_t *tracks, size_t track_count,
                         tt_lod_buffer *out);

/* The call-path tree of `lanes` in [t0, t1), merged over the lanes: every
 * call that overlaps the range counts one visit and the part of its time
 * within the range (no node when t1 <= t0). A range that holds the whole
 * run is answered from the lanes' trees the index keeps, without reading a
 * span; any other from the spans, in time in proportion to the calls in
 * it. As
 *     u32 count, u32 reserved, then per node (in depth-first order, parents
 *     first): u32 parent (UINT32_MAX for a root), u32 region,
 *     f64 visits, f64 inclusive_ns, f64 exclusive_ns
 * 0, or -1 when memory runs out. */
int tt_lod_query_tree(const tt_lod *x, uint64_t t0, uint64_t t1, const uint32_t *lanes, size_t lane_count,
                      tt_lod_buffer *out);

/* The call at `depth` of `lane` that runs at `time` (level 0): 1 with *span,
 * its self time (its time less its callees') and the range [*first_param,
 * *first_param + *param_count) of the lane's parameters recorded while it
 * ran (those at depth + 1 are its own, deeper ones its callees');
 * 0 when no call runs there. */
int tt_lod_call_at(const tt_lod *x, size_t lane, uint32_t depth, uint64_t time, tt_lod_span *span, uint64_t *self_ns,
                   size_t *first_param, size_t *param_count);

/* ---- objects (lod_objects.c) ---- */

/* The objects recorded in [t0, t1) by the processes `lanes` belong to
 * (all of each such process's objects: an object is not its thread's), per
 * creating region and type, as
 *     u32 count, u32 reserved, then per row: u32 region (UINT32_MAX: none),
 *     u32 track, f64 created, f64 destroyed, f64 bytes (created * size)
 * 0, or -1 when memory runs out. */
int tt_lod_query_objects(const tt_lod *x, uint64_t t0, uint64_t t1, const uint32_t *lanes, size_t lane_count,
                         tt_lod_buffer *out);

/* The objects of the same processes (of type `type` only, unless NULL),
 * per node of tt_lod_query_tree(x, t0, t1, lanes), in its order: records
 * name the creating region only, not its call path, so the objects of a
 * region are shared among the call paths where it ran in proportion to
 * their exclusive time there (objects are made while a region runs its own
 * code), over all lanes of those processes; `paths` says among how many
 * (1: exactly its own). As
 *     u32 count, u32 reserved, f64 unplaced[3] (created, destroyed, bytes
 *     of regions that did not run in the range, or of none),
 *     f64 created[count], f64 destroyed[count], f64 bytes[count],
 *     u32 paths[count] (+ u32 padding when count is odd)
 * 0, or -1 when memory runs out. */
int tt_lod_query_tree_objects(const tt_lod *x, uint64_t t0, uint64_t t1, const uint32_t *lanes, size_t lane_count,
                              const char *type, tt_lod_buffer *out);

#endif

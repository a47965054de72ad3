/* lod_file.h -- the layout of the level-of-detail index (lod.h), shared by
 * its builder (lod_build.c, which writes it) and its loader (lod.c, which
 * checks it and reads it in place). Internal to those two files.
 *
 * The index is one image, in memory as in its cache file: a header, then
 * arrays of fixed-size records (8-byte aligned), then a blob of
 * NUL-terminated strings. Records refer to arrays by byte offset from the
 * start of the image and to strings by byte offset into the blob.
 *
 *     header
 *     regions    lod_region_rec[region_count]
 *     lanes      lod_lane_rec[lane_count]
 *     tracks     lod_track_rec[track_count]
 *     problems   u32 string offset[problem_count] (padded to 8 bytes)
 *     refs       lod_ref: per lane depths * levels (depth-major), per track levels
 *     data       spans, samples, params, marks (a level not stored shares
 *                the array of the level below it)
 *     objects    tt_lod_objects[object_count], in time order
 *     strings    the blob
 *
 * Spans are stored compressed, in blocks of up to LOD_BLOCK_SPANS: an array
 * of lod_block (the first start and last end of each block, for binary
 * searches, and where its bytes are), then the blocks' bytes. A block holds
 * per span four varints (format.h): the gap from the end of the span before
 * it (from the block's start for its first), the duration, the region, and
 * the calls less one. Calls at one depth never overlap, so gaps are never
 * negative; a typical span takes 5 to 8 bytes instead of 24.
 */
#ifndef TRACETOP_LOD_FILE_H
#define TRACETOP_LOD_FILE_H

#include <stdint.h>

#include "lod.h"

#define LOD_MAGIC "TTLODIDX"
#define LOD_VERSION 6u

typedef struct lod_header {
    char magic[8];
    uint32_t version;
    uint32_t levels;
    uint64_t signature; /* of the trace files it was built from */
    uint64_t begin, end;
    uint64_t size; /* of the whole image */
    uint32_t region_count, lane_count, track_count, problem_count;
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
    uint32_t codec;       /* enum tt_codec (format.h) */
    uint32_t raw, stored; /* the size of its bytes decoded (at most TT_LOD_BLOCK_BYTES) and stored */
} lod_block;

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
} lod_lane_rec;

typedef struct lod_track_rec {
    uint32_t name, lane, kind, size; /* size: TT_LOD_TRACK_OBJECTS's bytes per object, else 0 */
    uint64_t samples;
    double min, max;
    uint64_t refs_off; /* levels lod_ref */
} lod_track_rec;

/* Starts c on the spans of block b, whose stored bytes are `stored` (lod.c;
 * the builder reads its levels back with it): 0 when b is damaged. c then
 * reads the block's spans with tt_lod_peek, and no further block unless
 * its blocks and block_count say where. */
int lod_block_decode(tt_lod_cursor *c, const lod_block *b, const uint8_t *stored);

/* Builds the index of an experiment and writes its image to the file
 * `path`; when that cannot be written (cache_problem then says why), the
 * image is made in memory instead: *image (malloc'd, the caller frees it)
 * and *size. *image stays NULL when the file was written. Fails (err) only
 * when the trace cannot be read or memory runs out. */
int tt_lod_build_image(const char *experiment_dir, uint64_t signature, const char *path,
                       const tt_lod_progress *progress, uint8_t **image, size_t *size, tt_error *cache_problem,
                       tt_error *err);

#endif

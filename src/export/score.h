/* score.h -- `tracetop score`: what each region costs in trace size, as
 * scorep-score tells it, and what a filter would save.
 *
 * One pass over the trace through the reader. Per region (merged by name
 * over processes): visits, exclusive time, and the bytes its ENTER and
 * LEAVE records take in the native trace, exactly (the reader's record
 * sizes), and in OTF2 (libotf2's own size estimates). Everything that is
 * not a call (parameters, counters, marks, switches, ends of streams) is
 * counted apart: a filter does not remove it.
 *
 * A prediction of the native trace's size under a filter keeps what the
 * filter leaves: the definitions as they are, each stream's file header,
 * its records less those of the excluded regions, taking on disk what its
 * records take now per byte (the writer compresses some chunks), and a
 * chunk header per chunk those records fill.
 */
#ifndef TRACETOP_SCORE_H
#define TRACETOP_SCORE_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "filter.h"
#include "reader.h"

typedef struct tt_score_region {
    const char *name, *file;
    uint8_t kind; /* enum tt_region_kind; 0 for "<undefined>" */
    uint64_t visits, exclusive_ns;
    uint64_t bytes;      /* native: its records */
    uint64_t otf2_bytes; /* OTF2: estimated */
    uint64_t tree_nodes; /* call paths ending in it, in the streams' call trees (format.h: TREE) */
} tt_score_region;

typedef struct tt_score {
    const tt_trace *trace;
    size_t region_count;
    tt_score_region *regions;
    uint64_t other_events, other_bytes, other_otf2_bytes;
    uint64_t streams;
    uint64_t *stream_bytes; /* records of each stream, decoded */
    double *stream_stored;  /* the bytes its chunks of records take on disk per byte decoded (compressed: < 1) */
    uint64_t chunk_payload; /* record bytes a chunk holds */
    uint64_t defs_bytes;    /* the definitions files, as they are */
    uint64_t trace_bytes;   /* all trace files, as they are */
    uint64_t tree_bytes, tree_nodes; /* the streams' call trees, on disk */
    uint64_t max_stream_bytes;       /* records of the largest stream */
    uint64_t max_process_bytes;      /* records of the process with the most */
    uint64_t total_ns;               /* exclusive time of all regions */
    size_t problem_count;
    char **problems;
    int corrupt;
} tt_score;

int tt_score_build(const tt_trace *t, tt_score **out, tt_error *err);
void tt_score_free(tt_score *s);

/* 1 when filter f (NULL: none) excludes region r. */
int tt_score_excluded(const tt_score_region *r, const tt_filter *f);

/* The size of the native trace with filter f (NULL: as recorded), and of
 * the events of an OTF2 trace. */
uint64_t tt_score_native_bytes(const tt_score *s, const tt_filter *f);
uint64_t tt_score_otf2_bytes(const tt_score *s, const tt_filter *f);

/* A filter file (malloc'd text) excluding the regions that cost the most
 * bytes for the least time: each taking at least min_share of the trace's
 * record bytes, with at most max_ns_per_visit exclusive time per visit.
 * *count is the number excluded (the text is a valid filter even when 0).
 * NULL when memory runs out. */
char *tt_score_suggest(const tt_score *s, double min_share, double max_ns_per_visit, size_t *count);

/* The report (malloc'd): totals, memory, groups, and the `top` regions
 * with the most bytes; with a filter (named in the text as filter_name,
 * "the filter f.txt"), which it excludes and what remains. */
char *tt_score_render(const tt_score *s, const tt_filter *f, const char *filter_name, size_t top);

#endif

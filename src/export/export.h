/* export.h -- converting a native trace to the formats other tools read:
 * `tracetop convert EXP --to FORMAT` and `tracetop run --format FORMAT`.
 *
 *     otf2        OTF2 archive (libotf2): Vampir, otf2-print, Score-P tools
 *     cubex       CUBE4 call-path profile: Cube, Extra-P, pycubexr
 *     perfetto    Perfetto protobuf (TrackEvent): ui.perfetto.dev, trace_processor
 *     chrome      Trace Event JSON: chrome://tracing, Perfetto
 *     speedscope  speedscope's JSON, an evented profile per thread
 *     pstats      Python's profile stats (marshal): pstats.Stats, snakeviz, gprof2dot
 *     collapsed   collapsed stacks: flamegraph.pl, speedscope
 *
 * Contract:
 *  - Every converter reads the trace through the one reader (reader.h),
 *    directly or through the call-path profile (profile.h), and holds at
 *    most one stream's open regions, or the call tree, in memory: never the
 *    events; with objects counted, also a process's counts per type and
 *    batch (objects_series.h). Output is streamed to the file.
 *  - What the reader finds cut or damaged is converted up to where it stops
 *    and reported in the result, one line each; it does not fail the
 *    conversion. Failing to write the output does, with one line naming
 *    the file, and no partial output is left behind.
 *  - Times in the output are those of the reader: ns since the
 *    experiment's epoch (the earliest process start), in the unit each
 *    format wants.
 */
#ifndef TRACETOP_EXPORT_H
#define TRACETOP_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "reader.h"

typedef struct tt_export_result {
    uint64_t events;      /* events of the native trace read */
    uint64_t bytes;       /* bytes written */
    size_t problem_count; /* lines saying what was cut or damaged */
    char **problems;
    int corrupt; /* 1 when any was damage rather than a cut */
} tt_export_result;

/* The name of format number `index`, in the order above; NULL past the last. */
const char *tt_export_format(size_t index);

/* The file name a format is written to in an experiment directory
 * ("traces.otf2", "profile.cubex", ...); NULL for an unknown format. */
const char *tt_export_default_name(const char *format);

/* Converts trace t to `format` at `path` (for otf2: the anchor file,
 * "DIR/NAME.otf2", beside which NAME.def and NAME/ are written). *result is
 * set on success and must then be freed with tt_export_result_free. */
int tt_export(const tt_trace *t, const char *format, const char *path, tt_export_result *result, tt_error *err);

void tt_export_result_free(tt_export_result *result);

#endif

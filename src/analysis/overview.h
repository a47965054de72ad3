/* overview.h -- a compact timeline of an experiment: for every thread, what
 * ran in each of `width` columns of a time range, for the `depth` outermost
 * levels of its call stack. The timeline drawn under a measured Jupyter
 * cell; small whatever the trace (lanes x depth x width cells).
 *
 * Contract:
 *  - tt_overview_build reads every stream once through the reader, in
 *    memory proportional to the overview, not to the trace.
 *  - Lanes are the present streams of every process, in the trace's process
 *    order, then by stream number.
 *  - Column c covers [begin + c*(end-begin)/width, begin + (c+1)*(end-begin)/width).
 *    Cell (level, c) of a lane holds the region whose one activation at
 *    that stack level (0: outermost) covers the most of column c, or
 *    TT_OVERVIEW_EMPTY when nothing ran there at that level. An activation
 *    shorter than a column still shows when nothing longer shares it.
 *  - What the reader finds cut or damaged ends a lane's data there; saying
 *    so is the profile's job (profile.h), not this one's.
 */
#ifndef TRACETOP_OVERVIEW_H
#define TRACETOP_OVERVIEW_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "reader.h"

#define TT_OVERVIEW_EMPTY UINT32_MAX

typedef struct tt_overview_lane {
    size_t process; /* index into the trace's processes */
    size_t stream;
    uint32_t *cells; /* depth rows of width cells: process-local region ids or TT_OVERVIEW_EMPTY */
} tt_overview_lane;

typedef struct tt_overview {
    const tt_trace *trace;
    uint64_t begin_ns, end_ns;
    size_t width, depth;
    size_t lane_count;
    tt_overview_lane *lanes;
} tt_overview;

/* Builds the overview of [begin_ns, end_ns) (end_ns > begin_ns, width and
 * depth at least 1). Fails on bad arguments, when a stream cannot be
 * opened, or when memory runs out. */
int tt_overview_build(const tt_trace *t, uint64_t begin_ns, uint64_t end_ns, size_t width, size_t depth,
                      tt_overview **out, tt_error *err);
void tt_overview_free(tt_overview *o);

#endif

/* usage.h -- the CPU time and resident memory of this process over a span
 * of time, sampled by a thread of its own: the chart under a measured
 * Jupyter cell.
 *
 * Contract:
 *  - tt_usage_start takes a first sample and starts a plain pthread (it
 *    runs no Python, so no hook ever records it) that takes one every
 *    interval.
 *    tt_usage_stop wakes it, has it take a last sample, joins it and hands
 *    over the samples: the last one is the end of the span.
 *  - Memory stays bounded however long the span: when the buffer holds
 *    TT_USAGE_MAX_SAMPLES, every other sample is dropped and the interval
 *    doubles, so the samples keep covering the whole span evenly.
 *  - A sample is: ns since tt_usage_start (CLOCK_MONOTONIC), CPU ns used by
 *    the process since it began (all threads, user and system), resident
 *    bytes (from /proc/self/statm; 0 where it cannot be read).
 */
#ifndef TRACETOP_USAGE_H
#define TRACETOP_USAGE_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define TT_USAGE_MAX_SAMPLES 2048

typedef struct tt_usage_sample {
    uint64_t time_ns;
    uint64_t cpu_ns;
    uint64_t rss_bytes;
} tt_usage_sample;

typedef struct tt_usage tt_usage;

/* Starts sampling every interval_ns (at least 1 ms). */
int tt_usage_start(uint64_t interval_ns, tt_usage **out, tt_error *err);

/* Stops sampling and frees u; *samples (malloc'd, the caller frees it) gets
 * at least two samples, the first and the last, and *count their number. */
void tt_usage_stop(tt_usage *u, tt_usage_sample **samples, size_t *count);

#endif

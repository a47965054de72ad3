/* objects_series.h -- the objects of one process over time, per type, for
 * the converters that draw them as counters: OTF2 metrics, Perfetto and
 * Chrome counter tracks.
 *
 * An OBJECTS record (format.h) adds what one place (region, type) counted
 * since its previous record, and lands in the stream of whichever thread
 * wrote the batch, so a type's counts at a time are sums over all the
 * streams of the process up to that time. A converter reads a process's
 * streams as it always does and hands each OBJECTS event to
 * tt_objects_series_add; once the process is read, tt_objects_series_finish
 * turns them into points in time order: per batch time and type, the
 * objects of the type created and destroyed since counting began, over the
 * process. No second read of the trace.
 *
 * Memory: a point per batch and type (a batch about every 100 ms while
 * objects are counted), not per event.
 */
#ifndef TRACETOP_OBJECTS_SERIES_H
#define TRACETOP_OBJECTS_SERIES_H

#include <stddef.h>
#include <stdint.h>

#include "reader.h"

typedef struct tt_objects_point {
    uint64_t time; /* ns since the epoch */
    uint32_t type; /* a string id of the process: the type's name */
    /* Once finished: since counting began, over the process. Before: the
     * events' sums at this time. */
    uint64_t created, destroyed;
} tt_objects_point;

typedef struct tt_objects_series {
    tt_objects_point *points; /* once finished: by time, then type */
    size_t count;
    uint32_t *types; /* once finished: the types of the points, each once, in order of first point */
    size_t type_count;
    /* While adding: per type string id, its latest point + 1 (0: none);
     * finishing marks there the types it has seen. */
    uint32_t *latest;
    size_t point_cap, latest_cap, type_cap;
} tt_objects_series;

/* Empties s for the next process (s zeroed to begin with). */
void tt_objects_series_reset(tt_objects_series *s);

/* Adds an OBJECTS event of the process. 0, or -1 when memory runs out. */
int tt_objects_series_add(tt_objects_series *s, const tt_event *ev);

/* Sorts the points and makes their counts cumulative. 0, or -1 when memory
 * runs out. */
int tt_objects_series_finish(tt_objects_series *s);

/* The objects of a point's type alive at its time. */
static inline uint64_t tt_objects_alive(const tt_objects_point *p)
{
    return p->created > p->destroyed ? p->created - p->destroyed : 0;
}

void tt_objects_series_free(tt_objects_series *s);

#endif

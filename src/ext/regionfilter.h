/* regionfilter.h -- the filter in force, `--filter FILE` (regionfilter.c):
 * by region id, whether a call is recorded, and a call seen by a hook
 * recorded or pushed as not recorded accordingly.
 */
#ifndef TRACETOP_REGIONFILTER_H
#define TRACETOP_REGIONFILTER_H

#include "ext.h"

#pragma GCC visibility push(hidden)

/* By region id: 1 when the filter excludes the region. NULL when no filter
 * is in force, so that without one a call pays a test of this pointer. */
extern uint8_t *tt_region_filtered;

/* Loads the filter file at path (NULL: none) for the next session; -1 with
 * TraceError saying where the file is wrong. */
int tt_region_filter_set(const char *path);
void tt_region_filter_clear(void);

/* To be called with each region defined: decides its flag. Returns the
 * region, or TT_STACK_SKIP when its flag could not be stored. */
uint32_t tt_region_filter_defined(uint32_t region);

/* Whether a filter is in force: from the start of a session that has one
 * to its end. tt_region_filtered may be NULL meanwhile (no region defined
 * yet), so that only this says whether a region defined later may be. */
int tt_region_filter_in_force(void);

/* 1 when `region` (a region id, TT_STACK_SKIP or TT_STACK_OWN) is filtered out. */
static inline int tt_region_is_filtered(uint32_t region)
{
    return tt_unlikely(tt_region_filtered != NULL) && region < TT_STACK_OWN && tt_region_filtered[region];
}

/* A call seen by a hook's _general function: recorded, or pushed as not
 * recorded. */
static inline void tt_hook_enter(tt_stream *s, uint32_t region)
{
    if (tt_likely(region < TT_STACK_OWN)) {
        if (tt_likely(!tt_region_is_filtered(region)))
            tt_stream_enter(s, tt_clock_now(), region);
        else
            tt_stream_skip(s, TT_STACK_SKIP);
    } else {
        tt_stream_skip(s, region);
    }
}

#pragma GCC visibility pop

#endif

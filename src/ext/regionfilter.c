/* regionfilter.c -- the filter in force (`--filter FILE`): one flag per region.
 *
 * The flags are decided once per region, from its name and file, when a
 * session starts (for the regions known by then) and when a region is
 * defined during one. They are kept apart from the region ids cached on
 * code objects and C functions because those outlive a session while a
 * filter does not: the next session (another Jupyter cell, a second
 * tracetop.start()) may filter differently or not at all.
 */
#include "regionfilter.h"

#include "filter.h"
#include "measurement.h"

uint8_t *tt_region_filtered;
static uint32_t covered; /* regions [0, covered) have their flag */
static uint32_t capacity;
static tt_filter *filter;

/* Decides the flags of the regions defined up to `count`. */
static int cover(uint32_t count)
{
    if (count <= covered) return 0;
    if (count > capacity) {
        uint32_t cap = capacity ? capacity : 256;
        while (cap < count) cap *= 2;
        uint8_t *grown = realloc(tt_region_filtered, cap);
        if (!grown) return -1;
        tt_region_filtered = grown;
        capacity = cap;
    }
    const tt_registry *r = &tt_definitions;
    for (uint32_t id = covered; id < count; id++) {
        const tt_region_def *d = &r->regions[id];
        tt_region_filtered[id] = (uint8_t)tt_filter_excludes(filter, r->strings[d->name], r->strings[d->file]);
    }
    covered = count;
    return 0;
}

int tt_region_filter_set(const char *path)
{
    tt_region_filter_clear();
    if (!path) return 0;
    tt_error err;
    if (tt_filter_load(path, &filter, &err) != 0) {
        tt_raise(&err);
        return -1;
    }
    if (cover(tt_definitions.region_count) != 0) {
        tt_region_filter_clear();
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

int tt_region_filter_in_force(void) { return filter != NULL; }

void tt_region_filter_clear(void)
{
    tt_filter_free(filter);
    filter = NULL;
    free(tt_region_filtered);
    tt_region_filtered = NULL;
    covered = capacity = 0;
}

uint32_t tt_region_filter_defined(uint32_t region)
{
    if (!filter || region >= TT_STACK_OWN) return region;
    /* Without memory for its flag a region cannot be looked up safely:
     * it is not recorded, like a region that could not be defined. */
    return cover(region + 1) == 0 ? region : TT_STACK_SKIP;
}

/* clock.h -- the time source of every event.
 *
 * On x86-64 with an invariant TSC that the kernel itself trusts as its
 * clocksource, events are stamped with rdtsc: a few cycles, no system call.
 * Elsewhere CLOCK_MONOTONIC in nanoseconds (vDSO, no system call either).
 * Ticks are only meaningful within one process; tt_clock_sync pairs them
 * with monotonic and real time so readers can put processes on one axis.
 */
#ifndef TRACETOP_CLOCK_H
#define TRACETOP_CLOCK_H

#include <stdint.h>
#include <time.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

/* Chosen once by tt_clock_init; read on every event. */
extern int tt_clock_tsc;

/* Picks the clock and measures its rate (0.25 ms on first call; later
 * calls return at once). */
void tt_clock_init(void);

/* The chosen clock's nominal rate (ticks: TSC cycles, or nanoseconds). */
uint64_t tt_clock_ticks_per_second(void);

static inline uint64_t tt_monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t tt_clock_now(void)
{
#if defined(__x86_64__)
    if (tt_clock_tsc) return __rdtsc();
#endif
    return tt_monotonic_ns();
}

typedef struct tt_clock_sync {
    uint64_t ticks, monotonic_ns, realtime_ns;
} tt_clock_sync;

/* One reading of all three clocks, taken as close together as possible. */
void tt_clock_sync_now(tt_clock_sync *out);

#endif

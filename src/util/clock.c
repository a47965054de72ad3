/* clock.c -- choosing and calibrating the event clock. */
#include "clock.h"

#include <stdio.h>
#include <string.h>

int tt_clock_tsc;
static uint64_t ticks_per_second;

#if defined(__x86_64__)
/* The TSC is usable across cores and frequency changes only when it is
 * invariant; the kernel choosing it as clocksource is the strongest sign
 * that it also is synchronised between CPUs on this machine. */
static int tsc_trusted(void)
{
    char line[64] = "";
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    if (!f) return 0;
    int ok = fgets(line, sizeof line, f) != NULL && strncmp(line, "tsc", 3) == 0;
    fclose(f);
    return ok;
}

/* A TSC reading and the monotonic time it was taken at: the middle of the
 * two clock readings around it, from the closest of a few tries. */
static void tsc_pair(uint64_t *ns, uint64_t *tsc)
{
    uint64_t closest = UINT64_MAX;
    for (int i = 0; i < 4; i++) {
        uint64_t before = tt_monotonic_ns(), t = __rdtsc(), after = tt_monotonic_ns();
        if (after - before < closest) {
            closest = after - before;
            *ns = before + closest / 2;
            *tsc = t;
        }
    }
}

/* Measured for 0.25 ms, which every measured process waits at its start:
 * within about 1e-4 (the pairs are some 20 ns wide). Readers time the events
 * by the CLOCK_SYNC records the writer takes at the start, as it runs and at
 * the end (reader.c); this rate serves a trace cut before its second one,
 * and the live view. */
static uint64_t measure_tsc_rate(void)
{
    uint64_t m0 = 0, t0 = 0, m1 = 0, t1 = 0;
    tsc_pair(&m0, &t0);
    do tsc_pair(&m1, &t1);
    while (m1 - m0 < 250000);
    return (uint64_t)((double)(t1 - t0) * 1e9 / (double)(m1 - m0));
}
#endif

void tt_clock_init(void)
{
    if (ticks_per_second) return;
#if defined(__x86_64__)
    if (tsc_trusted()) {
        tt_clock_tsc = 1;
        ticks_per_second = measure_tsc_rate();
        return;
    }
#endif
    ticks_per_second = 1000000000u;
}

uint64_t tt_clock_ticks_per_second(void) { return ticks_per_second; }

void tt_clock_sync_now(tt_clock_sync *out)
{
    struct timespec rt;
    uint64_t mono_before = tt_monotonic_ns();
    out->ticks = tt_clock_now();
    clock_gettime(CLOCK_REALTIME, &rt);
    uint64_t mono_after = tt_monotonic_ns();
    out->monotonic_ns = mono_before + (mono_after - mono_before) / 2;
    out->realtime_ns = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
}

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

static uint64_t measure_tsc_rate(void)
{
    uint64_t m0 = tt_monotonic_ns(), t0 = __rdtsc(), m1, t1;
    do {
        m1 = tt_monotonic_ns();
        t1 = __rdtsc();
    } while (m1 - m0 < 2000000);
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

uint8_t tt_clock_kind(void) { return tt_clock_tsc ? TT_CLOCK_TSC : TT_CLOCK_MONOTONIC; }

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

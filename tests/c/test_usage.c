/* test_usage.c -- the CPU and memory sampler (usage.h). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "usage.h"

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Samples follow a busy loop and a block of memory made resident. */
static void test_samples_follow_cpu_and_memory(void)
{
    tt_usage *u;
    tt_error err;
    CHECK(tt_usage_start(2000000, &u, &err) == 0);
    size_t size = 32u << 20;
    volatile char *block = malloc(size);
    for (size_t i = 0; i < size; i += 4096) block[i] = 1;
    double until = cpu_seconds() + 0.05;
    while (cpu_seconds() < until) continue;
    tt_usage_sample *samples;
    size_t count;
    tt_usage_stop(u, &samples, &count);
    CHECK(count >= 3);
    int ordered = 1;
    for (size_t i = 1; i < count; i++)
        ordered &= samples[i].time_ns >= samples[i - 1].time_ns && samples[i].cpu_ns >= samples[i - 1].cpu_ns;
    CHECK(ordered);
    CHECK(samples[count - 1].time_ns >= 50000000u);
    CHECK(samples[count - 1].cpu_ns - samples[0].cpu_ns >= 45000000u);
    CHECK(samples[0].rss_bytes > 0);
    CHECK(samples[count - 1].rss_bytes >= samples[0].rss_bytes + (30u << 20));
    free(samples);
    free((void *)block);
}

/* Stopping at once still gives the first sample and the last. */
static void test_stop_at_once(void)
{
    tt_usage *u;
    tt_error err;
    CHECK(tt_usage_start(1000000000u, &u, &err) == 0);
    tt_usage_sample *samples;
    size_t count;
    tt_usage_stop(u, &samples, &count);
    CHECK_U64(count, 2);
    free(samples);
}

int main(void)
{
    test_samples_follow_cpu_and_memory();
    test_stop_at_once();
    return check_report();
}

/* usage.c -- CPU and memory of this process, sampled by a thread (usage.h). */
#include "usage.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "thread.h"

struct tt_usage {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake; /* signalled by tt_usage_stop */
    int stopping;        /* under lock */

    /* Owned by the thread until it is joined. */
    uint64_t interval_ns;
    uint64_t start_ns;
    int statm_fd; /* /proc/self/statm, kept open: each pread reads it anew */
    long page_size;
    tt_usage_sample *samples; /* TT_USAGE_MAX_SAMPLES of them, handed to the caller at the end */
    size_t count;
};

static uint64_t clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Resident bytes: the second field of /proc/self/statm, in pages. */
static uint64_t resident_bytes(tt_usage *u)
{
    char text[128];
    ssize_t n = u->statm_fd < 0 ? -1 : pread(u->statm_fd, text, sizeof text - 1, 0);
    if (n <= 0) return 0;
    text[n] = '\0';
    unsigned long long size, resident;
    if (sscanf(text, "%llu %llu", &size, &resident) != 2) return 0;
    return (uint64_t)resident * (uint64_t)u->page_size;
}

static void take_sample(tt_usage *u)
{
    if (u->count == TT_USAGE_MAX_SAMPLES) {
        /* Keep every other sample (the first always) and sample half as often. */
        for (size_t i = 0; i < TT_USAGE_MAX_SAMPLES / 2; i++) u->samples[i] = u->samples[2 * i];
        u->count = TT_USAGE_MAX_SAMPLES / 2;
        u->interval_ns *= 2;
    }
    u->samples[u->count++] = (tt_usage_sample){
        .time_ns = clock_ns(CLOCK_MONOTONIC) - u->start_ns,
        .cpu_ns = clock_ns(CLOCK_PROCESS_CPUTIME_ID),
        .rss_bytes = resident_bytes(u),
    };
}

/* Samples every interval until stopped, then once more: the end of the span. */
static void *sampler(void *arg)
{
    tt_usage *u = arg;
    pthread_mutex_lock(&u->lock);
    for (;;) {
        uint64_t due = clock_ns(CLOCK_MONOTONIC) + u->interval_ns;
        struct timespec until = {.tv_sec = (time_t)(due / 1000000000u), .tv_nsec = (long)(due % 1000000000u)};
        while (!u->stopping && pthread_cond_timedwait(&u->wake, &u->lock, &until) != ETIMEDOUT) continue;
        if (u->stopping) break;
        pthread_mutex_unlock(&u->lock);
        take_sample(u);
        pthread_mutex_lock(&u->lock);
    }
    pthread_mutex_unlock(&u->lock);
    take_sample(u);
    return NULL;
}

int tt_usage_start(uint64_t interval_ns, tt_usage **out, tt_error *err)
{
    tt_usage *u = calloc(1, sizeof *u);
    if (u) u->samples = malloc(TT_USAGE_MAX_SAMPLES * sizeof *u->samples);
    if (!u || !u->samples) {
        free(u);
        return tt_fail(err, "out of memory for the usage sampler");
    }
    u->interval_ns = interval_ns < 1000000u ? 1000000u : interval_ns;
    u->start_ns = clock_ns(CLOCK_MONOTONIC);
    u->statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    u->page_size = sysconf(_SC_PAGESIZE);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC); /* the deadlines are monotonic */
    pthread_cond_init(&u->wake, &attr);
    pthread_condattr_destroy(&attr);
    pthread_mutex_init(&u->lock, NULL);
    take_sample(u); /* the start of the span, before the thread runs */
    int rc = tt_thread_create(&u->thread, NULL, sampler, u);
    if (rc != 0) {
        errno = rc;
        tt_fail_errno(err, "cannot start the usage sampler");
        pthread_cond_destroy(&u->wake);
        pthread_mutex_destroy(&u->lock);
        if (u->statm_fd >= 0) close(u->statm_fd);
        free(u->samples);
        free(u);
        return -1;
    }
    *out = u;
    return 0;
}

void tt_usage_stop(tt_usage *u, tt_usage_sample **samples, size_t *count)
{
    pthread_mutex_lock(&u->lock);
    u->stopping = 1;
    pthread_cond_signal(&u->wake);
    pthread_mutex_unlock(&u->lock);
    pthread_join(u->thread, NULL);
    pthread_cond_destroy(&u->wake);
    pthread_mutex_destroy(&u->lock);
    if (u->statm_fd >= 0) close(u->statm_fd);
    *samples = u->samples;
    *count = u->count;
    free(u);
}

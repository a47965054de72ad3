/* sampler.c -- CPU clocks and GIL samples of the measured threads (see sampler.h). */
#include "sampler.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "clock.h"
#include "grow.h"
#include "session.h"

#define NS_PER_MS 1000000u
/* A THREAD_USAGE record: a tag and five varints. */
#define USAGE_RECORD_MAX (1 + 5 * 10)
/* Records defined together, at most: far below a chunk. */
#define USAGE_BATCH 4096u

/* The CPU time of the thread of s, in ns; 0 when unknown. */
static uint64_t cpu_ns(const tt_stream *s)
{
    struct timespec ts;
    if (!s->has_cpu_clock || clock_gettime(s->cpu_clock, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void tt_sampler_stream_init(tt_stream *s)
{
    s->has_cpu_clock = pthread_getcpuclockid(pthread_self(), &s->cpu_clock) == 0;
    s->cpu_base_ns = cpu_ns(s);
}

/* Writes the THREAD_USAGE record of s at p (room: USAGE_RECORD_MAX);
 * returns its end. */
static uint8_t *usage_record(uint8_t *p, const tt_stream *s)
{
    uint64_t cpu = cpu_ns(s);
    *p++ = TT_DEF_THREAD_USAGE;
    p = tt_put_varint(p, s->index);
    p = tt_put_varint(p, tt_clock_now());
    p = tt_put_varint(p, cpu > s->cpu_base_ns ? cpu - s->cpu_base_ns : 0);
    p = tt_put_varint(p, s->samples);
    return tt_put_varint(p, s->gil_samples);
}

uint64_t tt_sampler_tick(tt_sampler *sampler, tt_session *session, uint64_t now_ns)
{
    if (now_ns < sampler->next_sample_ns) return sampler->next_sample_ns - now_ns;
    sampler->next_sample_ns = now_ns + TT_SAMPLE_PERIOD_MS * NS_PER_MS;
    int record = now_ns >= sampler->next_usage_ns;
    if (record) sampler->next_usage_ns = now_ns + TT_USAGE_PERIOD_MS * NS_PER_MS;

    /* The holder first, then the streams: a thread that started holding
     * the GIL in between is missed, never counted twice. */
    const void *(*gil_holder)(void) = session->config.gil_holder;
    const void *holder = gil_holder ? gil_holder() : NULL;
    size_t used = 0;
    if (!tt_session_trylock_streams()) return TT_SAMPLE_PERIOD_MS * NS_PER_MS;
    for (tt_stream *s = session->streams; s; s = s->next) {
        if (!atomic_load_explicit(&s->chunk, memory_order_acquire)) continue; /* closed */
        if (gil_holder) {
            s->samples++;
            if (holder && holder == atomic_load_explicit(&s->gil_key, memory_order_relaxed)) s->gil_samples++;
        }
        if (!record || TT_RESERVE(sampler->records, sampler->records_cap, used + USAGE_RECORD_MAX) != 0) continue;
        used = (size_t)(usage_record(sampler->records + used, s) - sampler->records);
        if (used >= USAGE_BATCH) {
            tt_session_try_define(session, sampler->records, used);
            used = 0;
        }
    }
    if (used) tt_session_try_define(session, sampler->records, used);
    tt_session_unlock_streams();
    return TT_SAMPLE_PERIOD_MS * NS_PER_MS;
}

void tt_sampler_stream_end(tt_stream *s)
{
    uint8_t rec[USAGE_RECORD_MAX];
    tt_session_define(s->session, rec, (size_t)(usage_record(rec, s) - rec));
}

void tt_sampler_free(tt_sampler *sampler)
{
    free(sampler->records);
    sampler->records = NULL;
    sampler->records_cap = 0;
}

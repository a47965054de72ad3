/* sampler.h -- each measured thread's CPU time and GIL share, sampled.
 *
 * The writer thread (writer.c), tracetop's own, samples at a bounded rate,
 * whatever the program does: every TT_SAMPLE_PERIOD_MS it asks who holds
 * the GIL (the session's gil_holder, read from the interpreter's state
 * without taking the GIL) and counts, for every open stream, one sample,
 * and one GIL sample when its thread is the holder. Every
 * TT_USAGE_PERIOD_MS it reads each open stream's thread CPU clock
 * (pthread_getcpuclockid) and writes a THREAD_USAGE definition (format.h);
 * a stream's last one is written as it closes. The measured threads do
 * nothing for this but note their CPU clock once, as their stream is made.
 *
 * The writer must never wait for the definitions lock (session.h), so a
 * periodic record is skipped when it would have to; records are
 * cumulative, so a skipped one costs resolution, not totals.
 */
#ifndef TRACETOP_SAMPLER_H
#define TRACETOP_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "stream.h"

#define TT_SAMPLE_PERIOD_MS 5
#define TT_USAGE_PERIOD_MS 100

struct tt_session;

typedef struct tt_sampler {
    uint64_t next_sample_ns, next_usage_ns; /* monotonic */
    uint8_t *records;                       /* THREAD_USAGE records of one round */
    size_t records_cap;
} tt_sampler;

/* On the stream's own thread, as it is made: notes its CPU clock. */
void tt_sampler_stream_init(tt_stream *s);

/* The writer's turn: samples when a sample is due (and writes usage
 * records when those are); returns the ns until the next one is due. */
uint64_t tt_sampler_tick(tt_sampler *sampler, struct tt_session *session, uint64_t now_ns);

/* A stream's last THREAD_USAGE record, as it closes (lifecycle lock held,
 * not on the writer thread). */
void tt_sampler_stream_end(tt_stream *s);

void tt_sampler_free(tt_sampler *sampler);

#endif

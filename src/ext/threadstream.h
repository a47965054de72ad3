/* threadstream.h -- each thread's stream in the active session
 * (threadstream.c): found with one load on every event, made by
 * tt_thread_stream_slow at the thread's first event, closed as the thread
 * ends.
 */
#ifndef TRACETOP_THREADSTREAM_H
#define TRACETOP_THREADSTREAM_H

#include "ext.h"

#include "fastpath.h"
#include "measurement.h"

#pragma GCC visibility push(hidden)

/* The calling thread's stream, the last one made for it; tt_no_stream
 * before its first: a stream of no session, whose epoch no session's is,
 * so that the hooks' one test of the epoch also finds a thread without one. */
extern tt_stream tt_no_stream;
extern __thread tt_stream *tt_tls_stream __attribute__((tls_model("initial-exec")));
/* The calling thread's stream when tt_tls_stream is not the active
 * session's current one: resynchronised after the measurement was off
 * (park.c), or made and named. NULL when out of memory, for tracetop's
 * own threads (tt_own_thread), and while the stream is being made. */
tt_stream *tt_thread_stream_slow(void);

/* The calling thread's stream in the active session (tt_measurement.session
 * is set), created on its first event and resynchronised after the
 * measurement was off; NULL when out of memory. Epochs are unique over
 * sessions: a stream of the active session's epoch belongs to it. */
static inline tt_stream *tt_thread_stream(void)
{
    tt_stream *s = tt_tls_stream;
    if (tt_likely(s->epoch == atomic_load_explicit(&tt_measurement.session->epoch, memory_order_relaxed)))
        return tt_fast_opened(s);
    return tt_thread_stream_slow();
}

/* The calling thread's stream when it has one already, else NULL: for what
 * a thread may do before its first call (a garbage collection, objects made
 * in threading's bootstrap), when threading does not know the thread by its
 * name yet. A stream is made at a thread's first call, named then. */
static inline tt_stream *tt_thread_stream_if_made(void)
{
    tt_stream *s = tt_tls_stream;
    return tt_measurement.session && s->session == tt_measurement.session ? tt_thread_stream() : NULL;
}

/* The calling thread is tracetop's own: nothing it does is recorded. */
void tt_own_thread(void);
/* For a thread of tracetop's own (a Python one, never the writer) that has
 * to record something of the whole process: a new stream named "tracetop",
 * not the thread's (its calls stay unrecorded), closed with the session.
 * NULL for any other thread, without a session, or out of memory. */
tt_stream *tt_own_thread_stream(void);

/* Once, as the module is made: the key whose destructor closes a thread's
 * stream as the thread ends. 0, or -1 with an exception. */
int tt_thread_streams_init(void);

#pragma GCC visibility pop

#endif

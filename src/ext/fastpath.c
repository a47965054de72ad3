/* fastpath.c -- the epochs that open and close each thread's tt_fast_*
 * paths (see fastpath.h): tt_measurement.fast_epoch kept true to the state
 * it depends on, and every thread's tt_tls_fast closed when it changes.
 */
#include "fastpath.h"

#include "threadstream.h"

__thread _Atomic(tt_stream *) tt_tls_fast __attribute__((tls_model("initial-exec"))) = &tt_no_stream;

/* Opening and closing a thread's paths race when a switch comes from the
 * writer thread: each side stores, then fences, then reads what the other
 * stores (fast_epoch, the thread's tt_tls_fast), so that at least one of
 * them sees the other's store, and the paths end closed. */
void tt_fast_open(tt_stream *s)
{
    if (s->epoch != atomic_load_explicit(&tt_measurement.fast_epoch, memory_order_relaxed)) return;
    if (!s->fast_slot) {
        tt_session_lock_streams();
        s->fast_slot = &tt_tls_fast;
        tt_session_unlock_streams();
    }
    atomic_store_explicit(&tt_tls_fast, s, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
    if (s->epoch != atomic_load_explicit(&tt_measurement.fast_epoch, memory_order_relaxed))
        atomic_store_explicit(&tt_tls_fast, &tt_no_stream, memory_order_relaxed);
}

/* After fast_epoch changed: the paths of every thread of `session` closed.
 * Without may_wait, only if the streams' lock is free at once; else
 * close_pending says that the next tt_fast_update is to do it. */
static void close_paths(tt_session *session, int may_wait)
{
    if (!session) return;
    atomic_thread_fence(memory_order_seq_cst);
    if (may_wait) {
        tt_session_lock_streams();
    } else if (!tt_session_trylock_streams()) {
        atomic_store_explicit(&tt_measurement.close_pending, 1, memory_order_relaxed);
        return;
    }
    atomic_store_explicit(&tt_measurement.close_pending, 0, memory_order_relaxed);
    for (tt_stream *st = session->streams; st; st = st->next)
        if (st->fast_slot) atomic_store_explicit(st->fast_slot, &tt_no_stream, memory_order_relaxed);
    tt_session_unlock_streams();
}

/* The writer thread does not wait for the streams' lock: a thread may hold
 * it while it waits for the writer to hand it a chunk (closing its stream
 * as it ends). The threads it could not reach record on until the GIL
 * comes to the writer, as they did before it asked. */
void tt_fast_close(void)
{
    atomic_store_explicit(&tt_measurement.fast_epoch, 0, memory_order_relaxed);
    close_paths(tt_measurement.session, 0);
}

void tt_fast_close_session(void)
{
    atomic_store_explicit(&tt_measurement.fast_epoch, 0, memory_order_relaxed);
    close_paths(tt_measurement.session, 1);
}

void tt_fast_update(void)
{
    const tt_measurement_state *m = &tt_measurement;
    uint64_t epoch = m->session && m->record_calls && tt_clock_tsc && tt_code_extra_index == 0 && !m->pending_setters
                         ? atomic_load_explicit(&m->session->epoch, memory_order_relaxed)
                         : 0;
    if (epoch == atomic_load_explicit(&tt_measurement.fast_epoch, memory_order_relaxed) &&
        !atomic_load_explicit(&tt_measurement.close_pending, memory_order_relaxed))
        return;
    atomic_store_explicit(&tt_measurement.fast_epoch, epoch, memory_order_relaxed);
    close_paths(m->session, 1);
}

void tt_fast_pending_setter(int change)
{
    tt_measurement.pending_setters += change;
    tt_fast_update();
    tt_measurement_check();
}

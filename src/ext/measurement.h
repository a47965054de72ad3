/* measurement.h -- the measurement of this process: its state in one
 * struct, tt_measurement, and the functions that move it.
 *
 * States (the session, and whether the hook of hook_kind is in place):
 *
 *   IDLE       session NULL, hook_installed 0.
 *   ON         session set, hook_installed 1: the hook sees every call
 *              and records it while record_calls.
 *   OFF        session set, hook_installed 0: the program runs without the
 *              hook (the instrumenter or the recording switched off);
 *              park.c keeps each thread's open calls until ON.
 *   FORKED     in a forked child, from fork.c's in_child to its
 *              fork_continue or fork_leave: session NULL, the hook still
 *              in place, so that every event is a no-op (each entry point
 *              tests the session first).
 *
 * Transitions, all with the GIL held but control()'s first step, on the
 * writer thread, and in_child, in whatever thread forked:
 *
 *   IDLE   -> ON/OFF  start (measurement.c): tt_measurement_set_session,
 *                     then set_hook(1) when the instrumenter is on or the
 *                     start attaches.
 *   ON    <-> OFF     follow_switches (measurement.c): enable_recording,
 *                     disable_recording, instrumenter_enable,
 *                     instrumenter_disable, and control() for the live
 *                     channel. control() first clears record_calls from
 *                     the writer thread (tt_fast_close), so that the hook
 *                     records no call until the GIL comes to it. The
 *                     recording switch (and control(), which is one) turns
 *                     the measurement off: from off_since to the switch on
 *                     is a gap, which the calls open across leave out
 *                     (park.h); the instrumenter switch alone only stops
 *                     the recording of calls.
 *   ON/OFF -> IDLE    stop, start's failure, fork.c's fork_resume failing:
 *                     tt_remove_hooks, then tt_measurement_set_session(NULL).
 *   ON/OFF -> FORKED  fork.c's in_child: tt_measurement_set_session(NULL).
 *   FORKED -> ON/OFF  fork.c's fork_continue: tt_measurement_set_session.
 *   FORKED -> IDLE    fork.c's fork_leave, and fork_continue failing:
 *                     tt_remove_hooks.
 *
 * tt_measurement_check asserts what holds in every state (debug and fuzz
 * builds; the release build leaves assert() out). Thread-locals
 * (tt_tls_stream, tt_tls_fast, tt_pending_setter) stay thread-locals.
 */
#ifndef TRACETOP_MEASUREMENT_H
#define TRACETOP_MEASUREMENT_H

#include "ext.h"

#include <assert.h>

#pragma GCC visibility push(hidden)

/* The CPython hook a measurement records calls with. */
enum tt_hook_kind {
    TT_HOOK_NONE,       /* none: --instrumenter=none, user regions alone */
    TT_HOOK_PROFILE,    /* PyEval_SetProfile (profilehook.c) */
    TT_HOOK_TRACE,      /* PyEval_SetTrace (profilehook.c) */
    TT_HOOK_MONITORING, /* sys.monitoring (monitoring.c) */
};

typedef struct tt_measurement_state {
    /* The session being recorded, NULL when none: every entry point tests
     * it first, so outside a measurement each is a no-op. */
    tt_session *session;
    /* The user's switch (enable_recording / disable_recording), and
     * `tracetop ctl`'s; when it went off (ticks), 0 while it is on. */
    int recording;
    uint64_t off_since;
    /* The instrumenter switch (tracetop.instrumenter, --noinstrumenter,
     * `tracetop ctl PID on`). */
    int instrumenter_enabled;
    /* What the hooks record: calls at all (recording and
     * instrumenter_enabled, both), and calls of C functions (not
     * --no-c-calls; only for TT_HOOK_PROFILE and TT_HOOK_MONITORING). */
    int record_calls;
    int record_c_calls;
    /* Chosen by start for the whole session; `hook` is the profile or
     * trace function of TT_HOOK_PROFILE and TT_HOOK_TRACE (profilehook.c:
     * tt_profile_hook_for). */
    enum tt_hook_kind hook_kind;
    Py_tracefunc hook;
    /* start's other_threads: the hook on every thread, or on the calling
     * one alone. */
    int other_threads;
    /* The hook of hook_kind is in place (TT_HOOK_NONE: trivially). */
    int hook_installed;
    /* Threads whose sys.setprofile waits for their next event
     * (ownprofile.c): none of them may take the tt_fast_* paths. */
    int pending_setters;
    /* The session's epoch while a thread may record an event with the
     * tt_fast_* paths, else 0 (fastpath.h). */
    _Atomic uint64_t fast_epoch;
    /* Set when tt_fast_close could not close every thread's paths: the
     * next tt_fast_update does. */
    _Atomic int close_pending;
} tt_measurement_state;

extern tt_measurement_state tt_measurement;

/* What holds in every state (above), with the GIL held. fast_epoch and
 * record_calls may turn 0 at any time (tt_fast_close, from the writer
 * thread), which keeps each of these true. */
static inline void tt_measurement_check(void)
{
#ifndef NDEBUG
    const tt_measurement_state *m = &tt_measurement;
    uint64_t fast_epoch = atomic_load_explicit(&m->fast_epoch, memory_order_relaxed);
    assert(m->pending_setters >= 0);
    assert(!m->off_since || !m->recording);
    assert(!m->record_calls || (m->recording && m->instrumenter_enabled));
    assert(!m->record_c_calls || m->hook_kind == TT_HOOK_PROFILE || m->hook_kind == TT_HOOK_MONITORING);
    assert(!fast_epoch || (m->session && m->record_calls && !m->pending_setters &&
                           fast_epoch == atomic_load_explicit(&m->session->epoch, memory_order_relaxed)));
#endif
}

/* Makes `session` (NULL: none) the one recorded: the tt_fast_* paths of
 * every thread of the previous one closed, those of the new one opened as
 * its threads come (tt_fast_update). */
void tt_measurement_set_session(tt_session *session);

/* The instrumenter switched on (1) or off (0), in tt_measurement and the
 * hooks: 0, or -1 with an exception set. */
int tt_instrumenter_switch(int enabled);

/* Takes the hooks away from every thread, as when a measurement stops. */
void tt_remove_hooks(void);
/* In a forked child measuring on: the parent's notes of its threads (park.c)
 * dropped; the child's noted afresh while its hook is away. */
void tt_hooks_forked(void);

/* Strings and regions of this process; they outlive sessions. */
extern tt_registry tt_definitions;

/* key, value, key, value ... of a dict of str for tt_session_config,
 * borrowed from the dict's strings; PyMem_Free it. NULL with an exception. */
const char **tt_attribute_array(PyObject *attributes, size_t *count);

/* A session's wait for the writer (budget used up) lets other threads run. */
void tt_blocking_begin(void);
void tt_blocking_end(void);

#pragma GCC visibility pop

#endif

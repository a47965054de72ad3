/* profilehook.c -- the profile and trace hooks: one C function for each
 * pair of what a session keeps for its whole measurement, set with
 * PyEval_SetProfile (calls and returns of Python and C functions) or
 * PyEval_SetTrace (Python calls and returns; line events are ignored).
 *
 * On a call a hook finds the region cached on the code object or C
 * function and appends one record to the thread's stream: no allocation,
 * no lock, no system call, no Python object, as in CPython's own _lsprof.c.
 * The events nearly all are recorded by the tt_fast_* paths (fastpath.h)
 * with no call and no register saved; hook_general takes every other.
 * The attributes that keep it so (always_inline, noinline, noclone) are
 * the hooks' machine code: bench/README.md shows how to check it.
 */
#include "profilehook.h"

#include "fastpath.h"
#include "measurement.h"
#include "ownprofile.h"
#include "pyregions.h"
#include "regionfilter.h"
#include "tasks.h"
#include "threadstream.h"

/* Every event but the two that nearly all are (hook_event, below). It
 * takes its arguments in the hook's registers, a first one unused (the
 * hook's object, which tracetop sets to none): the hook hands an event on
 * with a jump and keeps fewer copies of its arguments on the way. */
static int __attribute__((noinline, noclone)) hook_general(void *unused, PyFrameObject *frame, int what, PyObject *arg)
{
    (void)unused;
    if (tt_unlikely(tt_pending_setter) && tt_own_profile_apply() < 0) return -1;
    if (tt_unlikely(!tt_measurement.session || !tt_measurement.hook_installed)) return 0;
    tt_stream *s = tt_thread_stream();
    if (tt_unlikely(!s)) return 0;
    uint32_t region;
    uint64_t entry;
    switch (what) {
    case PyTrace_CALL:
        if (tt_unlikely(!tt_measurement.record_calls)) {
            region = TT_STACK_SKIP;
            break;
        }
        entry = tt_code_entry(tt_frame_code(frame));
        region = (uint32_t)entry;
        if (tt_unlikely(entry & TT_CODE_COROUTINE)) {
            uint32_t task = tt_task_resume(s, region);
            if (task != TT_NO_ID) {
                tt_stream_enter_step(s, region, task);
                return 0;
            }
        }
        break;
    case PyTrace_RETURN:
        tt_stream_return(s, tt_clock_now());
        return 0;
    case PyTrace_C_CALL:
        if (!tt_measurement.record_c_calls) return 0;
        region = tt_cfunction_region(arg);
        if (!tt_measurement.record_calls && region != TT_STACK_OWN) region = TT_STACK_SKIP;
        break;
    case PyTrace_C_RETURN:
    case PyTrace_C_EXCEPTION:
        if (tt_measurement.record_c_calls) tt_stream_return(s, tt_clock_now());
        return 0;
    default: /* line, opcode and exception events of the trace hook */
        return 0;
    }
    tt_hook_enter(s, region);
    return 0;
}

/* A call or a return that the tt_fast_* paths leave to be recorded out of
 * line (TT_FAST_NOW). Each returns what the hook returns, so that
 * the hook hands the event on with a jump and keeps nothing for it. */
static int __attribute__((noinline)) hook_enter_now(tt_stream *s, uint32_t region)
{
    tt_stream_enter_now(s, region);
    return 0;
}

static int __attribute__((noinline)) hook_leave_now(tt_stream *s)
{
    tt_stream_leave_now(s);
    return 0;
}

/* What the hook returns for a call its tt_fast_* paths took as `done` says
 * (enum tt_fast; region set for TT_FAST_NOW): every way on a jump,
 * hook_general with the hook's own arguments. */
static inline __attribute__((always_inline)) int hook_entered(tt_stream *s, enum tt_fast done, uint32_t region,
                                                              PyFrameObject *frame, int what, PyObject *arg)
{
    switch (done) {
    case TT_FAST_DONE:
        return 0;
    case TT_FAST_NOW:
        return hook_enter_now(s, region);
    case TT_FAST_GENERAL:
        break;
    }
    return hook_general(NULL, frame, what, arg);
}

/* A call of the C function func, as the hooks do the others, where the hook
 * found room (chunk, used). Apart, so that the hook's registers suffice
 * without saving any. Its arguments come in registers the hook holds them
 * in (what, unused, keeping its place), so that the hook hands the call on
 * with a jump and a move or two. One for each of the hooks' `filtering`
 * (hook_event). */
static inline __attribute__((always_inline)) int hook_c_call_event(tt_stream *s, uint32_t used, PyObject *func,
                                                                   tt_chunk *chunk, int filtering)
{
    uint32_t region;
    enum tt_fast done = tt_fast_enter_c(s, chunk, used, func, filtering, &region);
    return hook_entered(s, done, region, NULL, PyTrace_C_CALL, func); /* hook_general needs no frame for it */
}

static int __attribute__((noinline, noclone))
hook_c_call(tt_stream *s, uint32_t used, int what, PyObject *func, tt_chunk *chunk)
{
    (void)what;
    return hook_c_call_event(s, used, func, chunk, 0);
}

static int __attribute__((noinline, noclone))
hook_c_call_filtered(tt_stream *s, uint32_t used, int what, PyObject *func, tt_chunk *chunk)
{
    (void)what;
    return hook_c_call_event(s, used, func, chunk, 1);
}

/* The hooks: the events nearly all are recorded without a call
 * (tt_fast_stream), the rest by hook_general. One hook for each pair of
 * what a session keeps for its whole measurement (tt_profile_hook_choose),
 * so that an event pays no test of either:
 *  - c_calls: C calls recorded. Then the hook is a profile function, which
 *    is given CALL, RETURN, C_CALL, C_RETURN and C_EXCEPTION alone: every
 *    event but CALL and C_CALL is a return. Else it is a profile function
 *    whose C events are none of tracetop's, or a trace function, whose
 *    LINE, OPCODE and EXCEPTION events are not either: every event but
 *    CALL and RETURN is dropped (those that go to hook_general, which
 *    drops them too, are those of a thread whose paths are closed).
 *  - filtering: a filter is in force (tt_fast_enter). */
static inline __attribute__((always_inline)) int hook_event(PyFrameObject *frame, int what, PyObject *arg, int c_calls,
                                                            int filtering)
{
    tt_chunk *chunk;
    uint32_t used;
    tt_stream *s = tt_fast_stream(&chunk, &used);
    if (tt_likely(s != NULL)) {
        if (what == PyTrace_CALL) {
            uint32_t region;
            uint64_t entry = tt_code_entry_first(tt_frame_code(frame));
            enum tt_fast done = tt_fast_enter(s, chunk, used, entry, filtering, &region);
            return hook_entered(s, done, region, frame, what, arg);
        } else if (c_calls ? what != PyTrace_C_CALL : what == PyTrace_RETURN) {
            switch (tt_fast_leave(s, chunk, used)) {
            case TT_FAST_DONE:
                return 0;
            case TT_FAST_NOW:
                return hook_leave_now(s);
            case TT_FAST_GENERAL:
                break;
            }
        } else if (c_calls) {
            return filtering ? hook_c_call_filtered(s, used, what, arg, chunk) : hook_c_call(s, used, what, arg, chunk);
        } else {
            return 0;
        }
    }
    return hook_general(NULL, frame, what, arg);
}

/* obj is the program's own profile (trace) function when it set one, which
 * the hook calls after recording (ownprofile.c); NULL else: one test. */
static int hook_c(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    if (tt_unlikely(obj != NULL)) return tt_own_forward(hook_c, obj, frame, what, arg);
    return hook_event(frame, what, arg, 1, 0);
}

static int hook_c_filtered(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    if (tt_unlikely(obj != NULL)) return tt_own_forward(hook_c_filtered, obj, frame, what, arg);
    return hook_event(frame, what, arg, 1, 1);
}

static int hook_python(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    if (tt_unlikely(obj != NULL)) return tt_own_forward(hook_python, obj, frame, what, arg);
    return hook_event(frame, what, arg, 0, 0);
}

static int hook_python_filtered(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    if (tt_unlikely(obj != NULL)) return tt_own_forward(hook_python_filtered, obj, frame, what, arg);
    return hook_event(frame, what, arg, 0, 1);
}

Py_tracefunc tt_profile_hook_choose(void)
{
    if (tt_measurement.record_c_calls) return tt_region_filter_in_force() ? hook_c_filtered : hook_c;
    return tt_region_filter_in_force() ? hook_python_filtered : hook_python;
}

int tt_hook_sees_c_return(void)
{
    const tt_measurement_state *m = &tt_measurement;
    if (!m->hook_installed) return 0;
    /* sys.monitoring hands a C_RETURN to a profile function already in
     * place before tracetop's callback: setting it then is as plain. */
    if (m->hook_kind == TT_HOOK_MONITORING) return m->record_c_calls && !PyThreadState_Get()->c_profilefunc;
    return m->hook_kind == TT_HOOK_PROFILE && PyThreadState_Get()->c_profilefunc == m->hook;
}

int tt_profile_hook_is_ours(Py_tracefunc func)
{
    return func == hook_c || func == hook_c_filtered || func == hook_python || func == hook_python_filtered;
}

/* The slot of tt_measurement.hook_kind: the trace slot, or the profile one. */
static int trace_slot(void) { return tt_measurement.hook_kind == TT_HOOK_TRACE; }

/* Puts the session's hook in t's slot: in place of none, of an earlier
 * session's, or of the program's own function set by sys.setprofile
 * (settrace), which the hook then calls (ownprofile.c). Another tool's C
 * function (cProfile's before 3.12) is left in place: the thread is not
 * recorded while it is there. 0, or -1 with an exception. */
static int install_on(PyThreadState *t)
{
    int trace = trace_slot();
    Py_tracefunc now = tt_slot_func(t, trace), hook = tt_measurement.hook;
    if (now == hook) return 0;
    if (!now) return tt_slot_set(t, trace, hook, NULL);
    if (tt_profile_hook_is_ours(now) || now == tt_own_function(t, trace)) tt_slot_swap(t, trace, hook);
    return 0;
}

int tt_profile_hook_install_here(void) { return install_on(PyThreadState_Get()); }

/* Every thread's slot, or the calling thread's alone, as tracetop's own
 * setting: its audit events (3.12+) are no other tool's (ownprofile.c). */
static void install_everywhere(int every_thread)
{
    PyThreadState *self = PyThreadState_Get();
    if (!every_thread) {
        if (install_on(self) < 0) PyErr_Clear(); /* an audit hook refused it (3.12+): unmeasured */
        return;
    }
    PyInterpreterState *interp = PyThreadState_GetInterpreter(self);
    int trace = trace_slot(), bare = 0, held = 0;
    for (PyThreadState *t = PyInterpreterState_ThreadHead(interp); t; t = PyThreadState_Next(t)) {
        if (TT_PYTHON_SETS_ANY_SLOT || !trace || t == self || tt_slot_func(t, trace)) {
            held += t != self && tt_slot_func(t, trace);
            if (install_on(t) < 0) PyErr_Clear();
        } else {
            bare++;
        }
    }
    /* 3.13's trace slot, which only the calling thread's setter or that of
     * every thread reaches: the latter where it replaces nothing. */
    if (bare && !held) tt_set_trace_every_thread(tt_measurement.hook);
}

void tt_profile_hook_install(int every_thread)
{
    tt_own_setting_begin();
    install_everywhere(every_thread);
    tt_own_setting_end();
}

/* Takes tracetop's hook out of t's slot: the program's own function back
 * to CPython's trampoline, none else. Returns 1 where that is not possible
 * here (TT_PYTHON_SETS_ANY_SLOT): the hook stays, recording nothing. */
static int remove_from(PyThreadState *t, PyThreadState *self)
{
    int trace = trace_slot();
    if (!tt_profile_hook_is_ours(tt_slot_func(t, trace))) return 0;
    if (tt_slot_object(t, trace)) {
        tt_slot_swap(t, trace, tt_own_function(t, trace));
        return 0;
    }
    if (!TT_PYTHON_SETS_ANY_SLOT && trace && t != self) return 1;
    if (tt_slot_set(t, trace, NULL, NULL) < 0) PyErr_Clear();
    return 0;
}

void tt_profile_hook_remove(void)
{
    PyThreadState *self = PyThreadState_Get();
    PyInterpreterState *interp = PyThreadState_GetInterpreter(self);
    int left = 0, others = 0;
    tt_own_setting_begin();
    for (PyThreadState *t = PyInterpreterState_ThreadHead(interp); t; t = PyThreadState_Next(t)) {
        left += remove_from(t, self);
        others += tt_slot_func(t, trace_slot()) != NULL;
    }
    /* 3.13's trace slot, where no thread holds a function but tracetop's. */
    if (left && others == left) tt_set_trace_every_thread(NULL);
    tt_own_setting_end();
    PyErr_Clear();
}

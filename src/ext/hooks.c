/* hooks.c -- the CPython hook and the life of a measurement.
 *
 * One C function serves as the profile hook (PyEval_SetProfile: calls and
 * returns of Python and C functions) and as the trace hook (PyEval_SetTrace:
 * Python calls and returns; line events are ignored). On a call it finds
 * the region cached on the code object or C function and appends one
 * record to the thread's stream: no allocation, no lock, no system call,
 * no Python object, as in CPython's own _lsprof.c.
 *
 * Threads running when the measurement starts get the hook directly;
 * threads started later get it from threading's bootstrap, which calls
 * _thread_hook once and is then replaced by the C hook. threading is not
 * imported for it: once the program imports it, threadwatch.c calls
 * tt_hooks_threading_imported.
 *
 * Off takes the hook away from every thread, so that the program runs at
 * its own speed (user regions are still recorded), on puts it back: the
 * instrumenter switch (tracetop.instrumenter, --noinstrumenter), the
 * recording switch, and with a live channel `tracetop ctl` and `tracetop
 * top` from outside, whose request arrives on the writer thread, which
 * takes the GIL to do it. park.c keeps each thread's open calls across.
 */
#include "ext.h"

#include <pthread.h>

#include "clock.h"
#include "gil.h"
#include "park.h"

tt_session *tt_active;
int tt_recording = 1;
tt_registry tt_definitions;
/* Its chunk is never written: zero, so its `used` is never below the
 * stream's fast_used_limit (0). Untouched, it costs address space only. */
static tt_chunk no_chunk;
tt_stream tt_no_stream = {.chunk = &no_chunk, .epoch = UINT64_MAX};
/* initial-exec: the extension is loaded at import, and this spares every
 * event a call to __tls_get_addr. */
__thread tt_stream *tt_tls_stream __attribute__((tls_model("initial-exec"))) = &tt_no_stream;
__thread _Atomic(tt_stream *) tt_tls_fast __attribute__((tls_model("initial-exec"))) = &tt_no_stream;

enum hook_kind { HOOK_NONE, HOOK_PROFILE, HOOK_TRACE, HOOK_MONITORING };

static enum hook_kind hook_kind;
static int hook_other_threads; /* start's other_threads */
static int hook_installed; /* the hook of hook_kind is in place */
static int instrumenter_enabled = 1;
int tt_record_calls;
int tt_record_c_calls;
static pthread_key_t stream_key;
static PyObject *thread_hook;          /* _thread_hook, given to threading */
static PyObject *saved_threading_hook; /* what threading had before _thread_hook, while that is there */

_Atomic uint64_t tt_fast_epoch;
/* Threads whose sys.setprofile waits for their next event (ownprofile.c). */
static int pending_setters;

/* Opening and closing a thread's paths (ext.h) race when a switch comes
 * from the writer thread: each side stores, then fences, then reads what the
 * other stores (tt_fast_epoch, the thread's tt_tls_fast), so that at least
 * one of them sees the other's store, and the paths end closed. */
void tt_fast_open(tt_stream *s)
{
    if (s->epoch != atomic_load_explicit(&tt_fast_epoch, memory_order_relaxed)) return;
    if (!s->fast_slot) {
        tt_session_lock_streams();
        s->fast_slot = &tt_tls_fast;
        tt_session_unlock_streams();
    }
    atomic_store_explicit(&tt_tls_fast, s, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
    if (s->epoch != atomic_load_explicit(&tt_fast_epoch, memory_order_relaxed))
        atomic_store_explicit(&tt_tls_fast, &tt_no_stream, memory_order_relaxed);
}

/* Set when tt_fast_close could not close every thread's paths: the next
 * tt_fast_update does. */
static _Atomic int close_pending;

/* After tt_fast_epoch changed: the paths of every thread of `session`
 * closed. Without may_wait, only if the streams' lock is free at once. */
static void close_paths(tt_session *session, int may_wait)
{
    if (!session) return;
    atomic_thread_fence(memory_order_seq_cst);
    if (may_wait) {
        tt_session_lock_streams();
    } else if (!tt_session_trylock_streams()) {
        atomic_store_explicit(&close_pending, 1, memory_order_relaxed);
        return;
    }
    atomic_store_explicit(&close_pending, 0, memory_order_relaxed);
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
    atomic_store_explicit(&tt_fast_epoch, 0, memory_order_relaxed);
    close_paths(tt_active, 0);
}

void tt_fast_update(void)
{
    uint64_t epoch = tt_active && tt_record_calls && tt_clock_tsc && tt_code_extra_index == 0 && !pending_setters
                         ? atomic_load_explicit(&tt_active->epoch, memory_order_relaxed)
                         : 0;
    if (epoch == atomic_load_explicit(&tt_fast_epoch, memory_order_relaxed) &&
        !atomic_load_explicit(&close_pending, memory_order_relaxed))
        return;
    atomic_store_explicit(&tt_fast_epoch, epoch, memory_order_relaxed);
    close_paths(tt_active, 1);
}

void tt_set_active(tt_session *session)
{
    /* The streams of the session active until now. */
    atomic_store_explicit(&tt_fast_epoch, 0, memory_order_relaxed);
    close_paths(tt_active, 1);
    tt_active = session;
    tt_fast_update();
}

void tt_fast_pending_setter(int change)
{
    pending_setters += change;
    tt_fast_update();
}

static void update_switches(void)
{
    tt_record_calls = tt_recording && instrumenter_enabled;
    tt_fast_update();
}

/* ---- per-thread streams ---- */

/* The thread's tt_tls_fast ends with it: no switch may store there. */
static void on_thread_exit(void *stream)
{
    tt_stream *s = stream;
    tt_session_lock_streams();
    s->fast_slot = NULL;
    tt_session_unlock_streams();
    tt_session_close_stream(s);
}

/* Whether the calling thread is the main one: its thread state is the
 * interpreter's oldest, the last of its list (a new one goes first). */
static int in_main_thread(void)
{
    PyThreadState *oldest = PyThreadState_Get(), *next;
    while ((next = PyThreadState_Next(oldest))) oldest = next;
    return oldest == PyThreadState_Get();
}

/* The Python name of the calling thread, without side effects: looked up in
 * threading's table rather than through current_thread(), which would make
 * a dummy Thread for threads that threading did not start. Those, and the
 * threads started with _thread before the program imports threading, are
 * named by their native id. */
static PyObject *thread_name(void)
{
    PyObject *threading = tt_imported_threading();
    if (!threading && in_main_thread()) return PyUnicode_FromString("MainThread");
    PyObject *name = NULL;
    if (threading) {
        PyObject *table = PyObject_GetAttrString(threading, "_active");
        PyObject *ident = PyLong_FromUnsignedLong(PyThread_get_thread_ident());
        PyObject *thread = table && ident && PyDict_Check(table) ? PyDict_GetItemWithError(table, ident) : NULL;
        if (thread) name = PyObject_GetAttrString(thread, "name");
        Py_XDECREF(ident);
        Py_XDECREF(table);
        Py_DECREF(threading);
        PyErr_Clear();
    }
    if (name && PyUnicode_Check(name)) return name;
    Py_XDECREF(name);
    return PyUnicode_FromFormat("Thread-%lu", PyThread_get_thread_native_id());
}

/* The writer thread, when it switches the measurement: the Python code
 * that runs on it then is tracetop's, never recorded. */
static __thread int control_thread;

void tt_own_thread(void) { control_thread = 1; }

/* Set while the calling thread's stream is being made: looking its name up
 * may run Python code (a property), whose events are not recorded, when
 * the hook is not already kept out of them (it is inside a hook call). */
static __thread int making_stream;

tt_stream *tt_thread_stream_slow(void)
{
    if (!tt_active || control_thread || making_stream) return NULL;
    tt_stream *current = tt_tls_stream;
    if (current->session == tt_active) {
        tt_park_resync(current);
        tt_fast_open(current);
        return current;
    }
    making_stream = 1;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    int own = tt_objects_own_begin();
    PyObject *name = thread_name();
    Py_ssize_t len = 0;
    const char *utf8 = name ? PyUnicode_AsUTF8AndSize(name, &len) : NULL;
    tt_open_calls open;
    int opened = tt_attach_open_calls(PyThread_get_thread_ident(), &open);
    tt_stream *s = tt_session_new_stream_open(tt_active, PyThread_get_thread_native_id(), utf8 ? utf8 : "",
                                              (size_t)len, opened ? &open : NULL);
    Py_XDECREF(name);
    tt_objects_own_end(own);
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
    making_stream = 0;
    if (!s) return NULL;
    /* What tt_gil_holder returns while this thread holds the GIL. */
    atomic_store_explicit(&s->gil_key, (const void *)PyThreadState_Get(), memory_order_relaxed);
    tt_tls_stream = s;
    pthread_setspecific(stream_key, s);
    tt_fast_open(s);
    return s;
}

tt_stream *tt_own_thread_stream(void)
{
    if (!tt_active || !control_thread) return NULL;
    static const char name[] = "tracetop";
    return tt_session_new_stream(tt_active, PyThread_get_thread_native_id(), name, sizeof name - 1);
}

/* ---- the hook ---- */

#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
/* CPython 3.11's frame object and the start of its _PyInternalFrame
 * (internal/pycore_frame.h, the same in every 3.11 release): the code a
 * frame runs, read as PyFrame_GetCode reads it, without a call into the
 * interpreter and a reference taken and given back on every Python call. */
typedef struct tt_frame_data {
    PyObject *f_func, *f_globals, *f_builtins, *f_locals;
    PyCodeObject *f_code;
} tt_frame_data;

typedef struct tt_frame_object {
    PyObject_HEAD
    PyFrameObject *f_back;
    tt_frame_data *f_frame;
} tt_frame_object;

static inline PyObject *frame_code(PyFrameObject *frame)
{
    return (PyObject *)((tt_frame_object *)frame)->f_frame->f_code;
}
#else
static inline PyObject *frame_code(PyFrameObject *frame)
{
    PyCodeObject *code = PyFrame_GetCode(frame);
    Py_DECREF(code); /* the frame keeps it */
    return (PyObject *)code;
}
#endif

/* Every event but the two that nearly all are (hook, below). It takes its
 * arguments in the hook's registers, a first one unused (the hook's object,
 * which tracetop sets to none): the hook hands an event on with a jump and
 * keeps fewer copies of its arguments on the way. */
static int __attribute__((noinline, noclone)) hook_general(void *unused, PyFrameObject *frame, int what,
                                                           PyObject *arg)
{
    (void)unused;
    if (tt_unlikely(tt_pending_setter) && tt_own_profile_apply() < 0) return -1;
    if (tt_unlikely(!tt_active)) return 0;
    tt_stream *s = tt_thread_stream();
    if (tt_unlikely(!s)) return 0;
    uint32_t region;
    uint64_t entry;
    switch (what) {
    case PyTrace_CALL:
        if (tt_unlikely(!tt_record_calls)) {
            region = TT_STACK_SKIP;
            break;
        }
        entry = tt_code_entry(frame_code(frame));
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
        tt_stream_leave(s, tt_clock_now());
        return 0;
    case PyTrace_C_CALL:
        if (!tt_record_c_calls) return 0;
        region = tt_cfunction_region(arg);
        if (!tt_record_calls && region != TT_STACK_OWN) region = TT_STACK_SKIP;
        break;
    case PyTrace_C_RETURN:
    case PyTrace_C_EXCEPTION:
        if (tt_record_c_calls) tt_stream_leave(s, tt_clock_now());
        return 0;
    default: /* line, opcode and exception events of the trace hook */
        return 0;
    }
    tt_hook_enter(s, region);
    return 0;
}

/* A call or a return that the hooks' paths leave to be recorded out of
 * line (ext.h: TT_FAST_NOW). Each returns what the hook returns, so that
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

/* What the hook returns for a call its paths took as `done` says (ext.h:
 * enum tt_fast; region set for TT_FAST_NOW): every way on a jump, the
 * general one with the hook's own arguments. */
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
    return hook_entered(s, done, region, NULL, PyTrace_C_CALL, func); /* the general way needs no frame */
}

static int __attribute__((noinline, noclone)) hook_c_call(tt_stream *s, uint32_t used, int what, PyObject *func,
                                                          tt_chunk *chunk)
{
    (void)what;
    return hook_c_call_event(s, used, func, chunk, 0);
}

static int __attribute__((noinline, noclone)) hook_c_call_filtered(tt_stream *s, uint32_t used, int what,
                                                                   PyObject *func, tt_chunk *chunk)
{
    (void)what;
    return hook_c_call_event(s, used, func, chunk, 1);
}

/* The hooks: the events nearly all are recorded without a call (ext.h,
 * tt_fast_stream), the rest by hook_general. One hook for each pair of
 * what a session keeps for its whole measurement (choose_hook), so that
 * an event pays no test of either:
 *  - c_calls: C calls recorded. Then the hook is a profile function, which
 *    is given CALL, RETURN, C_CALL, C_RETURN and C_EXCEPTION alone: every
 *    event but CALL and C_CALL is a return. Else it is a profile function
 *    whose C events are none of tracetop's, or a trace function, whose
 *    LINE, OPCODE and EXCEPTION events are not either: every event but
 *    CALL and RETURN is dropped (those that take the general way, which
 *    drops them too, are those of a thread whose paths are closed).
 *  - filtering: a filter is in force (tt_fast_enter). */
static inline __attribute__((always_inline)) int hook_event(PyFrameObject *frame, int what, PyObject *arg,
                                                            int c_calls, int filtering)
{
    tt_chunk *chunk;
    uint32_t used;
    tt_stream *s = tt_fast_stream(&chunk, &used);
    if (tt_likely(s != NULL)) {
        if (what == PyTrace_CALL) {
            uint32_t region;
            enum tt_fast done = tt_fast_enter(s, chunk, used, tt_code_entry_first(frame_code(frame)), filtering, &region);
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

static int hook_c(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    (void)obj; /* none: tracetop sets none */
    return hook_event(frame, what, arg, 1, 0);
}

static int hook_c_filtered(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    (void)obj;
    return hook_event(frame, what, arg, 1, 1);
}

static int hook_python(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    (void)obj;
    return hook_event(frame, what, arg, 0, 0);
}

static int hook_python_filtered(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    (void)obj;
    return hook_event(frame, what, arg, 0, 1);
}

/* The hook of the session (start): hook_c, hook_c_filtered, hook_python or
 * hook_python_filtered. */
static Py_tracefunc hook = hook_python;

static Py_tracefunc choose_hook(void)
{
    if (tt_record_c_calls) return tt_region_filter_in_force() ? hook_c_filtered : hook_c;
    return tt_region_filter_in_force() ? hook_python_filtered : hook_python;
}

int tt_hook_sees_c_return(void)
{
    if (!hook_installed) return 0;
    /* sys.monitoring hands a C_RETURN to a profile function already in
     * place before tracetop's callback: setting it then is as plain. */
    if (hook_kind == HOOK_MONITORING) return tt_record_c_calls && !PyThreadState_Get()->c_profilefunc;
    return hook_kind == HOOK_PROFILE && PyThreadState_Get()->c_profilefunc == hook;
}

/* Sets func (or NULL) as the hook of every thread of the interpreter. */
static void install_everywhere(Py_tracefunc func)
{
#if PY_VERSION_HEX >= 0x030C0000
    if (hook_kind == HOOK_PROFILE)
        PyEval_SetProfileAllThreads(func, NULL);
    else
        PyEval_SetTraceAllThreads(func, NULL);
#else
    PyInterpreterState *interp = PyThreadState_GetInterpreter(PyThreadState_Get());
    for (PyThreadState *t = PyInterpreterState_ThreadHead(interp); t; t = PyThreadState_Next(t)) {
        if (hook_kind == HOOK_PROFILE)
            _PyEval_SetProfile(t, func, NULL);
        else
            _PyEval_SetTrace(t, func, NULL);
    }
#endif
    PyErr_Clear(); /* an audit hook refusing it leaves that thread unmeasured */
}

/* What threading.setprofile / settrace do, for threads started from now
 * on, without a call the hook would see; returns the previous hook (new
 * reference), or NULL on error. */
static PyObject *set_threading_hook(PyObject *threading, PyObject *fn)
{
    const char *attr = hook_kind == HOOK_PROFILE ? "_profile_hook" : "_trace_hook";
    PyObject *previous = PyObject_GetAttrString(threading, attr);
    if (previous && PyObject_SetAttrString(threading, attr, fn) < 0) Py_CLEAR(previous);
    return previous;
}

/* Gives threading _thread_hook for the threads it starts from now on, once
 * the program has imported it; 0, or -1 with an exception. */
static int hook_threading(void)
{
    if (saved_threading_hook) return 0;
    PyObject *threading = tt_imported_threading();
    if (!threading) return 0; /* tt_hooks_threading_imported comes back */
    saved_threading_hook = set_threading_hook(threading, thread_hook);
    Py_DECREF(threading);
    return saved_threading_hook ? 0 : -1;
}

/* Gives threading back the hook it had before hook_threading. */
static void unhook_threading(void)
{
    if (!saved_threading_hook) return;
    PyObject *threading = tt_imported_threading();
    if (threading) Py_XDECREF(set_threading_hook(threading, saved_threading_hook));
    Py_XDECREF(threading);
    Py_CLEAR(saved_threading_hook);
    PyErr_Clear();
}

/* _thread_hook(frame, event, arg): threading's bootstrap calls it as the
 * new thread's first profile (or trace) event; it puts the C hook in its
 * place and hands it that first event. */
static PyObject *thread_hook_impl(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 3 || !PyFrame_Check(args[0]) || !PyUnicode_Check(args[1])) Py_RETURN_NONE;
    Py_tracefunc func = tt_active ? hook : NULL;
    if (hook_kind == HOOK_TRACE)
        PyEval_SetTrace(func, NULL);
    else
        PyEval_SetProfile(func, NULL);
    if (!func) Py_RETURN_NONE;
    static const char *const events[] = {"call", "exception", "line", "return", "c_call", "c_exception", "c_return"};
    static const int whats[] = {PyTrace_CALL,   PyTrace_EXCEPTION,   PyTrace_LINE,   PyTrace_RETURN,
                                PyTrace_C_CALL, PyTrace_C_EXCEPTION, PyTrace_C_RETURN};
    for (size_t i = 0; i < sizeof events / sizeof *events; i++)
        if (PyUnicode_CompareWithASCIIString(args[1], events[i]) == 0) {
            hook(NULL, (PyFrameObject *)args[0], whats[i], args[2]);
            break;
        }
    Py_RETURN_NONE;
}

/* ---- start and stop ---- */

/* Sets func as the hook of the calling thread only. */
static void install_here(Py_tracefunc func)
{
    if (hook_kind == HOOK_PROFILE)
        PyEval_SetProfile(func, NULL);
    else
        PyEval_SetTrace(func, NULL);
}

/* Puts the chosen hook in place for the threads to come, and for those
 * running now or (start's other_threads false) the calling thread alone. */
static int install_hooks(void)
{
    switch (hook_kind) {
    case HOOK_NONE:
        return 0;
    case HOOK_MONITORING:
#if PY_VERSION_HEX >= 0x030C0000
        if (tt_own_profile_wrap() < 0) return -1;
        if (tt_monitoring_start() < 0) {
            tt_own_profile_unwrap();
            return -1;
        }
        return 0;
#endif
    case HOOK_PROFILE:
    case HOOK_TRACE:
        if (hook_kind == HOOK_PROFILE && tt_own_profile_wrap() < 0) return -1;
        if (hook_threading() < 0) {
            tt_own_profile_unwrap();
            return -1;
        }
        if (hook_other_threads)
            install_everywhere(hook);
        else
            install_here(hook);
        return 0;
    }
    return 0;
}

static void remove_hooks(void)
{
    switch (hook_kind) {
    case HOOK_NONE:
        return;
    case HOOK_MONITORING:
#if PY_VERSION_HEX >= 0x030C0000
        tt_own_profile_unwrap();
        tt_monitoring_stop();
#endif
        return;
    case HOOK_PROFILE:
    case HOOK_TRACE:
        tt_own_profile_unwrap();
        install_everywhere(NULL);
        unhook_threading();
        return;
    }
}

void tt_remove_hooks(void)
{
    if (hook_installed) {
        tt_gc_stop();
        remove_hooks();
    }
    hook_installed = 0;
    tt_park_forget();
}

void tt_hooks_forked(void)
{
    tt_park_forget();
    if (!hook_installed && hook_kind != HOOK_NONE) tt_park();
}

/* Whether calls are measured, as the live channel shows it. */
static int measuring(void) { return hook_installed && instrumenter_enabled && hook_kind != HOOK_NONE; }

static void show_state(void)
{
    if (tt_active && tt_active->live) tt_live_answer(tt_active->live, 0, measuring());
}

/* Puts the hook in place or takes it away; park.c notes each thread's open
 * calls as it leaves, and as it comes back plans what to close of them (the
 * calls that returned meanwhile) and what returns to drop (of the calls made
 * meanwhile).
 *
 * Whatever may run Python code comes before the hook goes on (gc.callbacks,
 * whose `import gc` runs importlib's Python code in a program that has not
 * imported gc; install_hooks runs its own first): Python code on this thread
 * may let the GIL go, and an attach (start) notes the other threads' calls
 * as the hook found them, which they must not have left, nor made their
 * streams, before. */
static int set_hook(int on)
{
    if (on == hook_installed) return 0;
    if (on) {
        if (hook_kind != HOOK_NONE && tt_gc_start() < 0) return -1;
        if (install_hooks() < 0) {
            tt_gc_stop();
            return -1;
        }
        /* Out of memory, the threads close what they had open instead. */
        if (hook_kind != HOOK_NONE && tt_unpark(tt_clock_now(), hook_kind != HOOK_MONITORING) < 0) PyErr_Clear();
    } else {
        tt_gc_stop();
        remove_hooks();
        if (hook_kind != HOOK_NONE) tt_park();
    }
    hook_installed = on;
    return 0;
}

/* The hook in place exactly while calls are recorded: measuring, recording
 * on, the instrumenter enabled. */
static int follow_switches(void)
{
    update_switches();
    return tt_active ? set_hook(tt_record_calls) : 0;
}

/* The live channel's request, on the writer thread. On also switches the
 * instrumenter on: a program started with --noinstrumenter is then
 * measured. Objects are switched alone (objects.c). Detach wakes the thread
 * that attached (attach.c).
 *
 * Off stops the recording of calls at once, before the GIL is taken: a busy
 * program's thread may hold the GIL for a switch interval, or for as long
 * as it waits for a CPU on a loaded machine (hundreds of ms), and the
 * reader asked for the events to stop now. The hook sees the store at its
 * next call and records the calls that follow as not recorded, so that
 * their returns still match; taking the hook away then waits for the GIL. */
static void control(int request, uint64_t ticket)
{
    if (request == TT_LIVE_DETACH) {
        tt_attach_request_detach();
        return;
    }
    int on = request & TT_LIVE_ON;
    if (!on && !(request & TT_LIVE_OBJECTS) && tt_active && tt_active->live) {
        tt_fast_close();
        tt_record_calls = 0;
        tt_live_answer(tt_active->live, ticket, 0);
    }
#if PY_VERSION_HEX >= 0x030D0000
    if (!Py_IsInitialized() || Py_IsFinalizing()) return;
#else
    if (!Py_IsInitialized() || _Py_IsFinalizing()) return;
#endif
    control_thread = 1;
    PyGILState_STATE gil = PyGILState_Ensure();
    if (tt_active) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        if (request & TT_LIVE_OBJECTS) {
            if (on ? tt_objects_start() : (tt_objects_stop(), 0)) PyErr_Clear(); /* it stays off */
        } else {
            instrumenter_enabled = on;
            if (follow_switches() < 0) PyErr_Clear(); /* e.g. sys.monitoring taken meanwhile: it stays off */
        }
        show_state();
        PyErr_Restore(type, value, tb);
    }
    PyGILState_Release(gil);
}

static __thread PyThreadState *blocked_thread;

/* Waiting for the writer (budget used up) lets other threads run. */
void tt_blocking_begin(void) { blocked_thread = PyGILState_Check() ? PyEval_SaveThread() : NULL; }

void tt_blocking_end(void)
{
    if (blocked_thread) PyEval_RestoreThread(blocked_thread);
    blocked_thread = NULL;
}

static int parse_kind(const char *name, enum hook_kind *kind)
{
    if (strcmp(name, "profile") == 0)
        *kind = HOOK_PROFILE;
    else if (strcmp(name, "trace") == 0)
        *kind = HOOK_TRACE;
    else if (strcmp(name, "none") == 0)
        *kind = HOOK_NONE;
    else if (strcmp(name, "monitoring") == 0) {
#if PY_VERSION_HEX >= 0x030C0000
        *kind = HOOK_MONITORING;
#else
        PyErr_SetString(tt_TraceError, "the monitoring instrumenter (sys.monitoring) needs Python 3.12 or later; "
                                       "use --instrumenter=profile");
        return -1;
#endif
    } else {
        PyErr_Format(tt_TraceError, "unknown instrumenter '%s' (choose profile, trace, monitoring or none)", name);
        return -1;
    }
    return 0;
}

/* key, value, key, value ... as UTF-8, borrowed from the dict's strings. */
const char **tt_attribute_array(PyObject *attributes, size_t *count)
{
    Py_ssize_t n = PyDict_Size(attributes), pos = 0, i = 0;
    const char **out = PyMem_Calloc((size_t)n * 2 + 1, sizeof *out);
    if (!out) return (const char **)PyErr_NoMemory();
    PyObject *key, *value;
    while (PyDict_Next(attributes, &pos, &key, &value)) {
        out[i++] = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
        out[i++] = PyUnicode_Check(value) ? PyUnicode_AsUTF8(value) : NULL;
        if (!out[i - 1] || !out[i - 2]) {
            PyMem_Free(out);
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "attributes must map str to str");
            return NULL;
        }
    }
    *count = (size_t)n;
    return out;
}

static PyObject *start(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"directory", "instrumenter", "c_calls",    "instrumenter_enabled", "memory",
                             "compress",  "name",         "attributes", "exclude_paths",        "other_threads",
                             "filter",    "live",         "attached",   NULL};
    const char *directory, *instrumenter = "profile", *name = "", *filter = NULL;
    int c_calls = 1, enabled = 1, compress = 0, other_threads = 1, live = 0, attached = 0;
    unsigned long long memory = 64ull << 20;
    PyObject *attributes = NULL, *exclude = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s|$sppKpsO!Opzpp", kwlist, &directory, &instrumenter, &c_calls,
                                     &enabled, &memory, &compress, &name, &PyDict_Type, &attributes, &exclude,
                                     &other_threads, &filter, &live, &attached))
        return NULL;
    if (tt_active) {
        PyErr_SetString(tt_TraceError, "a measurement is already running in this process");
        return NULL;
    }
    enum hook_kind kind;
    if (parse_kind(instrumenter, &kind) < 0) return NULL;
#if PY_VERSION_HEX >= 0x030C0000
    /* On 3.12 and later the profile hook is a shim over sys.monitoring that
     * makes a frame object for every event; tracetop's own monitoring
     * callbacks record the same calls at less cost than an empty profile
     * function (bench/README.md). A measurement of the calling thread alone
     * (other_threads false) keeps the profile hook, which is per thread; so
     * does one with a filter, which sys.monitoring can only pair by defining
     * the region of every function that runs, recorded or not (monitoring.c),
     * so that the trace would hold the definitions of tracetop's start-up. */
    if (kind == HOOK_PROFILE && other_threads && !filter) kind = HOOK_MONITORING;
#endif
    if (exclude && tt_pyregions_exclude(exclude) < 0) return NULL;
    size_t attribute_count = 0;
    const char **attribute_pairs = NULL;
    if (attributes && !(attribute_pairs = tt_attribute_array(attributes, &attribute_count))) return NULL;
    if (tt_region_filter_set(filter) < 0) {
        PyMem_Free(attribute_pairs);
        return NULL;
    }

    tt_session_config config = {.directory = directory,
                                .memory = memory,
                                .compress = compress,
                                .name = name,
                                .attributes = attribute_pairs,
                                .attribute_count = attribute_count,
                                .blocking_begin = tt_blocking_begin,
                                .blocking_end = tt_blocking_end,
                                .live = live,
                                .control = control,
                                .gil_holder = tt_gil_init() ? NULL : tt_gil_holder};
    tt_error err;
    tt_session *session;
    int rc = tt_session_start(&config, &tt_definitions, &session, &err);
    PyMem_Free(attribute_pairs);
    if (rc < 0) {
        tt_region_filter_clear();
        return tt_raise(&err);
    }

    hook_kind = kind;
    tt_tasks_reset(session);
    tt_record_c_calls = c_calls && (kind == HOOK_PROFILE || kind == HOOK_MONITORING);
    hook = choose_hook();
    instrumenter_enabled = enabled;
    tt_recording = 1;
    update_switches();
    tt_set_active(session);
    hook_other_threads = other_threads;
    /* Started with the instrumenter off, the program runs without the hook
     * until it is switched on. The calls of an attached process are noted
     * once the hook is everywhere, with the GIL held since: what the
     * threads are in then is what their first events return from. So no
     * Python code runs in between (set_hook); nor garbage collected, which
     * making frame objects may start before 3.12, and whose finalizers and
     * gc.callbacks would run Python code. */
    tt_park_forget();
#if PY_VERSION_HEX >= 0x030A0000
    int collecting = attached && PyGC_Disable();
#endif
    int failed = ((enabled || attached) && set_hook(1) < 0) || (attached && tt_attach_capture() < 0);
#if PY_VERSION_HEX >= 0x030A0000
    if (collecting) PyGC_Enable();
#endif
    if (failed) {
        tt_session_stats stats;
        tt_remove_hooks();
        tt_attach_forget();
        tt_set_active(NULL);
        tt_session_stop(session, &stats, NULL);
        tt_region_filter_clear();
        return NULL;
    }
    show_state();
    Py_RETURN_NONE;
}

static PyObject *stop(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    if (!tt_active) Py_RETURN_NONE;
    tt_objects_end();
    tt_remove_hooks();
    tt_session *session = tt_active;
    tt_set_active(NULL);
    tt_session_stats stats;
    tt_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = tt_session_stop(session, &stats, &err);
    Py_END_ALLOW_THREADS
    tt_region_filter_clear();
    tt_attach_forget();
    if (rc < 0) return tt_raise(&err);
    return Py_BuildValue("{sKsKsKsKsKsI}", "events", (unsigned long long)stats.events, "bytes",
                         (unsigned long long)stats.bytes, "chunks", (unsigned long long)stats.chunks, "waits",
                         (unsigned long long)stats.waits, "wait_ns", (unsigned long long)stats.wait_ns, "streams",
                         stats.streams);
}

static PyObject *gil_unavailable(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    const char *why = tt_gil_init();
    if (why) return PyUnicode_FromString(why);
    Py_RETURN_NONE;
}

static PyObject *active(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    return PyBool_FromLong(tt_active != NULL);
}

/* The CPython hook the measurement records calls with, by its instrumenter
 * name: `profile` is sys.monitoring's on 3.12 and later (see start). */
static PyObject *hook_in_use(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    static const char *const names[] = {"none", "profile", "trace", "monitoring"};
    return PyUnicode_FromString(names[hook_kind]);
}

static PyObject *run_code(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *code, *globals;
    if (!PyArg_ParseTuple(args, "O!O!:run_code", &PyCode_Type, &code, &PyDict_Type, &globals)) return NULL;
    return PyEval_EvalCode(code, globals, globals);
}

/* compile(source, filename, "exec", dont_inherit=True) without builtins.compile, which first asks whether the
 * source is an AST and so makes the ast module's types: 9 million instructions on 3.11, paid by every
 * `tracetop run` (`python script.py` compiles without them). str is compiled as UTF-8 with coding cookies
 * ignored, bytes as a file's contents; a source holding NUL goes to builtins.compile, for its error. */
static PyObject *compile_program(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *source, *filename;
    if (!PyArg_ParseTuple(args, "OU:compile_program", &source, &filename)) return NULL;
    PyCompilerFlags flags = {.cf_flags = 0, .cf_feature_version = PY_MINOR_VERSION};
    const char *text = NULL;
    Py_ssize_t len = 0;
    if (PyUnicode_Check(source)) {
        text = PyUnicode_AsUTF8AndSize(source, &len);
        flags.cf_flags = PyCF_IGNORE_COOKIE | PyCF_SOURCE_IS_UTF8;
    } else if (PyBytes_Check(source)) {
        text = PyBytes_AS_STRING(source);
        len = PyBytes_GET_SIZE(source);
    }
    if (!text) {
        if (PyErr_Occurred()) return NULL;
        PyErr_SetString(PyExc_TypeError, "compile_program() takes str or bytes");
        return NULL;
    }
    if ((size_t)len != strlen(text)) {
        PyObject *compile = PyDict_GetItemString(PyEval_GetBuiltins(), "compile");
        return compile ? PyObject_CallFunction(compile, "OOsii", source, filename, "exec", 0, 1) : NULL;
    }
    return Py_CompileStringObject(text, filename, Py_file_input, &flags, -1);
}

/* ---- switches ---- */

static void record_switch(uint8_t tag)
{
    tt_stream *s = tt_active ? tt_thread_stream() : NULL;
    if (s) tt_stream_plain(s, tt_clock_now(), tag);
}

static PyObject *enable_recording(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    if (!tt_recording) {
        tt_recording = 1;
        if (follow_switches() < 0) return NULL;
        record_switch(TT_EV_RECORDING_ON);
        show_state();
    }
    Py_RETURN_NONE;
}

static PyObject *disable_recording(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    if (tt_recording) {
        record_switch(TT_EV_RECORDING_OFF);
        tt_recording = 0;
        if (follow_switches() < 0) return NULL;
        show_state();
    }
    Py_RETURN_NONE;
}

static PyObject *recording(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    return PyBool_FromLong(tt_recording);
}

/* The instrumenter switch: off, the hook leaves every thread (park.c keeps
 * the calls open then, so that those still running close at their true
 * end); on, it comes back. */
static PyObject *instrumenter_enable(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    instrumenter_enabled = 1;
    if (follow_switches() < 0) return NULL;
    show_state();
    Py_RETURN_NONE;
}

static PyObject *instrumenter_disable(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    instrumenter_enabled = 0;
    if (follow_switches() < 0) return NULL;
    show_state();
    Py_RETURN_NONE;
}

static PyObject *instrumenter_is_enabled(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    return PyBool_FromLong(instrumenter_enabled);
}

void tt_hooks_threading_imported(void)
{
    if (!hook_installed) return;
#if PY_VERSION_HEX >= 0x030C0000
    if (hook_kind == HOOK_MONITORING) {
        tt_monitoring_threading_imported();
        return;
    }
#endif
    if (hook_kind == HOOK_PROFILE || hook_kind == HOOK_TRACE) hook_threading();
}

static PyMethodDef hook_methods[] = {
    {"start", (PyCFunction)(void (*)(void))start, METH_VARARGS | METH_KEYWORDS,
     "start(directory, *, instrumenter='profile', c_calls=True, instrumenter_enabled=True, memory=64 MiB, "
     "compress=False, name='', attributes={}, exclude_paths=(), other_threads=True, filter=None, live=False,\n"
     "attached=False)\n--\n\n"
     "Start measuring this process into directory/trace (and, with live, to `tracetop top`): the threads running\n"
     "now (only the calling one when other_threads is false; not with the monitoring instrumenter, which sees\n"
     "every thread) and those started later. On Python 3.12+ the profile instrumenter records through\n"
     "sys.monitoring, as monitoring does, unless other_threads is false or a filter is given. filter: a Score-P\n"
     "filter file. attached: the calls the other threads are in now are recorded as running since an unknown\n"
     "time (tracetop attach)."},
    {"stop", stop, METH_NOARGS, "Stop measuring; write everything; return statistics (None when not measuring)."},
    {"active", active, METH_NOARGS, "Whether a measurement is running."},
    {"hook_in_use", hook_in_use, METH_NOARGS,
     "The hook the last measurement started records calls with: 'profile', 'trace', 'monitoring' or 'none'."},
    {"gil_unavailable", gil_unavailable, METH_NOARGS,
     "None when this Python tells which thread holds the GIL (GIL shares are recorded), else one line why not."},
    {"run_code", run_code, METH_VARARGS, "run_code(code, globals)\n--\n\nexec() without an event of its own."},
    {"compile_program", compile_program, METH_VARARGS,
     "compile_program(source, filename)\n--\n\ncompile(source, filename, 'exec', dont_inherit=True), lighter at start-up."},
    {"enable_recording", enable_recording, METH_NOARGS, "Record events again."},
    {"disable_recording", disable_recording, METH_NOARGS, "Stop recording events until enable_recording()."},
    {"recording", recording, METH_NOARGS, "Whether events are recorded."},
    {"instrumenter_enable", instrumenter_enable, METH_NOARGS, "Record function calls again."},
    {"instrumenter_disable", instrumenter_disable, METH_NOARGS, "Stop recording function calls."},
    {"instrumenter_enabled", instrumenter_is_enabled, METH_NOARGS, "Whether function calls are recorded."},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef thread_hook_def = {"_thread_hook", (PyCFunction)(void (*)(void))thread_hook_impl, METH_FASTCALL,
                                      "The first profile event of a new thread installs the C hook."};

int tt_ext_add_hooks(PyObject *module)
{
    if (tt_registry_init(&tt_definitions) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    int rc = pthread_key_create(&stream_key, on_thread_exit);
    if (rc != 0) {
        PyErr_SetString(PyExc_RuntimeError, "tracetop: cannot create a thread-local key");
        return -1;
    }
    thread_hook = PyCFunction_NewEx(&thread_hook_def, module, NULL);
    if (!thread_hook || tt_module_add(module, "_thread_hook", thread_hook) < 0) return -1;
    return PyModule_AddFunctions(module, hook_methods);
}

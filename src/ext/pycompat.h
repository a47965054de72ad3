/* pycompat.h -- every difference between the CPython versions the extension
 * is built for, and every copy of a CPython internal it reads.
 *
 * The tested versions run from TT_PYTHON_FIRST up to, not including,
 * TT_PYTHON_END; the build stops on any other. The other files call a
 * function here, one name per difference, or test one of the TT_PYTHON_*
 * constants below with a plain `if`, so that both sides compile
 * everywhere, instead of testing PY_VERSION_HEX. Only where one side names
 * what the other Python lacks does a file test a constant with #if:
 * monitoring.c and requicken.c as a whole, objects.c for the reference
 * tracer.
 *
 * Copies of CPython internals (tt_frame_object, tt_code_extra) are read
 * inline on every call the hooks see; each says the versions whose layout
 * it copies, all of the tested range.
 */
#ifndef TRACETOP_PYCOMPAT_H
#define TRACETOP_PYCOMPAT_H

#ifndef PY_SSIZE_T_CLEAN
#define PY_SSIZE_T_CLEAN
#endif
#include <Python.h>
#include <frameobject.h>

/* The first version tested, and the first one past the tested range. */
#define TT_PYTHON_FIRST 0x030B0000 /* 3.11 */
#define TT_PYTHON_END 0x030E0000   /* 3.14 */

#if PY_VERSION_HEX < TT_PYTHON_FIRST || PY_VERSION_HEX >= TT_PYTHON_END
#error "tracetop is built for CPython 3.11 to 3.13 only (src/ext/pycompat.h: TT_PYTHON_FIRST, TT_PYTHON_END)"
#endif

/* sys.monitoring (PEP 669), which the monitoring instrumenter records with
 * and which the profile hook itself runs on. */
#define TT_PYTHON_HAS_MONITORING (PY_VERSION_HEX >= 0x030C0000)

/* The reference tracer (PyRefTracer_SetTracer), which objects.c counts
 * objects with; before it, objects.c wedges libpython (relink.h). */
#define TT_PYTHON_HAS_REF_TRACER (PY_VERSION_HEX >= 0x030D0000)

/* Instrumenting a code object for sys.monitoring takes its
 * superinstructions away for good (3.12 alone: requicken.h). */
#define TT_PYTHON_UNQUICKENS (PY_VERSION_HEX >= 0x030C0000 && PY_VERSION_HEX < 0x030D0000)

/* asyncio keeps the running task in each thread's state, which tasks.c
 * does not read (3.14 on). */
#define TT_PYTHON_TASKS_PER_THREAD (PY_VERSION_HEX >= 0x030E0000)

/* ---- frames ---- */

#if PY_VERSION_HEX < 0x030C0000
/* CPython 3.11's frame object and the start of its _PyInterpreterFrame
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
#endif

/* The code a frame runs, borrowed: the frame keeps it. */
static inline PyObject *tt_frame_code(PyFrameObject *frame)
{
#if PY_VERSION_HEX < 0x030C0000
    return (PyObject *)((tt_frame_object *)frame)->f_frame->f_code;
#else
    PyCodeObject *code = PyFrame_GetCode(frame);
    Py_DECREF(code);
    return (PyObject *)code;
#endif
}

/* ---- code objects' extra slots ---- */

/* CPython's _PyCodeObjectExtra (internal, the same from 3.11 to 3.13): the
 * slots behind a code object's co_extra. Read inline, a call's region costs
 * a few loads instead of two calls into the interpreter. */
typedef struct tt_code_extra {
    Py_ssize_t ce_size;
    void *ce_extras[1];
} tt_code_extra;

static inline Py_ssize_t tt_code_extra_request_index(void)
{
#if PY_VERSION_HEX >= 0x030C0000
    return PyUnstable_Eval_RequestCodeExtraIndex(NULL);
#else
    return _PyEval_RequestCodeExtraIndex(NULL);
#endif
}

static inline int tt_code_set_extra(PyObject *code, Py_ssize_t index, void *extra)
{
#if PY_VERSION_HEX >= 0x030C0000
    return PyUnstable_Code_SetExtra(code, index, extra);
#else
    return _PyCode_SetExtra(code, index, extra);
#endif
}

/* ---- the profile and trace hooks ---- */

#if PY_VERSION_HEX >= 0x030D0000
/* Exported by libpython 3.13, declared in an internal header. */
PyAPI_FUNC(int) _PyEval_SetProfile(PyThreadState *tstate, Py_tracefunc func, PyObject *arg);
#endif

/* A thread's profile slot (trace 0: c_profilefunc and c_profileobj) or
 * trace slot (trace 1: c_tracefunc and c_traceobj). The object is what
 * sys.getprofile (sys.gettrace) returns, borrowed. */
static inline Py_tracefunc tt_slot_func(PyThreadState *t, int trace)
{
    return trace ? t->c_tracefunc : t->c_profilefunc;
}

static inline PyObject *tt_slot_object(PyThreadState *t, int trace) { return trace ? t->c_traceobj : t->c_profileobj; }

/* Replaces the function of a slot that holds one by another, its object
 * kept: what the interpreter counts (threads with a profile function,
 * 3.12 on) stays true, so no audit event, no bookkeeping. */
static inline void tt_slot_swap(PyThreadState *t, int trace, Py_tracefunc func)
{
    assert(func && tt_slot_func(t, trace));
    if (trace)
        t->c_tracefunc = func;
    else
        t->c_profilefunc = func;
}

/* Clears the object of a slot whose function stays (tracetop's, which
 * takes a NULL object as none). */
static inline void tt_slot_clear_object(PyThreadState *t, int trace)
{
    if (trace)
        Py_CLEAR(t->c_traceobj);
    else
        Py_CLEAR(t->c_profileobj);
}

/* Whether tt_slot_set reaches threads other than the calling one. */
#define TT_PYTHON_SETS_ANY_SLOT (PY_VERSION_HEX < 0x030D0000)

/* Sets func (NULL: none) and obj in a slot of t, a thread of the calling
 * thread's interpreter: 0, or -1 with an exception. 3.11 guards its
 * setters with a flag of the whole process, raised across the audit event
 * they raise: a second thread setting meanwhile (an audit hook of Python
 * code lets the GIL go) fails with RuntimeError. So tracetop writes the
 * fields itself there, as _PyEval_SetProfile does less the audit; from
 * 3.12 on the setter keeps counts of its own and has no such flag. On 3.13
 * only the calling thread's trace slot can be set (_PyEval_SetTrace is not
 * exported): TT_PYTHON_SETS_ANY_SLOT. */
static inline int tt_slot_set(PyThreadState *t, int trace, Py_tracefunc func, PyObject *obj)
{
#if PY_VERSION_HEX < 0x030C0000
    Py_tracefunc *funcp = trace ? &t->c_tracefunc : &t->c_profilefunc;
    PyObject **objp = trace ? &t->c_traceobj : &t->c_profileobj;
    PyObject *old = *objp;
    /* Cleared first, tracing off, so that the old object's finalizer runs untraced. */
    *funcp = NULL;
    *objp = NULL;
    t->cframe->use_tracing = !t->tracing && (t->c_tracefunc || t->c_profilefunc) ? 255 : 0;
    Py_XINCREF(obj);
    Py_XDECREF(old);
    *objp = obj;
    *funcp = func;
    t->cframe->use_tracing = !t->tracing && (t->c_tracefunc || t->c_profilefunc) ? 255 : 0;
    return 0;
#elif PY_VERSION_HEX < 0x030D0000
    return trace ? _PyEval_SetTrace(t, func, obj) : _PyEval_SetProfile(t, func, obj);
#else
    if (!trace) return _PyEval_SetProfile(t, func, obj);
    assert(t == PyThreadState_Get());
    PyEval_SetTrace(func, obj); /* an audit hook's refusal goes to sys.unraisablehook */
    return 0;
#endif
}

/* Sets func (NULL: none) as the trace function of every thread: where
 * tt_slot_set cannot reach each (!TT_PYTHON_SETS_ANY_SLOT). */
static inline void tt_set_trace_every_thread(Py_tracefunc func)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyEval_SetTraceAllThreads(func, NULL);
#else
    (void)func;
    assert(!"tt_slot_set reaches every thread");
#endif
}

/* ---- the interpreter ---- */

static inline int tt_is_finalizing(void)
{
#if PY_VERSION_HEX >= 0x030D0000
    return Py_IsFinalizing();
#else
    return _Py_IsFinalizing();
#endif
}

/* ---- the GIL's state (gil.c alone, built with Py_BUILD_CORE) ---- */

#ifdef Py_BUILD_CORE
#if PY_VERSION_HEX >= 0x030C0000
#include <internal/pycore_interp.h>
#else
#include <internal/pycore_runtime.h>
#endif

/* The GIL state of the calling thread's interpreter: in each interpreter
 * from 3.12 on (NULL where it has none), in the runtime before. */
static inline struct _gil_runtime_state *tt_gil_state(void)
{
#if PY_VERSION_HEX >= 0x030C0000
    return PyInterpreterState_Get()->ceval.gil;
#else
    return &_PyRuntime.ceval.gil;
#endif
}

/* Its `locked` and `last_holder`, read with relaxed atomic loads from any
 * thread, as CPython's own ceval.c reads `locked` without a lock. */
static inline int tt_gil_locked(struct _gil_runtime_state *gil)
{
#if PY_VERSION_HEX >= 0x030D0000
    return __atomic_load_n(&gil->locked, __ATOMIC_RELAXED) > 0;
#else
    return _Py_atomic_load_relaxed(&gil->locked) > 0;
#endif
}

static inline const void *tt_gil_last_holder(struct _gil_runtime_state *gil)
{
#if PY_VERSION_HEX >= 0x030D0000
    return __atomic_load_n(&gil->last_holder, __ATOMIC_RELAXED);
#else
    return (const void *)_Py_atomic_load_relaxed(&gil->last_holder);
#endif
}
#endif

#endif

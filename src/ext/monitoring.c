/* monitoring.c -- the `monitoring` instrumenter: PEP 669's sys.monitoring
 * (Python 3.12 and later). The whole file is one TT_PYTHON_HAS_MONITORING
 * guard (pycompat.h); before 3.12 tt_monitoring_start fails and the other
 * functions do nothing.
 *
 * tracetop takes a tool id of its own and gets Python starts, resumes and
 * throws as entries, returns, yields and unwinds as leaves, and calls of C
 * functions (builtins and method descriptors) as entries matched by their
 * C_RETURN or C_RAISE. sys.monitoring covers every thread of the
 * interpreter, and no frame object is made for an event, which makes it
 * the cheapest hook where it exists: on 3.12 and later it is also what the
 * `profile` instrumenter uses (measurement.c: start), so it records what
 * the profile hook records: the same names, and a thread threading starts
 * from its run() on (see first_stream).
 */
#include "monitoring.h"

#include "fastpath.h"
#include "measurement.h"
#include "objects.h"
#include "ownprofile.h"
#include "pyregions.h"
#include "regionfilter.h"
#include "tasks.h"
#include "threadstream.h"
#include "threadwatch.h"

#if TT_PYTHON_HAS_MONITORING

/* Tool ids tracetop tries, in turn: not PROFILER_ID (2), which cProfile
 * takes on 3.12 and later, nor those of debuggers (0), coverage (1) and
 * optimizers (5), so that a program using any of them runs as it does
 * without tracetop. */
static const int tool_ids[] = {4, 3};

static int tool_id = -1;     /* the one taken while in use */
static PyObject *monitoring; /* sys.monitoring while in use */
static PyObject *disable;    /* sys.monitoring.DISABLE */

/* threading's Thread._bootstrap and _bootstrap_inner, while in use. */
static PyObject *bootstrap_code, *bootstrap_inner_code;
/* Set on a thread that threading started and that has not called run()
 * yet: it has no stream, and its events are not recorded. */
static __thread int booting;

/* Whether `code`, starting to run on a booting thread, is the run() that
 * Thread._bootstrap_inner calls once the thread is set up: the first call
 * from there that is not threading's own machinery (Thread.run and
 * Timer.run are threading's too, and named run). */
static int is_run(PyObject *code)
{
    PyFrameObject *frame = PyEval_GetFrame();
    PyFrameObject *caller = frame ? PyFrame_GetBack(frame) : NULL;
    PyCodeObject *caller_code = caller ? PyFrame_GetCode(caller) : NULL;
    int from_bootstrap = caller_code == (PyCodeObject *)bootstrap_inner_code;
    Py_XDECREF(caller_code);
    Py_XDECREF(caller);
    if (!from_bootstrap) return 0;
    PyCodeObject *c = (PyCodeObject *)code, *threading = (PyCodeObject *)bootstrap_code;
    int rc = PyUnicode_CompareWithASCIIString(c->co_name, "run") == 0 ||
             PyUnicode_Compare(c->co_filename, threading->co_filename) != 0;
    PyErr_Clear();
    return rc;
}

/* The stream of a thread that has none yet, for an event of `code` (a
 * Python start, or NULL): the profile hook reaches a thread that threading
 * starts at its run() call (threading hands it its profile function just
 * before), so here too Thread._bootstrap and what precedes run() are left
 * out, and the stream is made once threading knows the thread's name. */
static tt_stream *__attribute__((noinline)) first_stream(PyObject *code)
{
    if (booting) {
        if (!code || !is_run(code)) return NULL;
        booting = 0;
    } else if (code && code == bootstrap_code) {
        booting = 1;
        return NULL;
    }
    return tt_thread_stream_slow();
}

/* The calling thread's stream (tt_thread_stream), `code` as for first_stream. */
static inline tt_stream *event_stream(PyObject *code)
{
    tt_stream *s = tt_tls_stream;
    if (tt_likely(s->epoch == atomic_load_explicit(&tt_measurement.session->epoch, memory_order_relaxed)))
        return tt_fast_opened(s);
    return s != &tt_no_stream ? tt_thread_stream_slow() : first_stream(code);
}

/* Filtered code (--filter) is neither pushed nor popped: its events are
 * switched off where sys.monitoring lets a tool do so (PY_START, PY_RESUME,
 * PY_RETURN, PY_YIELD: DISABLE, so that the code costs nothing after its
 * first call) and ignored where it does not (PY_THROW, PY_UNWIND). Both
 * sides decide by the same flag, so the stack stays paired. */
static PyObject *ignored(int disabling) { return disabling ? Py_NewRef(disable) : Py_NewRef(Py_None); }

static PyObject *__attribute__((noinline)) enter(PyObject *const *args, Py_ssize_t nargs, int disabling)
{
    if (tt_unlikely(tt_pending_setter) && tt_own_profile_apply() < 0) return NULL;
    if (tt_likely(tt_measurement.session) && nargs >= 1) {
        tt_stream *s = event_stream(args[0]);
        if (s) {
            uint64_t entry = tt_likely(tt_measurement.record_calls) || tt_region_filtered ? tt_code_entry(args[0])
                                                                                          : TT_STACK_SKIP;
            uint32_t region = (uint32_t)entry;
            if (tt_region_is_filtered(region)) return ignored(disabling);
            uint32_t task = TT_NO_ID;
            if (tt_unlikely(entry & TT_CODE_COROUTINE) && tt_likely(tt_measurement.record_calls))
                task = tt_task_resume(s, region);
            if (task != TT_NO_ID)
                tt_stream_enter_step(s, region, task);
            else
                tt_hook_enter(s, tt_likely(tt_measurement.record_calls) ? region : TT_STACK_SKIP);
        }
    }
    Py_RETURN_NONE;
}

static PyObject *__attribute__((noinline)) leave(PyObject *const *args, Py_ssize_t nargs, int disabling)
{
    if (tt_unlikely(tt_pending_setter) && tt_own_profile_apply() < 0) return NULL;
    if (tt_likely(tt_measurement.session)) {
        if (tt_unlikely(tt_region_filtered != NULL) && nargs >= 1 && tt_region_is_filtered(tt_code_region(args[0])))
            return ignored(disabling);
        tt_stream *s = event_stream(NULL);
        if (s) tt_stream_return(s, tt_clock_now());
    }
    Py_RETURN_NONE;
}

/* Most events are recorded by the tt_fast_* paths (fastpath.h), the rest by
 * enter, leave, enter_c_general and leave_c_general. */
static PyObject *enter_python(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    (void)self, (void)kwnames;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    tt_chunk *chunk;
    uint32_t used;
    tt_stream *s = tt_fast_stream(&chunk, &used);
    if (tt_likely(s && nargs >= 1)) {
        uint32_t region;
        enum tt_fast done = tt_fast_enter(s, chunk, used, tt_code_entry_first(args[0]), 1, &region);
        if (done == TT_FAST_NOW) tt_stream_enter_now(s, region);
        if (done != TT_FAST_GENERAL) Py_RETURN_NONE;
    }
    return enter(args, nargs, 1);
}

static PyObject *throw_python(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    (void)self, (void)kwnames;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    return enter(args, nargs, 0);
}

static PyObject *leave_python(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    (void)self, (void)kwnames;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    tt_chunk *chunk;
    uint32_t used;
    tt_stream *s = tt_fast_stream(&chunk, &used);
    if (tt_likely(s && !tt_region_filtered)) {
        enum tt_fast done = tt_fast_leave(s, chunk, used);
        if (done == TT_FAST_NOW) tt_stream_leave_now(s);
        if (done != TT_FAST_GENERAL) Py_RETURN_NONE;
    }
    return leave(args, nargs, 1);
}

static PyObject *unwind_python(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    (void)self, (void)kwnames;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    return leave(args, nargs, 0);
}

/* CALL fires for every callable, C_RETURN and C_RAISE for every one that is
 * not a Python function; both sides keep to the callables that name a C
 * function, so they pair. */
static PyObject *__attribute__((noinline)) enter_c_general(PyObject *const *args, Py_ssize_t nargs)
{
    if (tt_unlikely(tt_pending_setter) && tt_own_profile_apply() < 0) return NULL;
    if (tt_likely(tt_measurement.session) && nargs >= 3 && tt_method_def(args[2])) {
        tt_stream *s = event_stream(NULL);
        if (s) {
            uint32_t region = tt_cfunction_region(args[2]);
            if (!tt_measurement.record_calls && region != TT_STACK_OWN) region = TT_STACK_SKIP;
            tt_hook_enter(s, region);
        }
    }
    Py_RETURN_NONE;
}

static PyObject *__attribute__((noinline)) leave_c_general(PyObject *const *args, Py_ssize_t nargs)
{
    if (tt_unlikely(tt_pending_setter) && tt_own_profile_apply() < 0) return NULL;
    if (tt_likely(tt_measurement.session) && nargs >= 3 && tt_method_def(args[2])) {
        tt_stream *s = event_stream(NULL);
        if (s) tt_stream_return(s, tt_clock_now());
    }
    Py_RETURN_NONE;
}

static PyObject *enter_c(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    (void)self, (void)kwnames;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (tt_likely(nargs >= 3)) {
        /* A Python function's call is entered by its PY_START. */
        if (Py_IS_TYPE(args[2], &PyFunction_Type) && tt_likely(!tt_pending_setter)) Py_RETURN_NONE;
        tt_chunk *chunk;
        uint32_t used;
        tt_stream *s = tt_fast_stream(&chunk, &used);
        if (tt_likely(s != NULL)) {
            uint32_t region;
            enum tt_fast done = tt_fast_enter_c(s, chunk, used, args[2], 1, &region);
            if (done == TT_FAST_NOW) tt_stream_enter_now(s, region);
            if (done != TT_FAST_GENERAL) Py_RETURN_NONE;
        }
    }
    return enter_c_general(args, nargs);
}

static PyObject *leave_c(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    (void)self, (void)kwnames;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    tt_chunk *chunk;
    uint32_t used;
    tt_stream *s = tt_fast_stream(&chunk, &used);
    if (tt_likely(s && nargs >= 3 && tt_measurement.record_c_calls) && tt_method_def_exact(args[2])) {
        enum tt_fast done = tt_fast_leave(s, chunk, used);
        if (done == TT_FAST_NOW) tt_stream_leave_now(s);
        if (done != TT_FAST_GENERAL) Py_RETURN_NONE;
    }
    return leave_c_general(args, nargs);
}

static const vectorcallfunc callbacks[] = {enter_python, leave_python, enter_c, leave_c, throw_python, unwind_python};

/* A callback as sys.monitoring calls it: a vectorcall straight into one of
 * the functions above. A builtin function would add, on every event, its
 * own call: the thread state looked up (a call for the thread-local
 * variable, from an extension) and the recursion counted. */
typedef struct callback_object {
    PyObject_HEAD
    vectorcallfunc vectorcall; /* target, or counted in front of it */
    vectorcallfunc target;
} callback_object;

/* While objects are counted (objects.c), each callback is registered
 * behind this one: CPython makes an int for every event's instruction
 * offset, a new object past 256, only because tracetop listens: it is not
 * the program's. Put in front only then, it costs nothing otherwise. */
static PyObject *counted(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    /* Offsets up to 256 are CPython's immortal small ints, made by no one. */
    if (PyVectorcall_NARGS(nargsf) >= 2 && !_Py_IsImmortal(args[1])) tt_objects_disown(args[1]);
    return ((callback_object *)self)->target(self, args, nargsf, kwnames);
}

static void callback_dealloc(PyObject *self) { PyObject_Free(self); }

static PyTypeObject callback_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tracetop._tracetop.monitoring_callback",
    .tp_basicsize = sizeof(callback_object),
    .tp_dealloc = callback_dealloc,
    .tp_vectorcall_offset = offsetof(callback_object, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
};

static PyObject *callback_function(int index)
{
    if (PyType_Ready(&callback_type) < 0) return NULL;
    callback_object *cb = PyObject_New(callback_object, &callback_type);
    if (cb) {
        cb->target = callbacks[index];
        cb->vectorcall = tt_objects_counting() ? counted : cb->target;
    }
    return (PyObject *)cb;
}

static const struct {
    const char *event;
    int callback; /* index into callbacks */
    int c_call;   /* only with C calls recorded */
} wiring[] = {
    {"PY_START", 0, 0},  {"PY_RESUME", 0, 0}, {"PY_THROW", 4, 0}, {"PY_RETURN", 1, 0}, {"PY_YIELD", 1, 0},
    {"PY_UNWIND", 5, 0}, {"CALL", 2, 1},      {"C_RETURN", 3, 1}, {"C_RAISE", 3, 1},
};

#define WIRES (sizeof wiring / sizeof *wiring)

static long event_bit(PyObject *events, const char *name)
{
    PyObject *bit = PyObject_GetAttrString(events, name);
    long value = bit ? PyLong_AsLong(bit) : -1;
    Py_XDECREF(bit);
    return value;
}

/* Registers (or, with register_them 0, clears) every callback; returns
 * the event set, or -1 with an exception. */
static long wire(int register_them)
{
    PyObject *events = PyObject_GetAttrString(monitoring, "events");
    if (!events) return -1;
    long mask = 0;
    for (size_t i = 0; i < WIRES; i++) {
        if (wiring[i].c_call && !tt_measurement.record_c_calls) continue;
        long bit = event_bit(events, wiring[i].event);
        PyObject *fn = register_them ? callback_function(wiring[i].callback) : Py_NewRef(Py_None);
        PyObject *r = bit >= 0 && fn ? PyObject_CallMethod(monitoring, "register_callback", "ilO", tool_id, bit, fn)
                                     : NULL;
        Py_XDECREF(fn);
        if (!r) {
            Py_DECREF(events);
            return -1;
        }
        Py_DECREF(r);
        mask |= bit;
    }
    Py_DECREF(events);
    return mask;
}

/* threading's bootstrap code objects (new references), or NULL with an exception. */
static PyObject *thread_method_code(PyObject *thread_type, const char *name)
{
    PyObject *method = PyObject_GetAttrString(thread_type, name);
    PyObject *code = method ? PyObject_GetAttrString(method, "__code__") : NULL;
    Py_XDECREF(method);
    if (code && !PyCode_Check(code)) Py_CLEAR(code);
    return code;
}

/* Not imported for it: before the program imports threading no thread of
 * its runs, and tt_monitoring_threading_imported comes once it has. */
static void find_bootstrap(void)
{
    PyObject *threading = tt_imported_threading();
    PyObject *thread_type = threading ? PyObject_GetAttrString(threading, "Thread") : NULL;
    Py_XDECREF(threading);
    if (thread_type) {
        bootstrap_code = thread_method_code(thread_type, "_bootstrap");
        bootstrap_inner_code = thread_method_code(thread_type, "_bootstrap_inner");
        Py_DECREF(thread_type);
    }
    /* Without them threads are recorded from their first call: still well nested. */
    if (!bootstrap_code || !bootstrap_inner_code) {
        Py_CLEAR(bootstrap_code);
        Py_CLEAR(bootstrap_inner_code);
    }
    PyErr_Clear();
}

void tt_monitoring_threading_imported(void)
{
    if (monitoring && !bootstrap_code) find_bootstrap();
}

/* Takes the first free tool id of tool_ids: 0, or -1 with TraceError. */
static int take_tool_id(void)
{
    for (size_t i = 0; i < sizeof tool_ids / sizeof *tool_ids; i++) {
        PyObject *r = PyObject_CallMethod(monitoring, "use_tool_id", "is", tool_ids[i], "tracetop");
        if (r) {
            Py_DECREF(r);
            tool_id = tool_ids[i];
            return 0;
        }
        PyErr_Clear();
    }
    PyErr_SetString(tt_TraceError,
                    "sys.monitoring has no tool id free for tracetop (are other tools using ids 3 and 4?)");
    return -1;
}

int tt_monitoring_start(void)
{
    PyObject *sys = PyImport_ImportModule("sys");
    monitoring = sys ? PyObject_GetAttrString(sys, "monitoring") : NULL;
    Py_XDECREF(sys);
    if (!monitoring) return -1;
    if (take_tool_id() < 0) {
        Py_CLEAR(monitoring);
        return -1;
    }
    find_bootstrap();
    PyObject *r;
    /* Code that an earlier session's filter switched off records again. */
    disable = PyObject_GetAttrString(monitoring, "DISABLE");
    r = disable ? PyObject_CallMethod(monitoring, "restart_events", NULL) : NULL;
    if (!r) {
        tt_monitoring_stop();
        return -1;
    }
    Py_DECREF(r);
    long mask = wire(1);
    r = mask >= 0 ? PyObject_CallMethod(monitoring, "set_events", "il", tool_id, mask) : NULL;
    if (!r) {
        tt_monitoring_stop();
        return -1;
    }
    Py_DECREF(r);
    return 0;
}

void tt_monitoring_objects_switched(void)
{
    if (!monitoring) return;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    int own = tt_objects_own_begin();
    if (wire(1) < 0) PyErr_Clear(); /* the callbacks registered stay: they record as well */
    tt_objects_own_end(own);
    PyErr_Restore(type, value, tb);
}

void tt_monitoring_stop(void)
{
    if (!monitoring) return;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    Py_XDECREF(PyObject_CallMethod(monitoring, "set_events", "ii", tool_id, 0));
    wire(0);
    Py_XDECREF(PyObject_CallMethod(monitoring, "free_tool_id", "i", tool_id));
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
    tool_id = -1;
    Py_CLEAR(monitoring);
    Py_CLEAR(disable);
    Py_CLEAR(bootstrap_code);
    Py_CLEAR(bootstrap_inner_code);
}

#else

int tt_monitoring_start(void)
{
    PyErr_SetString(tt_TraceError, "sys.monitoring needs Python 3.12 or later");
    return -1;
}

void tt_monitoring_stop(void) {}
void tt_monitoring_threading_imported(void) {}
void tt_monitoring_objects_switched(void) {}

#endif

/* measurement.c -- the life of a measurement: start, stop, the switches
 * that take the hook away and put it back, and the live channel's control.
 * The state they move is tt_measurement, its states and transitions
 * written beside it (measurement.h).
 *
 * Off takes the hook away from every thread, so that the program runs at
 * its own speed, on puts it back: the instrumenter switch
 * (tracetop.instrumenter, --noinstrumenter: user regions are still
 * recorded), the recording switch (nothing is: the measurement is off),
 * and with a live channel `tracetop ctl` and `tracetop top` from outside,
 * whose request arrives on the writer thread, which takes the GIL to do
 * it, and which switches the recording off, and both on. park.c keeps each
 * thread's open calls across, and leaves a measurement's gap out of them.
 */
#include "measurement.h"

#include "attach.h"
#include "fastpath.h"
#include "gc.h"
#include "gil.h"
#include "monitoring.h"
#include "objects.h"
#include "ownprofile.h"
#include "park.h"
#include "profilehook.h"
#include "pyregions.h"
#include "regionfilter.h"
#include "tasks.h"
#include "threadhook.h"
#include "threadstream.h"

tt_measurement_state tt_measurement = {.recording = 1, .instrumenter_enabled = 1};
tt_registry tt_definitions;

void tt_measurement_set_session(tt_session *session)
{
    assert(!session || !tt_measurement.session);
    tt_fast_close_session();
    tt_measurement.session = session;
    tt_fast_update();
    tt_measurement_check();
}

static void update_switches(void)
{
    tt_measurement.record_calls = tt_measurement.recording && tt_measurement.instrumenter_enabled;
    tt_fast_update();
    tt_measurement_check();
}

/* ---- the hook put in place and taken away ---- */

/* Puts the chosen hook in place for the threads to come, and for those
 * running now or (start's other_threads false) the calling thread alone. */
static int install_hooks(void)
{
    switch (tt_measurement.hook_kind) {
    case TT_HOOK_NONE:
        return 0;
    case TT_HOOK_MONITORING:
        if (tt_own_profile_wrap() < 0) return -1;
        if (tt_monitoring_start() < 0) {
            tt_own_profile_unwrap();
            return -1;
        }
        return 0;
    case TT_HOOK_PROFILE:
    case TT_HOOK_TRACE:
        tt_own_profile_watch();
        if (tt_own_profile_wrap() < 0) return -1;
        if (tt_threadhook_on() < 0) {
            tt_own_profile_unwrap();
            return -1;
        }
        tt_profile_hook_install(tt_measurement.other_threads);
        return 0;
    }
    return 0;
}

static void remove_hooks(void)
{
    switch (tt_measurement.hook_kind) {
    case TT_HOOK_NONE:
        return;
    case TT_HOOK_MONITORING:
        tt_own_profile_unwrap();
        tt_monitoring_stop();
        return;
    case TT_HOOK_PROFILE:
    case TT_HOOK_TRACE:
        tt_own_profile_unwrap();
        tt_profile_hook_remove();
        tt_threadhook_off();
        return;
    }
}

void tt_remove_hooks(void)
{
    if (tt_measurement.hook_installed) {
        tt_gc_stop();
        remove_hooks();
    }
    tt_measurement.hook_installed = 0;
    tt_park_forget();
}

void tt_hooks_forked(void)
{
    tt_park_forget();
    if (!tt_measurement.hook_installed && tt_measurement.hook_kind != TT_HOOK_NONE) tt_park();
}

/* Whether calls are measured, as the live channel shows it. */
static int measuring(void)
{
    const tt_measurement_state *m = &tt_measurement;
    return m->hook_installed && m->instrumenter_enabled && m->hook_kind != TT_HOOK_NONE;
}

static void show_state(void)
{
    tt_session *session = tt_measurement.session;
    if (session && session->live) tt_live_answer(session->live, 0, measuring());
}

/* Puts the hook in place or takes it away; park.c notes each thread's open
 * calls as it leaves, and as it comes back plans what to close of them (the
 * calls that returned meanwhile) and what returns to drop (of the calls made
 * meanwhile).
 *
 * off_since: the measurement was off from then to `now`, the switch's time
 * (0: it was not), a gap the calls kept open leave out (park.h).
 *
 * Whatever may run Python code comes before the hook goes on (gc.callbacks,
 * whose `import gc` runs importlib's Python code in a program that has not
 * imported gc; install_hooks runs its own first): Python code on this thread
 * may let the GIL go, and an attach (start) notes the other threads' calls
 * as the hook found them, which they must not have left, nor made their
 * streams, before. */
static int set_hook(int on, uint64_t off_since, uint64_t now)
{
    enum tt_hook_kind kind = tt_measurement.hook_kind;
    assert(tt_measurement.session);
    if (on == tt_measurement.hook_installed) return 0;
    if (on) {
        if (kind != TT_HOOK_NONE && tt_gc_start() < 0) return -1;
        if (install_hooks() < 0) {
            tt_gc_stop();
            return -1;
        }
        /* Out of memory, the threads close what they had open instead. */
        if (kind != TT_HOOK_NONE && tt_unpark(now, off_since, kind != TT_HOOK_MONITORING) < 0) PyErr_Clear();
    } else {
        tt_gc_stop();
        remove_hooks();
        if (kind != TT_HOOK_NONE) tt_park();
    }
    tt_measurement.hook_installed = on;
    tt_measurement_check();
    return 0;
}

/* The hook in place exactly while calls are recorded: measuring, recording
 * on, the instrumenter enabled; switched at `now`. The recording on ends
 * the gap that began as it went off. */
static int follow_switches(uint64_t now)
{
    uint64_t off_since = tt_measurement.recording ? tt_measurement.off_since : 0;
    if (tt_measurement.recording) tt_measurement.off_since = 0;
    update_switches();
    return tt_measurement.session ? set_hook(tt_measurement.record_calls, off_since, now) : 0;
}

/* The measurement goes off (the recording switch) at `now`. */
static int measurement_off(uint64_t now)
{
    if (tt_measurement.recording) tt_measurement.off_since = now ? now : 1;
    tt_measurement.recording = 0;
    return follow_switches(now);
}

/* ... and on: the gap defined for the process (MEASUREMENT_OFF), and
 * marked in each stream as the hook comes back (park.c). One the hook's
 * return did not mark (it was away for the instrumenter switch, or there
 * is none: --instrumenter=none) is marked in the calling thread's stream,
 * whose user regions it was in. */
static int measurement_on(void)
{
    uint64_t off_since = tt_measurement.off_since, now = tt_clock_now();
    tt_measurement.recording = 1;
    if (follow_switches(now) < 0) return -1;
    tt_session *session = tt_measurement.session;
    if (!off_since || !session) return 0;
    tt_session_define_gap(session, off_since, now);
    int marked = tt_measurement.hook_installed && tt_measurement.hook_kind != TT_HOOK_NONE;
    tt_stream *s = marked ? NULL : tt_thread_stream();
    if (s) tt_stream_gap(s, off_since, now);
    return 0;
}

/* The live channel's request, on the writer thread: the recording switch
 * (off: the measurement is off, a gap). On also switches the instrumenter
 * on: a program started with --noinstrumenter is then measured. Objects
 * are switched alone (objects.c). Detach wakes the thread that attached
 * (attach.c).
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
    uint64_t asked = tt_clock_now();
    if (!on && !(request & TT_LIVE_OBJECTS) && tt_measurement.session && tt_measurement.session->live) {
        tt_fast_close();
        tt_measurement.record_calls = 0;
        tt_live_answer(tt_measurement.session->live, ticket, 0);
    }
    if (!Py_IsInitialized() || tt_is_finalizing()) return;
    tt_own_thread();
    PyGILState_STATE gil = PyGILState_Ensure();
    if (tt_measurement.session) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        if (request & TT_LIVE_OBJECTS) {
            if (on ? tt_objects_start() : (tt_objects_stop(), 0)) PyErr_Clear(); /* it stays off */
        } else {
            if (on) tt_measurement.instrumenter_enabled = 1;
            /* e.g. sys.monitoring taken meanwhile: it stays off */
            if ((on ? measurement_on() : measurement_off(asked)) < 0) PyErr_Clear();
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

/* ---- start and stop ---- */

static int parse_kind(const char *name, enum tt_hook_kind *kind)
{
    if (strcmp(name, "profile") == 0)
        *kind = TT_HOOK_PROFILE;
    else if (strcmp(name, "trace") == 0)
        *kind = TT_HOOK_TRACE;
    else if (strcmp(name, "none") == 0)
        *kind = TT_HOOK_NONE;
    else if (strcmp(name, "monitoring") == 0) {
        if (!TT_PYTHON_HAS_MONITORING) {
            PyErr_SetString(tt_TraceError, "the monitoring instrumenter (sys.monitoring) needs Python 3.12 or later; "
                                           "use --instrumenter=profile");
            return -1;
        }
        *kind = TT_HOOK_MONITORING;
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
    static char *kwlist[] = {"directory",     "instrumenter",  "c_calls", "instrumenter_enabled",
                             "memory",        "compress",      "name",    "attributes",
                             "exclude_paths", "other_threads", "filter",  "live",
                             "attached",      "keep",          NULL};
    const char *directory, *instrumenter = "profile", *name = "", *filter = NULL;
    int c_calls = 1, enabled = 1, compress = 0, other_threads = 1, live = 0, attached = 0;
    unsigned long long memory = 64ull << 20, keep = 0;
    PyObject *attributes = NULL, *exclude = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s|$sppKpsO!OpzppK", kwlist, &directory, &instrumenter, &c_calls,
                                     &enabled, &memory, &compress, &name, &PyDict_Type, &attributes, &exclude,
                                     &other_threads, &filter, &live, &attached, &keep))
        return NULL;
    if (tt_measurement.session) {
        PyErr_SetString(tt_TraceError, "a measurement is already running in this process");
        return NULL;
    }
    enum tt_hook_kind kind;
    if (parse_kind(instrumenter, &kind) < 0) return NULL;
    /* On 3.12 and later the profile hook is a shim over sys.monitoring that
     * makes a frame object for every event; tracetop's own monitoring
     * callbacks record the same calls at less cost than an empty profile
     * function (bench/README.md). A measurement of the calling thread alone
     * (other_threads false) keeps the profile hook, which is per thread; so
     * does one with a filter, which sys.monitoring can only pair by defining
     * the region of every function that runs, recorded or not (monitoring.c),
     * so that the trace would hold the definitions of tracetop's start-up. */
    if (TT_PYTHON_HAS_MONITORING && kind == TT_HOOK_PROFILE && other_threads && !filter) kind = TT_HOOK_MONITORING;
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
                                .keep = keep,
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

    tt_measurement.hook_kind = kind;
    tt_tasks_reset(session);
    tt_measurement.record_c_calls = c_calls && (kind == TT_HOOK_PROFILE || kind == TT_HOOK_MONITORING);
    tt_measurement.hook = tt_profile_hook_choose();
    tt_measurement.instrumenter_enabled = enabled;
    tt_measurement.recording = 1;
    tt_measurement.off_since = 0;
    update_switches();
    tt_measurement_set_session(session);
    tt_measurement.other_threads = other_threads;
    /* Started with the instrumenter off, the program runs without the hook
     * until it is switched on. The calls of an attached process are noted
     * once the hook is everywhere, with the GIL held since: what the
     * threads are in then is what their first events return from. So no
     * Python code runs in between (set_hook); nor garbage collected, which
     * making frame objects may start before 3.12, and whose finalizers and
     * gc.callbacks would run Python code. */
    tt_park_forget();
    int collecting = attached && PyGC_Disable();
    int failed = ((enabled || attached) && set_hook(1, 0, tt_clock_now()) < 0) || (attached && tt_attach_capture() < 0);
    if (collecting) PyGC_Enable();
    if (failed) {
        tt_session_stats stats;
        tt_remove_hooks();
        tt_attach_forget();
        tt_measurement_set_session(NULL);
        tt_session_stop(session, &stats, NULL);
        tt_region_filter_clear();
        return NULL;
    }
    tt_measurement_check();
    show_state();
    Py_RETURN_NONE;
}

static PyObject *stop(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"ended", "not_recorded", NULL};
    const char *ended = NULL;
    PyObject *not_recorded = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$zO:stop", kwlist, &ended, &not_recorded)) return NULL;
    PyObject *limits = not_recorded ? PySequence_Fast(not_recorded, "not_recorded: a sequence of str") : NULL;
    if (not_recorded && !limits) return NULL;
    if (!tt_measurement.session) {
        Py_XDECREF(limits);
        Py_RETURN_NONE;
    }
    if (ended) tt_session_attribute(tt_measurement.session, "ended", ended);
    for (Py_ssize_t i = 0; limits && i < PySequence_Fast_GET_SIZE(limits); i++) {
        const char *line = PyUnicode_Check(PySequence_Fast_GET_ITEM(limits, i))
                               ? PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(limits, i))
                               : NULL;
        if (line) tt_session_attribute(tt_measurement.session, "not recorded", line);
        PyErr_Clear();
    }
    Py_XDECREF(limits);
    tt_objects_end();
    tt_remove_hooks();
    tt_session *session = tt_measurement.session;
    if (tt_measurement.off_since) {
        /* Stopped while off: the calls open close where it went off. */
        tt_session_define_gap(session, tt_measurement.off_since, tt_clock_now());
        tt_session_suspend(session, tt_measurement.off_since);
        tt_measurement.off_since = 0;
    }
    tt_measurement_set_session(NULL);
    tt_session_stats stats;
    tt_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tt_session_stop(session, &stats, &err);
    Py_END_ALLOW_THREADS
    tt_region_filter_clear();
    tt_attach_forget();
    /* A trace cut short is said with the rest, not raised: the program
     * ended as it ended, and MANIFEST.md says both. */
    return Py_BuildValue("{sKsKsKsKsKsIsKsKszszsisKsi}", "events", (unsigned long long)stats.events, "bytes",
                         (unsigned long long)stats.bytes, "chunks", (unsigned long long)stats.chunks, "waits",
                         (unsigned long long)stats.waits, "wait_ns", (unsigned long long)stats.wait_ns, "streams",
                         stats.streams, "stalls", (unsigned long long)stats.stalls, "stalled_ns",
                         (unsigned long long)stats.stalled_ns, "stall", stats.stalls ? stats.stall.message : NULL,
                         "lost", rc < 0 ? err.message : NULL, "lost_errno", stats.error_errno, "dropped",
                         (unsigned long long)stats.dropped, "keep_errno", stats.keep_errno);
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
    return PyBool_FromLong(tt_measurement.session != NULL);
}

/* The CPython hook the measurement records calls with, by its instrumenter
 * name: `profile` is sys.monitoring's on 3.12 and later (see start). */
static PyObject *hook_in_use(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    static const char *const names[] = {"none", "profile", "trace", "monitoring"};
    return PyUnicode_FromString(names[tt_measurement.hook_kind]);
}

/* ---- switches ---- */

static PyObject *enable_recording(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    if (!tt_measurement.recording) {
        if (measurement_on() < 0) return NULL;
        show_state();
    }
    Py_RETURN_NONE;
}

static PyObject *disable_recording(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    if (tt_measurement.recording) {
        if (measurement_off(tt_clock_now()) < 0) return NULL;
        show_state();
    }
    Py_RETURN_NONE;
}

static PyObject *recording(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    return PyBool_FromLong(tt_measurement.recording);
}

/* The instrumenter switch: off, the hook leaves every thread (park.c keeps
 * the calls open then, so that those still running close at their true
 * end); on, it comes back. */
int tt_instrumenter_switch(int enabled)
{
    tt_measurement.instrumenter_enabled = enabled;
    if (follow_switches(tt_clock_now()) < 0) return -1;
    show_state();
    return 0;
}

static PyObject *instrumenter_enable(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    if (tt_instrumenter_switch(1) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *instrumenter_disable(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    if (tt_instrumenter_switch(0) < 0) return NULL;
    Py_RETURN_NONE;
}

/* Whether the hook records the program's calls now: a function's own
 * region (tracetop.region() as a decorator) would record each twice. */
static PyObject *calls_recorded(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    return PyBool_FromLong(tt_measurement.session && tt_measurement.record_calls && measuring());
}

static PyObject *instrumenter_is_enabled(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    return PyBool_FromLong(tt_measurement.instrumenter_enabled);
}

static PyMethodDef measurement_methods[] = {
    {"start", (PyCFunction)(void (*)(void))start, METH_VARARGS | METH_KEYWORDS,
     "start(directory, *, instrumenter='profile', c_calls=True, instrumenter_enabled=True, memory=64 MiB, "
     "compress=False, name='', attributes={}, exclude_paths=(), other_threads=True, filter=None, live=False,\n"
     "attached=False, keep=0)\n--\n\n"
     "Start measuring this process into directory/trace (and, with live, to `tracetop top`): the threads running\n"
     "now (only the calling one when other_threads is false; not with the monitoring instrumenter, which sees\n"
     "every thread) and those started later. On Python 3.12+ the profile instrumenter records through\n"
     "sys.monitoring, as monitoring does, unless other_threads is false or a filter is given. filter: a Score-P\n"
     "filter file. attached: the calls the other threads are in now are recorded as running since an unknown\n"
     "time (tracetop attach). keep: the bytes of event files kept on disk, the oldest chunks dropped beyond them\n"
     "(0: all)."},
    {"stop", (PyCFunction)(void (*)(void))stop, METH_VARARGS | METH_KEYWORDS,
     "stop(*, ended=None)\n--\n\nStop measuring; write everything; return statistics (None when not measuring):\n"
     "events, streams, bytes, chunks, waits and wait_ns (for the writer), stalls, stalled_ns and stall (times\n"
     "writing failed for a while and went on, nothing lost: how long, why the first time), lost and lost_errno\n"
     "(why writing ended before the end, or None and 0), dropped and keep_errno (with keep: the chunks of events\n"
     "dropped, and the errno of a hole the file system could not punch, or 0). ended: how the process ended, in\n"
     "words (\"exit status 0\", \"killed by SIGTERM\"), kept in its trace; not_recorded: what the measurement did not "
     "record, a line\n"
     "each, kept in its trace too (`summary` says them)."},
    {"active", active, METH_NOARGS, "Whether a measurement is running."},
    {"hook_in_use", hook_in_use, METH_NOARGS,
     "The hook the last measurement started records calls with: 'profile', 'trace', 'monitoring' or 'none'."},
    {"gil_unavailable", gil_unavailable, METH_NOARGS,
     "None when this Python tells which thread holds the GIL (GIL shares are recorded), else one line why not."},
    {"enable_recording", enable_recording, METH_NOARGS, "Record events again."},
    {"disable_recording", disable_recording, METH_NOARGS, "Stop recording events until enable_recording()."},
    {"recording", recording, METH_NOARGS, "Whether events are recorded."},
    {"instrumenter_enable", instrumenter_enable, METH_NOARGS, "Record function calls again."},
    {"instrumenter_disable", instrumenter_disable, METH_NOARGS, "Stop recording function calls."},
    {"instrumenter_enabled", instrumenter_is_enabled, METH_NOARGS, "Whether function calls are recorded."},
    {"calls_recorded", calls_recorded, METH_NOARGS, "Whether the hook records the program's calls now."},
    {NULL, NULL, 0, NULL},
};

/* module.c adds this file's functions, and those of the parts a
 * measurement needs before its start: each thread's stream (threadstream.c),
 * the hook threading gives new threads (threadhook.c), the program's code
 * compiled and run (program.c). */
int tt_ext_add_hooks(PyObject *module)
{
    if (tt_registry_init(&tt_definitions) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    if (tt_thread_streams_init() < 0 || tt_threadhook_init(module) < 0 || tt_ext_add_program(module) < 0) return -1;
    return PyModule_AddFunctions(module, measurement_methods);
}

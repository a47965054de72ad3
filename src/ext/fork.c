/* fork.c -- a measured process that forks: the child measures on, in a
 * session of its own in the same experiment (see src/record/fork.h).
 *
 * pthread_atfork brackets every fork of the process, whoever makes it. In
 * the child the measurement is switched off at once (in_child: FORKED in
 * measurement.h), so that a child nobody tells us about (a C library that
 * forks and runs Python on) records nothing, rather than filling buffers
 * that no writer thread drains. Python tells us about the forks it makes
 * itself (os.fork, and with it multiprocessing's fork and forkserver start
 * methods): the session's os.register_at_fork hooks (tracetop/session.py)
 * call fork_prepare before, fork_resume after in the parent, and
 * fork_continue, or fork_leave when child processes are not followed, in
 * the child.
 *
 * fork_prepare ends tracetop's threads (the writer's, the SIGTERM
 * watcher's) and fork_resume starts them again: the program then forks as
 * it would without tracetop, with no thread it does not know of (Python
 * 3.12 and later warn of a fork in a process with threads). Python 3.13
 * counts the threads once the after-fork hooks have run, so a fork made in
 * the main thread has them started again only when os.fork has returned
 * (fork_resume_later); one made in another thread has the program's own
 * two threads to warn of anyway.
 */
#include "ext.h"

#include <pthread.h>
#include <time.h>

#include "fork.h"
#include "lastthread.h"
#include "measurement.h"
#include "objects.h"
#include "regionfilter.h"
#include "tasks.h"
#include "terminate.h"
#include "thread.h"
#include "threadstream.h"

/* In a forked child: the session the parent was running (the child's copy
 * of it), until fork_continue or fork_leave. */
static tt_session *forked;

/* In the parent, from fork_prepare until tracetop's threads run again: the
 * frame that called os.fork, and what fork_resume_later is to call once it
 * runs again. */
static PyObject *fork_frame;
static PyObject *resume_callback;

static void before_fork(void)
{
    tt_last_thread_before_fork();
    tt_fork_prepare();
}

static void in_parent(void) { tt_fork_parent(); }

static void in_child(void)
{
    tt_fork_child();
    tt_last_thread_forked();
    tt_terminate_forked();
    tt_objects_forked();
    forked = tt_measurement.session;
    if (!forked) return;
    tt_measurement_set_session(NULL);
    /* Definitions made from here on must not reach the parent's defs. */
    tt_registry_set_sink(&tt_definitions, NULL, NULL);
}

static PyObject *fork_prepare(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    long before = tt_thread_process_count(NULL), ended = 0;
    Py_XSETREF(fork_frame, Py_XNewRef((PyObject *)PyEval_GetFrame()));
    if (tt_measurement.session && tt_measurement.session->writer.running) {
        tt_session *session = tt_measurement.session;
        Py_BEGIN_ALLOW_THREADS /* the writer may be waiting to write, never for the GIL */
        tt_writer_pause(&session->writer);
        Py_END_ALLOW_THREADS
        ended++;
    }
    ended += tt_terminate_pause();
    /* A joined thread may still be counted for a moment, until the kernel
     * has released it: wait for that, a few milliseconds at most. */
    for (int i = 0; ended && before > 0 && i < 1000 && tt_thread_process_count(NULL) > before - ended; i++) {
        struct timespec pause = {0, 10000};
        nanosleep(&pause, NULL);
    }
    Py_RETURN_NONE;
}

static PyObject *fork_resume(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    Py_CLEAR(fork_frame);
    tt_terminate_resume();
    if (!tt_measurement.session || tt_measurement.session->writer.running) Py_RETURN_NONE;
    tt_error err;
    if (tt_writer_resume(&tt_measurement.session->writer, &err) == 0) Py_RETURN_NONE;
    /* No writer, no measurement: what was recorded is written here. */
    tt_remove_hooks();
    tt_session *session = tt_measurement.session;
    tt_measurement_set_session(NULL);
    tt_session_stats stats;
    tt_session_stop(session, &stats, NULL);
    tt_region_filter_clear();
    return tt_raise(&err);
}

/* Whether the running frame is one called, directly or not, by the frame
 * that called os.fork: an at-fork hook's, or Python's fork warning's. */
static int inside_fork(void)
{
    PyFrameObject *frame = PyEval_GetFrame();
    if (!fork_frame || (PyObject *)frame == fork_frame) return 0;
    Py_XINCREF(frame);
    while (frame && (PyObject *)frame != fork_frame) {
        PyFrameObject *back = PyFrame_GetBack(frame);
        Py_DECREF(frame);
        frame = back;
    }
    int found = frame != NULL;
    Py_XDECREF(frame);
    return found;
}

/* A pending call, made by the main thread between two bytecodes: calls
 * resume_callback once os.fork has returned (or raised), else waits for
 * the next such point. It raises nothing into the program. */
static int resume_when_returned(void *unused)
{
    (void)unused;
    if (inside_fork()) {
        if (Py_AddPendingCall(resume_when_returned, NULL) == 0) return 0;
    }
    PyObject *callback = resume_callback;
    resume_callback = NULL;
    PyObject *result = callback ? PyObject_CallNoArgs(callback) : Py_NewRef(Py_None);
    if (!result) PyErr_WriteUnraisable(callback);
    Py_XDECREF(result);
    Py_XDECREF(callback);
    return 0;
}

static PyObject *fork_resume_later(PyObject *self, PyObject *callback)
{
    (void)self;
    int scheduled = resume_callback != NULL;
    Py_XSETREF(resume_callback, Py_NewRef(callback));
    if (!scheduled && Py_AddPendingCall(resume_when_returned, NULL) != 0) {
        /* The queue is full: started now, the threads are seen by the warning at worst. */
        Py_CLEAR(resume_callback);
        return PyObject_CallNoArgs(callback);
    }
    Py_RETURN_NONE;
}

/* The frames from the calling one back to `since` (included), which were
 * entered while nothing was measured and return once the child measures;
 * 0 when `since` is not among them. */
static uint32_t frames_since(PyObject *since)
{
    PyFrameObject *frame = PyEval_GetFrame();
    Py_XINCREF(frame);
    uint32_t n = 0;
    while (frame) {
        n++;
        int found = (PyObject *)frame == since;
        PyFrameObject *back = PyFrame_GetBack(frame);
        Py_DECREF(frame);
        if (found) {
            Py_XDECREF(back);
            return n;
        }
        frame = back;
    }
    return 0;
}

static PyObject *fork_continue(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"directory", "hook_frame", "memory", "compress", "name", "attributes", NULL};
    const char *directory, *name = "";
    unsigned long long memory = 64ull << 20;
    int compress = 0;
    PyObject *attributes = NULL, *hook_frame;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "sO!|$KpsO!:fork_continue", kwlist, &directory, &PyFrame_Type,
                                     &hook_frame, &memory, &compress, &name, &PyDict_Type, &attributes))
        return NULL;
    if (!forked) Py_RETURN_FALSE; /* the parent was not measuring when it forked */
    size_t attribute_count = 0;
    const char **attribute_pairs = NULL;
    if (attributes && !(attribute_pairs = tt_attribute_array(attributes, &attribute_count))) return NULL;

    tt_session *parent = forked;
    forked = NULL;
    tt_stream *from = tt_tls_stream->session == parent ? tt_tls_stream : NULL;
    tt_fork_abandon(parent);
    /* As the parent's: its hooks and callbacks, and a live channel of its
     * own when the parent had one. */
    tt_session_config config = parent->config;
    config.directory = directory;
    config.memory = memory;
    config.compress = compress;
    config.name = name;
    config.attributes = attribute_pairs;
    config.attribute_count = attribute_count;
    tt_error err;
    tt_session *session;
    int rc = tt_session_start(&config, &tt_definitions, &session, &err);
    PyMem_Free(attribute_pairs);
    if (rc < 0) {
        tt_remove_hooks();
        tt_region_filter_clear();
        return tt_raise(&err);
    }
    tt_tasks_reset(session);
    tt_measurement_set_session(session);
    tt_stream *stream = from ? tt_thread_stream_slow() : NULL;
    if (stream) {
        tt_fork_continue_stream(stream, from, tt_clock_now());
        /* The at-fork hook's frames, and this call, return from here on:
         * their returns must find entries of their own, not the regions
         * that the fork left open. */
        uint32_t returns = frames_since(hook_frame) + (tt_measurement.record_c_calls ? 1 : 0);
        for (uint32_t i = 0; i < returns; i++) tt_stream_skip(stream, TT_STACK_OWN);
    }
    tt_hooks_forked();
    Py_RETURN_TRUE;
}

static PyObject *fork_leave(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    if (forked) {
        forked = NULL;
        tt_remove_hooks();
        tt_region_filter_clear();
    }
    Py_RETURN_NONE;
}

static PyMethodDef fork_methods[] = {
    {"fork_prepare", fork_prepare, METH_NOARGS, "Before os.fork: end tracetop's threads until fork_resume."},
    {"fork_resume", fork_resume, METH_NOARGS,
     "After os.fork, in the parent: start tracetop's threads again (TraceError when the writer's cannot be;\n"
     "the measurement is then stopped)."},
    {"fork_resume_later", fork_resume_later, METH_O,
     "fork_resume_later(callback)\n--\n\nAfter os.fork, in the parent's main thread: call callback() (which calls\n"
     "fork_resume) once os.fork has returned to its caller, after every at-fork\n"
     "hook and Python's fork warning; its exceptions are reported as unraisable."},
    {"fork_continue", (PyCFunction)(void (*)(void))fork_continue, METH_VARARGS | METH_KEYWORDS,
     "fork_continue(directory, hook_frame, *, memory=64 MiB, compress=False, name='', attributes={})\n--\n\n"
     "In a child forked while measuring: measure on into directory/trace/<pid>,\n"
     "continuing the forking thread's open regions. hook_frame: the frame of the\n"
     "at-fork hook that calls it (its frames return unrecorded). False when the\n"
     "parent was not measuring."},
    {"fork_leave", fork_leave, METH_NOARGS,
     "In a child forked while measuring: do not measure it; take the hooks away."},
    {NULL, NULL, 0, NULL},
};

int tt_ext_add_fork(PyObject *module)
{
    int rc = pthread_atfork(before_fork, in_parent, in_child);
    if (rc != 0) {
        PyErr_SetString(PyExc_RuntimeError, "tracetop: cannot register the fork handlers");
        return -1;
    }
    return PyModule_AddFunctions(module, fork_methods);
}

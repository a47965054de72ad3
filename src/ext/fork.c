/* fork.c -- a measured process that forks: the child measures on, in a
 * session of its own in the same experiment (see src/core/fork.h).
 *
 * pthread_atfork brackets every fork of the process, whoever makes it. In
 * the child the measurement is switched off at once (tt_active = NULL), so
 * that a child nobody tells us about (a C library that forks and runs
 * Python on) records nothing, rather than filling buffers that no writer
 * thread drains. Python tells us about the forks it makes itself (os.fork,
 * and with it multiprocessing's fork and forkserver start methods): the
 * session's os.register_at_fork hook (tracetop/session.py) calls
 * fork_continue, or fork_leave when child processes are not followed.
 */
#include "ext.h"

#include <pthread.h>

#include "fork.h"

/* In a forked child: the session the parent was running (the child's copy
 * of it), until fork_continue or fork_leave. */
static tt_session *forked;

static void before_fork(void) { tt_fork_prepare(); }
static void in_parent(void) { tt_fork_parent(); }

static void in_child(void)
{
    tt_fork_child();
    tt_terminate_forked();
    forked = tt_active;
    if (!forked) return;
    tt_active = NULL;
    /* Definitions made from here on must not reach the parent's defs. */
    tt_registry_set_sink(&tt_definitions, NULL, NULL);
}

static PyObject *fork_continue(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"directory", "memory", "compress", "name", "attributes", NULL};
    const char *directory, *name = "";
    unsigned long long memory = 64ull << 20;
    int compress = 0;
    PyObject *attributes = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s|$KpsO!:fork_continue", kwlist, &directory, &memory, &compress,
                                     &name, &PyDict_Type, &attributes))
        return NULL;
    if (!forked) Py_RETURN_FALSE; /* the parent was not measuring when it forked */
    size_t attribute_count = 0;
    const char **attribute_pairs = NULL;
    if (attributes && !(attribute_pairs = tt_attribute_array(attributes, &attribute_count))) return NULL;

    tt_session *parent = forked;
    forked = NULL;
    tt_stream *from = tt_tls_stream && tt_tls_stream->session == parent ? tt_tls_stream : NULL;
    tt_fork_abandon(parent);
    tt_session_config config = {.directory = directory,
                                .memory = memory,
                                .compress = compress,
                                .name = name,
                                .attributes = attribute_pairs,
                                .attribute_count = attribute_count,
                                .blocking_begin = tt_blocking_begin,
                                .blocking_end = tt_blocking_end};
    tt_error err;
    tt_session *session;
    int rc = tt_session_start(&config, &tt_definitions, &session, &err);
    PyMem_Free(attribute_pairs);
    if (rc < 0) {
        tt_remove_hooks();
        return tt_raise(&err);
    }
    tt_active = session;
    tt_stream *stream = from ? tt_thread_stream_slow() : NULL;
    if (stream) tt_fork_continue_stream(stream, from, tt_clock_now());
    Py_RETURN_TRUE;
}

static PyObject *fork_leave(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    if (forked) {
        forked = NULL;
        tt_remove_hooks();
    }
    Py_RETURN_NONE;
}

static PyMethodDef fork_methods[] = {
    {"fork_continue", (PyCFunction)(void (*)(void))fork_continue, METH_VARARGS | METH_KEYWORDS,
     "fork_continue(directory, *, memory=64 MiB, compress=False, name='', attributes={})\n--\n\n"
     "In a child forked while measuring: measure on into directory/trace/<pid>,\n"
     "continuing the forking thread's open regions. False when the parent was\n"
     "not measuring."},
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

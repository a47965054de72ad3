/* liveobj.c -- what the Python shell asks of live channels (live.h) from
 * outside the measured process: `tracetop ctl`. */
#include "readext.h"

#include <time.h>

#include "clock.h"
#include "live.h"

#define POLL_NS 2000000L

/* Waits for the answer to `ticket`; 0 with *state set (measuring, or
 * counting objects for a TT_LIVE_OBJECTS request), or -1 with a message
 * in err. Runs without the GIL. */
static int wait_answer(tt_live_view *v, uint64_t ticket, double timeout, int *state, tt_error *err)
{
    uint64_t deadline = tt_monotonic_ns() + (uint64_t)(timeout * 1e9);
    for (;;) {
        if (tt_live_answered(v, ticket)) {
            *state = ticket & TT_LIVE_OBJECTS ? tt_live_objects(v) : tt_live_measuring(v);
            return 0;
        }
        if (tt_live_process_state(v) != TT_LIVE_RUNNING || !tt_live_alive(v))
            return tt_fail(err, "process %ld ended before it could switch", (long)tt_live_pid(v));
        if (tt_monotonic_ns() > deadline)
            return tt_fail(err, "process %ld did not answer within %g s", (long)tt_live_pid(v), timeout);
        struct timespec pause = {0, POLL_NS};
        nanosleep(&pause, NULL);
    }
}

/* Waits for the channel to end; -1 with a message when it does not. */
static int wait_end(tt_live_view *v, double timeout, tt_error *err)
{
    uint64_t deadline = tt_monotonic_ns() + (uint64_t)(timeout * 1e9);
    while (tt_live_process_state(v) == TT_LIVE_RUNNING && tt_live_alive(v)) {
        if (tt_monotonic_ns() > deadline)
            return tt_fail(err,
                           "process %ld is still measured after %g s (only a process measured by "
                           "`tracetop attach` detaches; `tracetop ctl %ld off` switches others off)",
                           (long)tt_live_pid(v), timeout, (long)tt_live_pid(v));
        struct timespec pause = {0, POLL_NS};
        nanosleep(&pause, NULL);
    }
    return 0;
}

/* Opens the channel of `pid`, asks `request` and waits for the answer (and,
 * with until_end, for the channel to end); *state: what the process says
 * it is now. 0, or -1 with a message. */
static int send_request(long pid, int request, double timeout, int until_end, int *state, tt_error *err)
{
    tt_live_view *v;
    if (tt_live_open((pid_t)pid, &v, err) != 0) return -1;
    int rc = wait_answer(v, tt_live_request(v, request), timeout, state, err);
    if (rc == 0 && until_end) rc = wait_end(v, timeout, err);
    tt_live_view_close(v);
    return rc;
}

static PyObject *live_control(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"pid", "on", "timeout", "objects", NULL};
    long pid;
    int on, objects = 0;
    double timeout = 2.0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "lp|dp:live_control", kwlist, &pid, &on, &timeout, &objects))
        return NULL;
    tt_error err;
    int rc, state = 0;
    Py_BEGIN_ALLOW_THREADS
    rc = send_request(pid, (on ? TT_LIVE_ON : 0) | (objects ? TT_LIVE_OBJECTS : 0), timeout, 0, &state, &err);
    Py_END_ALLOW_THREADS
    if (rc < 0) return tt_raise(&err);
    return PyBool_FromLong(state);
}

static PyObject *live_detach(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    static char *kwlist[] = {"pid", "timeout", NULL};
    long pid;
    double timeout = 2.0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "l|d:live_detach", kwlist, &pid, &timeout)) return NULL;
    tt_error err;
    int rc, state = 0;
    Py_BEGIN_ALLOW_THREADS
    rc = send_request(pid, TT_LIVE_DETACH, timeout, 1, &state, &err);
    Py_END_ALLOW_THREADS
    if (rc < 0) return tt_raise(&err);
    Py_RETURN_NONE;
}

static PyMethodDef live_methods[] = {
    {"live_detach", (PyCFunction)(void (*)(void))live_detach, METH_VARARGS | METH_KEYWORDS,
     "live_detach(pid, timeout=2.0)\n--\n\n"
     "Asks process pid, measured by `tracetop attach`, to end its measurement and go on unmeasured; waits\n"
     "(up to timeout for its answer, and as long again for the end) until it has."},
    {"live_control", (PyCFunction)(void (*)(void))live_control, METH_VARARGS | METH_KEYWORDS,
     "live_control(pid, on, timeout=2.0, objects=False)\n--\n\n"
     "Asks process pid, measured with --live, to switch its measurement (or, with objects,\n"
     "its counting of objects) on or off; waits for its answer and returns whether it is\n"
     "measuring (counting) now."},
    {NULL, NULL, 0, NULL},
};

int tt_readext_add_live(PyObject *module) { return PyModule_AddFunctions(module, live_methods); }

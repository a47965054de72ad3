/* threadhook.c -- threads started after the measurement's start get the
 * hook from threading's bootstrap: threading.setprofile's or settrace's
 * hook, _thread_hook here, is called once as the thread's first event and
 * replaces itself with the session's C hook (tt_measurement.hook).
 *
 * threading is not imported for it: once the program imports it,
 * threadwatch.c calls tt_hooks_threading_imported, and the hook goes in
 * then. The monitoring instrumenter needs no hook per thread, but notes
 * threading's bootstrap code (monitoring.c).
 */
#include "threadhook.h"

#include "measurement.h"
#include "monitoring.h"
#include "profilehook.h"
#include "threadwatch.h"

PyObject *tt_thread_hook;
static PyObject *saved_threading_hook; /* what threading had before _thread_hook, while that is there */

/* What threading.setprofile / settrace do, for threads started from now
 * on, without a call the hook would see; returns the previous hook (new
 * reference), or NULL on error. */
static PyObject *set_threading_hook(PyObject *threading, PyObject *fn)
{
    const char *attr = tt_measurement.hook_kind == TT_HOOK_PROFILE ? "_profile_hook" : "_trace_hook";
    PyObject *previous = PyObject_GetAttrString(threading, attr);
    if (previous && PyObject_SetAttrString(threading, attr, fn) < 0) Py_CLEAR(previous);
    return previous;
}

int tt_threadhook_on(void)
{
    if (saved_threading_hook) return 0;
    PyObject *threading = tt_imported_threading();
    if (!threading) return 0; /* tt_hooks_threading_imported comes back */
    saved_threading_hook = set_threading_hook(threading, tt_thread_hook);
    Py_DECREF(threading);
    return saved_threading_hook ? 0 : -1;
}

void tt_threadhook_off(void)
{
    if (!saved_threading_hook) return;
    PyObject *threading = tt_imported_threading();
    if (threading) Py_XDECREF(set_threading_hook(threading, saved_threading_hook));
    Py_XDECREF(threading);
    Py_CLEAR(saved_threading_hook);
    PyErr_Clear();
}

void tt_hooks_threading_imported(void)
{
    enum tt_hook_kind kind = tt_measurement.hook_kind;
    if (!tt_measurement.hook_installed) return;
    if (kind == TT_HOOK_MONITORING)
        tt_monitoring_threading_imported();
    else if (kind == TT_HOOK_PROFILE || kind == TT_HOOK_TRACE)
        tt_threadhook_on();
}

/* _thread_hook(frame, event, arg): where sys.setprofile (settrace) is not
 * ownprofile.c's wrapper (the program replaced it), threading's bootstrap
 * makes it the new thread's profile (trace) function, and it is called
 * with the thread's first event: it puts the C hook in its place, set as
 * tt_slot_set does (no audit event on 3.11), and hands it that event. */
static PyObject *thread_hook_impl(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 3 || !PyFrame_Check(args[0]) || !PyUnicode_Check(args[1])) Py_RETURN_NONE;
    Py_tracefunc hook = tt_measurement.session ? tt_measurement.hook : NULL;
    if (tt_slot_set(PyThreadState_Get(), tt_measurement.hook_kind == TT_HOOK_TRACE, hook, NULL) < 0) return NULL;
    if (!hook) Py_RETURN_NONE;
    static const char *const events[] = {"call", "exception", "line", "return", "c_call", "c_exception", "c_return"};
    static const int whats[] = {PyTrace_CALL,   PyTrace_EXCEPTION,   PyTrace_LINE,    PyTrace_RETURN,
                                PyTrace_C_CALL, PyTrace_C_EXCEPTION, PyTrace_C_RETURN};
    for (size_t i = 0; i < sizeof events / sizeof *events; i++)
        if (PyUnicode_CompareWithASCIIString(args[1], events[i]) == 0) {
            hook(NULL, (PyFrameObject *)args[0], whats[i], args[2]);
            break;
        }
    Py_RETURN_NONE;
}

static PyMethodDef thread_hook_def = {"_thread_hook", (PyCFunction)(void (*)(void))thread_hook_impl, METH_FASTCALL,
                                      "The first profile event of a new thread installs the C hook."};

int tt_threadhook_init(PyObject *module)
{
    tt_thread_hook = PyCFunction_NewEx(&thread_hook_def, module, NULL);
    if (!tt_thread_hook || tt_module_add(module, "_thread_hook", tt_thread_hook) < 0) return -1;
    return 0;
}

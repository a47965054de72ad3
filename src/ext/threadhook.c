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

/* threading's names for the hook's slot (trace 0: the profile slot, 1: the
 * trace slot): the global its bootstrap reads, its setter and its getter. */
static const char *const names[2][3] = {{"_profile_hook", "setprofile", "getprofile"},
                                        {"_trace_hook", "settrace", "gettrace"}};
static PyObject *threading_module; /* while tracetop's hook is in threading */
static int slot;                   /* its slot, then */
static PyMethodDef stand_in_defs[2];
static PyObject *replaced[2]; /* threading's setter and getter, while stood in for */

/* threading.setprofile (settrace) while tracetop's hook is in threading:
 * None puts tt_thread_hook back, so that the threads started from then on
 * are measured still; a function of the program's goes there, and
 * ownprofile.c's sys.setprofile puts tracetop's hook in front of it. */
static PyObject *stand_in_set(PyObject *self, PyObject *func)
{
    (void)self;
    if (PyObject_SetAttrString(threading_module, names[slot][0], func == Py_None ? tt_thread_hook : func) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* threading.getprofile (gettrace): what the program set, None for tracetop's. */
static PyObject *stand_in_get(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    PyObject *hook = PyObject_GetAttrString(threading_module, names[slot][0]);
    if (hook == tt_thread_hook) Py_SETREF(hook, Py_NewRef(Py_None));
    return hook;
}

static const PyCFunction stand_ins[2] = {stand_in_set, stand_in_get};
static const int stand_in_flags[2] = {METH_O, METH_NOARGS};

/* Puts back what tt_threadhook_on replaced, where it is still in place. */
static void put_back(void)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    for (int i = 0; i < 2; i++) {
        if (!replaced[i]) continue;
        PyObject *now = PyObject_GetAttrString(threading_module, names[slot][i + 1]);
        if (now && PyCFunction_Check(now) && ((PyCFunctionObject *)now)->m_ml == &stand_in_defs[i])
            PyObject_SetAttrString(threading_module, names[slot][i + 1], replaced[i]);
        Py_XDECREF(now);
        Py_CLEAR(replaced[i]);
    }
    PyObject *hook = PyObject_GetAttrString(threading_module, names[slot][0]);
    if (hook == tt_thread_hook) PyObject_SetAttrString(threading_module, names[slot][0], Py_None);
    Py_XDECREF(hook);
    Py_CLEAR(threading_module);
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
}

int tt_threadhook_on(void)
{
    if (threading_module) return 0;
    threading_module = tt_imported_threading();
    if (!threading_module) return 0; /* tt_hooks_threading_imported comes back */
    slot = tt_measurement.hook_kind == TT_HOOK_TRACE;
    PyObject *module = PyUnicode_FromString("threading");
    for (int i = 0; module && i < 2; i++) {
        PyObject *real = PyObject_GetAttrString(threading_module, names[slot][i + 1]);
        PyObject *fn = NULL;
        if (real) {
            stand_in_defs[i] = (PyMethodDef){names[slot][i + 1], stand_ins[i], stand_in_flags[i], NULL};
            fn = PyCFunction_NewEx(&stand_in_defs[i], NULL, module);
        }
        if (!fn || PyObject_SetAttrString(threading_module, names[slot][i + 1], fn) < 0) {
            Py_XDECREF(fn);
            Py_XDECREF(real);
            Py_DECREF(module);
            put_back();
            return -1;
        }
        Py_DECREF(fn);
        replaced[i] = real;
    }
    Py_XDECREF(module);
    /* The program's function, set before, stays: the threads get the hook in front of it. */
    PyObject *hook = PyObject_GetAttrString(threading_module, names[slot][0]);
    int rc = !hook             ? -1
             : hook == Py_None ? PyObject_SetAttrString(threading_module, names[slot][0], tt_thread_hook)
                               : 0;
    Py_XDECREF(hook);
    if (rc < 0) put_back();
    return rc;
}

void tt_threadhook_off(void)
{
    if (threading_module) put_back();
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

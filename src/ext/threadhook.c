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
static PyObject *replaced[2];      /* threading's setter and getter, while stood in for */

/* threading.setprofile and getprofile (settrace and gettrace) while
 * tracetop's hook is in threading, Python functions in threading's globals
 * as threading's own are, so that a profile function of the program sees
 * their calls as it sees those: None puts tt_thread_hook back, so that the
 * threads started from then on are measured still; a function of the
 * program's goes there, and ownprofile.c's sys.setprofile puts tracetop's
 * hook in front of it; the getter answers what the program set. Compiled
 * once, made functions of threading, `hook` tt_thread_hook, when it is in.
 * The outer function never runs. */
static const char stand_ins_source[] = "def stand_ins(hook):\n"
                                       "    def setprofile(func):\n"
                                       "        global _profile_hook\n"
                                       "        _profile_hook = hook if func is None else func\n"
                                       "    def getprofile():\n"
                                       "        return None if _profile_hook is hook else _profile_hook\n"
                                       "    def settrace(func):\n"
                                       "        global _trace_hook\n"
                                       "        _trace_hook = hook if func is None else func\n"
                                       "    def gettrace():\n"
                                       "        return None if _trace_hook is hook else _trace_hook\n";
static PyObject *stand_in_code[2][2]; /* [slot][setter, getter] */

/* The code object named `name` among code's constants, borrowed, or NULL. */
static PyObject *inner_code(PyObject *code, const char *name)
{
    PyObject *consts = PyObject_GetAttrString(code, "co_consts"), *found = NULL;
    for (Py_ssize_t i = 0; consts && i < PyTuple_GET_SIZE(consts); i++) {
        PyObject *c = PyTuple_GET_ITEM(consts, i);
        if (PyCode_Check(c) && PyUnicode_CompareWithASCIIString(((PyCodeObject *)c)->co_name, name) == 0) found = c;
    }
    Py_XDECREF(consts);
    return found;
}

/* A stand-in as a function of threading, its docstring threading's own. */
static PyObject *stand_in(int i, PyObject *real)
{
    PyObject *code = stand_in_code[slot][i];
    PyObject *fn = PyFunction_NewWithQualName(code, PyModule_GetDict(threading_module),
                                              ((PyCodeObject *)code)->co_name);
    PyObject *cell = PyCell_New(tt_thread_hook);
    PyObject *closure = cell ? PyTuple_Pack(1, cell) : NULL;
    PyObject *doc = PyObject_GetAttrString(real, "__doc__");
    if (!fn || !closure || !doc || PyFunction_SetClosure(fn, closure) < 0 ||
        PyObject_SetAttrString(fn, "__doc__", doc) < 0)
        Py_CLEAR(fn);
    Py_XDECREF(cell);
    Py_XDECREF(closure);
    Py_XDECREF(doc);
    return fn;
}

/* Puts back what tt_threadhook_on replaced, where it is still in place. */
static void put_back(void)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    for (int i = 0; i < 2; i++) {
        if (!replaced[i]) continue;
        PyObject *now = PyObject_GetAttrString(threading_module, names[slot][i + 1]);
        if (now && PyFunction_Check(now) && PyFunction_GET_CODE(now) == stand_in_code[slot][i])
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
    for (int i = 0; i < 2; i++) {
        PyObject *real = PyObject_GetAttrString(threading_module, names[slot][i + 1]);
        PyObject *fn = real ? stand_in(i, real) : NULL;
        if (!fn || PyObject_SetAttrString(threading_module, names[slot][i + 1], fn) < 0) {
            Py_XDECREF(fn);
            Py_XDECREF(real);
            put_back();
            return -1;
        }
        Py_DECREF(fn);
        replaced[i] = real;
    }
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
    PyObject *code = Py_CompileString(stand_ins_source, "<tracetop>", Py_file_input);
    PyObject *outer = code ? inner_code(code, "stand_ins") : NULL;
    for (int trace = 0; outer && trace < 2; trace++)
        for (int i = 0; i < 2; i++) stand_in_code[trace][i] = Py_XNewRef(inner_code(outer, names[trace][i + 1]));
    Py_XDECREF(code);
    if (!stand_in_code[1][1]) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "tracetop: threading's stand-ins did not compile");
        return -1;
    }
    return 0;
}

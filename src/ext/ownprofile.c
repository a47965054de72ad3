/* ownprofile.c -- the program's own profile function sees what it sees
 * without tracetop.
 *
 * CPython reports the end of a C call to the profile function in place when
 * the call ends. A program that calls sys.setprofile(f) while tracetop's
 * hook is in place (the profile instrumenter, or the monitoring one with C
 * calls, whose CALL instrumentation makes CPython report C returns) would
 * so hand f the C_RETURN of that very sys.setprofile call: an event f never
 * gets without tracetop, where the call began unprofiled.
 *
 * While tracetop's hook is in place, sys.setprofile is a wrapper: when
 * tracetop would see the call's C_RETURN, it leaves the setting to it. tracetop's next event on the thread (that
 * C_RETURN) calls the real function first, so its error, if any, is raised where the program called, and f sees its
 * first event after. Otherwise they call the real function at once. sys.settrace needs nothing: trace functions get no
 * C events. Nor does sys._setprofileallthreads (3.12+): the new function gets that call's C_RETURN without tracetop
 * too.
 */
#include "ownprofile.h"

#include "fastpath.h"
#include "profilehook.h"

__thread PyObject *tt_pending_setter __attribute__((tls_model("initial-exec")));
static __thread PyObject *pending_arg;

static const char *const wrapped[] = {"setprofile"};
#define WRAPPED (sizeof wrapped / sizeof *wrapped)

static PyMethodDef wrapper_defs[WRAPPED];
/* sys's own functions, kept for good: a wrapper the program holds on to
 * still works after tracetop has stopped. */
static PyObject *originals[WRAPPED];

static PyObject *defer(PyObject *real, PyObject *arg)
{
    if (!tt_hook_sees_c_return()) return PyObject_CallOneArg(real, arg);
    if (!tt_pending_setter) tt_fast_pending_setter(1);
    Py_XSETREF(tt_pending_setter, Py_NewRef(real));
    Py_XSETREF(pending_arg, Py_NewRef(arg));
    Py_RETURN_NONE;
}

/* Bound to sys as the originals are, so that their errors read the same. */
static PyObject *setprofile(PyObject *sys, PyObject *arg)
{
    (void)sys;
    return defer(originals[0], arg);
}

static const PyCFunction wrappers[WRAPPED] = {setprofile};

int tt_own_profile_apply(void)
{
    PyObject *setter = tt_pending_setter, *arg = pending_arg;
    tt_pending_setter = pending_arg = NULL;
    tt_fast_pending_setter(-1);
    PyObject *r = PyObject_CallOneArg(setter, arg);
    Py_DECREF(setter);
    Py_DECREF(arg);
    if (!r) return -1;
    Py_DECREF(r);
    return 0;
}

int tt_own_profile_wrap(void)
{
    PyObject *sys = PyImport_ImportModule("sys");
    if (!sys) return -1;
    for (size_t i = 0; i < WRAPPED; i++) {
        PyObject *real = PyObject_GetAttrString(sys, wrapped[i]);
        if (!real) {
            Py_DECREF(sys);
            tt_own_profile_unwrap();
            return -1;
        }
        /* What the program put there stays; a wrapper it put back is ours already. */
        if (!PyCFunction_Check(real) || ((PyCFunctionObject *)real)->m_ml == &wrapper_defs[i]) {
            Py_DECREF(real);
            continue;
        }
        wrapper_defs[i] = (PyMethodDef){wrapped[i], wrappers[i], METH_O, ((PyCFunctionObject *)real)->m_ml->ml_doc};
        PyObject *module = PyUnicode_FromString("sys");
        PyObject *fn = module ? PyCFunction_NewEx(&wrapper_defs[i], sys, module) : NULL;
        Py_XDECREF(module);
        if (!fn || PyObject_SetAttrString(sys, wrapped[i], fn) < 0) {
            Py_XDECREF(fn);
            Py_DECREF(real);
            Py_DECREF(sys);
            tt_own_profile_unwrap();
            return -1;
        }
        Py_DECREF(fn);
        Py_XSETREF(originals[i], real);
    }
    Py_DECREF(sys);
    return 0;
}

void tt_own_profile_unwrap(void)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *sys = PyImport_ImportModule("sys");
    for (size_t i = 0; i < WRAPPED; i++) {
        if (!originals[i]) continue;
        PyObject *now = sys ? PyObject_GetAttrString(sys, wrapped[i]) : NULL;
        /* Only a wrapper still in place goes: what the program set since stays. */
        if (now && PyCFunction_Check(now) && ((PyCFunctionObject *)now)->m_ml == &wrapper_defs[i])
            PyObject_SetAttrString(sys, wrapped[i], originals[i]);
        Py_XDECREF(now);
    }
    Py_XDECREF(sys);
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
}

/* ownprofile.c -- the program's own profile and trace functions see what
 * they see without tracetop, and tracetop goes on recording.
 *
 * A thread has one profile slot and one trace slot (pycompat.h: tt_slot_*).
 * The profile and trace instrumenters hold one of them with tracetop's hook,
 * which the program's sys.setprofile (settrace) would replace: the
 * recording of that thread would end there. While tracetop's hook is in
 * place, sys.setprofile and sys.settrace are wrappers that keep the hook in
 * the slot and give the program's function the slot's object, which is
 * what sys.getprofile (gettrace) returns: the real setter runs (its audit
 * event and errors as without tracetop), and the function it put in the
 * slot, CPython's trampoline, goes back to tracetop's hook, which calls it
 * after recording each event (tt_own_forward). An exception of the
 * program's function takes the function away, as CPython does, and
 * tracetop's hook stays. threading's bootstrap asking for tracetop's hook
 * (tt_thread_hook) gets it at once, with no audit event: on 3.11 a setter
 * raises one under a flag of the whole process, so that a thread starting
 * while another's audit hook lets the GIL go would fail.
 *
 * CPython reports the end of a C call to the profile function in place when
 * the call ends. A program that calls sys.setprofile(f) while tracetop's
 * hook sees C returns (the profile instrumenter, or the monitoring one with
 * C calls, whose CALL instrumentation makes CPython report C returns) would
 * so hand f the C_RETURN of that very sys.setprofile call: an event f gets
 * without tracetop only where a function was set before the call. So the
 * setting waits for tracetop's next event on the thread, that C_RETURN,
 * which makes it first (its error, if any, raised where the program called)
 * and then hands the event on to the function set, if a function was set
 * before. Trace functions get no C events; nor does anything wait for
 * sys._setprofileallthreads (3.12+): the new function gets that call's
 * C_RETURN without tracetop too.
 *
 * Another tool's C function set with PyEval_SetProfile (SetTrace) replaces
 * tracetop's hook without a wrapper: cProfile before 3.12, coverage's
 * tracer. The setter's audit event tells (audit, below): the C call running
 * then ends unseen, so it is closed at once, and on the main thread, which
 * runs the interpreter's pending calls, a pending call right after that C
 * call puts tracetop's hook back in front of the tool's function, which the
 * hook then calls as the program's (`foreign`), or in place of none. Other
 * threads stay unrecorded from there while the tool's function is set.
 */
#include "ownprofile.h"

#include "fastpath.h"
#include "measurement.h"
#include "profilehook.h"
#include "threadhook.h"
#include "threadstream.h"

__thread PyObject *tt_pending_setter __attribute__((tls_model("initial-exec")));
static __thread PyObject *pending_arg;

static const char *const wrapped[] = {"setprofile", "settrace"}; /* indexed by trace */
#define WRAPPED (sizeof wrapped / sizeof *wrapped)

/* Another tool's C function behind tracetop's hook in the slot of
 * foreign_thread, the main thread (audit). */
static Py_tracefunc foreign;
static PyThreadState *foreign_thread;

/* Set while tracetop itself, or a function the hook calls, sets a slot: its
 * audit event is no other tool's. */
static __thread int own_setting;

/* Set from the audit event that took the calling thread's slot from
 * tracetop's hook to its return there: one setter may raise several
 * (sys._setprofileallthreads, one per thread). */
static __thread int displaced;

void tt_own_setting_begin(void) { own_setting++; }
void tt_own_setting_end(void) { own_setting--; }

static PyMethodDef wrapper_defs[WRAPPED];
/* sys's own functions, kept for good: a wrapper the program holds on to
 * still works after tracetop has stopped. */
static PyObject *originals[WRAPPED];
/* CPython's trampolines, as the real setters put them in the slots. */
static Py_tracefunc trampolines[WRAPPED];

Py_tracefunc tt_own_function(PyThreadState *t, int trace)
{
    return foreign && t == foreign_thread ? foreign : trampolines[trace];
}

/* Whether tracetop's hook holds this slot kind (on some thread). */
static int hook_holds(int trace)
{
    const tt_measurement_state *m = &tt_measurement;
    return m->hook_installed && m->hook_kind == (trace ? TT_HOOK_TRACE : TT_HOOK_PROFILE);
}

/* The program's setting, made on a thread whose slot tracetop's hook holds:
 * the object in the slot, the hook kept. 0, or -1 with an exception. */
static int set_own(int trace, PyObject *arg)
{
    PyThreadState *t = PyThreadState_Get();
    if (arg == Py_None) {
        own_setting++;
        int refused = PySys_Audit(trace ? "sys.settrace" : "sys.setprofile", NULL) < 0;
        own_setting--;
        if (refused) return -1;
        if (t == foreign_thread) foreign = NULL;
        tt_slot_clear_object(t, trace);
        return 0;
    }
    own_setting++;
    PyObject *r = PyObject_CallOneArg(originals[trace], arg);
    own_setting--;
    if (!r) return -1;
    Py_DECREF(r);
    if (t == foreign_thread) foreign = NULL;
    Py_tracefunc now = tt_slot_func(t, trace);
    if (now && !tt_profile_hook_is_ours(now)) {
        trampolines[trace] = now;
        tt_slot_swap(t, trace, tt_measurement.hook);
    }
    return 0;
}

static PyObject *own_setter(int trace, PyObject *arg)
{
    PyObject *real = originals[trace];
    if (!hook_holds(trace)) {
        if (trace || !tt_hook_sees_c_return()) return PyObject_CallOneArg(real, arg);
    } else {
        PyThreadState *t = PyThreadState_Get();
        int reached = tt_profile_hook_is_ours(tt_slot_func(t, trace));
        if (!reached) {
            /* A thread the hook has not reached: threading starting it (with
             * tt_thread_hook, or the program's threading.setprofile function),
             * or one whose slot another tool took, which keeps it. */
            if (tt_slot_func(t, trace)) return PyObject_CallOneArg(real, arg);
            if (tt_profile_hook_install_here() < 0) return NULL;
            displaced = 0;
        }
        if (arg == tt_thread_hook) Py_RETURN_NONE;
        /* Before 3.12 a C call's end goes to the profile function in place
         * as it began; from 3.12 on to the one in place as it ends, once
         * sys.monitoring reports the calls, as a profile function on any
         * thread makes it do. */
        int sees_c_return = !trace && (reached || TT_PYTHON_HAS_MONITORING);
        if (!sees_c_return) return set_own(trace, arg) < 0 ? NULL : Py_NewRef(Py_None);
    }
    if (!tt_pending_setter) tt_fast_pending_setter(1);
    Py_XSETREF(tt_pending_setter, Py_NewRef(real));
    Py_XSETREF(pending_arg, Py_NewRef(arg));
    Py_RETURN_NONE;
}

/* Bound to sys as the originals are, so that their errors read the same. */
static PyObject *setprofile(PyObject *sys, PyObject *arg)
{
    (void)sys;
    return own_setter(0, arg);
}

static PyObject *settrace(PyObject *sys, PyObject *arg)
{
    (void)sys;
    return own_setter(1, arg);
}

static const PyCFunction wrappers[WRAPPED] = {setprofile, settrace};

int tt_own_profile_apply(void)
{
    PyObject *setter = tt_pending_setter, *arg = pending_arg;
    tt_pending_setter = pending_arg = NULL;
    tt_fast_pending_setter(-1);
    int rc;
    if (hook_holds(0)) {
        rc = set_own(0, arg);
    } else {
        PyObject *r = PyObject_CallOneArg(setter, arg);
        rc = r ? 0 : -1;
        Py_XDECREF(r);
    }
    Py_DECREF(setter);
    Py_DECREF(arg);
    return rc;
}

int tt_own_forward(Py_tracefunc hook, PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    (void)obj; /* a setting made on this very event (tt_own_profile_apply) may replace it */
    int trace = tt_measurement.hook_kind == TT_HOOK_TRACE;
    if (hook(NULL, frame, what, arg) < 0) return -1;
    PyThreadState *t = PyThreadState_Get();
    PyObject *own = tt_slot_object(t, trace);
    Py_tracefunc function = tt_own_function(t, trace);
    if (!own || !function) return 0;
    Py_INCREF(own);
    own_setting++;
    int rc = function(own, frame, what, arg);
    own_setting--;
    Py_DECREF(own);
    /* The trampoline took its function away with an exception, and so the
     * hook: the hook goes back, as the only function of the slot. */
    if (rc < 0 && !tt_slot_func(t, trace) && hook_holds(trace)) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        if (tt_profile_hook_install_here() < 0) PyErr_Clear();
        PyErr_Restore(type, value, tb);
    }
    return rc;
}

/* On the main thread, right after the C call whose setter took tracetop's
 * hook away (audit): the hook back in the slot, in front of what the setter
 * put there. */
static int regain(void *thread)
{
    int trace = tt_measurement.hook_kind == TT_HOOK_TRACE;
    PyThreadState *t = PyThreadState_Get();
    if (t != thread) return 0;
    displaced = 0;
    if (!hook_holds(trace)) return 0;
    Py_tracefunc now = tt_slot_func(t, trace);
    if (tt_profile_hook_is_ours(now)) return 0;
    foreign = now && now != trampolines[trace] ? now : NULL;
    foreign_thread = t;
    if (tt_profile_hook_install_here() < 0) PyErr_Clear(); /* refused by an audit hook (3.12+): unmeasured */
    return 0;
}

/* An audit hook of tracetop's, in C: a setter about to replace tracetop's
 * hook in the calling thread's slot, for another tool. */
static int audit(const char *event, PyObject *args, void *unused)
{
    (void)args, (void)unused;
    int trace = strcmp(event, "sys.settrace") == 0;
    if ((!trace && strcmp(event, "sys.setprofile") != 0) || own_setting || !hook_holds(trace)) return 0;
    PyThreadState *t = PyThreadState_Get();
    if (!tt_profile_hook_is_ours(tt_slot_func(t, trace)) || !tt_measurement.session || displaced) return 0;
    displaced = 1;
    /* The hook will not see the C_RETURN of the C call that sets. */
    tt_stream *s = !trace && tt_measurement.record_c_calls ? tt_thread_stream() : NULL;
    if (s) tt_stream_return(s, tt_clock_now());
    if (Py_AddPendingCall(regain, t) < 0) PyErr_Clear();
    return 0;
}

void tt_own_profile_watch(void)
{
    static int added;
    if (!added && PySys_AddAuditHook(audit, NULL) < 0) PyErr_Clear(); /* refused: other tools' setters unseen */
    added = 1;
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

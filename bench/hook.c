/* _benchhook -- the harness's own C profile functions.
 *
 * "floor": a profile function that does nothing. What it costs is what
 * CPython itself adds to a program once any profile function is set: the
 * floor under every profiler.
 * "count": a profile function that counts its invocations (call, return,
 * c_call, c_return, c_exception). That count is what the harness calls the
 * program's events, the same for every tool.
 *
 * Both run on every thread: install() sets the hook on the calling thread,
 * and adopt, given to threading.setprofile, sets it on each new thread.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

static unsigned long long events; /* profile functions run with the GIL held */
static Py_tracefunc active;

static int floor_hook(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    (void)obj, (void)frame, (void)what, (void)arg;
    return 0;
}

static int count_hook(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    (void)obj, (void)frame, (void)what, (void)arg;
    events++;
    return 0;
}

static PyObject *install(PyObject *self, PyObject *mode)
{
    (void)self;
    const char *name = PyUnicode_AsUTF8(mode);
    if (name == NULL)
        return NULL;
    if (strcmp(name, "floor") == 0)
        active = floor_hook;
    else if (strcmp(name, "count") == 0)
        active = count_hook;
    else
        return PyErr_Format(PyExc_ValueError, "unknown hook %R (floor or count)", mode);
    PyEval_SetProfile(active, NULL);
    Py_RETURN_NONE;
}

/* A new thread calls sys.setprofile(adopt), so the first event on it calls
 * adopt(frame, event, arg) through sys.setprofile's trampoline: put the C
 * hook in the trampoline's place and count that event. */
static PyObject *adopt(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self, (void)args, (void)nargs;
    PyEval_SetProfile(active, NULL);
    if (active == count_hook)
        events++;
    Py_RETURN_NONE;
}

static PyObject *count(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    return PyLong_FromUnsignedLongLong(events);
}

static PyMethodDef methods[] = {
    {"install", install, METH_O, "install(mode): set the 'floor' or 'count' hook on this thread."},
    {"adopt", (PyCFunction)(void (*)(void))adopt, METH_FASTCALL, "Give to threading.setprofile after install()."},
    {"count", count, METH_NOARGS, "Events counted so far."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_benchhook", "The benchmark harness's C profile functions.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__benchhook(void)
{
    return PyModule_Create(&module);
}

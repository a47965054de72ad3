/* threadwatch.c -- threading, imported when the program imports it.
 *
 * Importing threading at every start would be most of what a measured
 * process pays at start-up (it imports functools, collections ...), so
 * tracetop does not import it. What a measurement needs of it is done once
 * the program has imported it, before its import statement returns, so
 * before it can start a thread with it:
 *   - the threads threading starts get the hook (threadhook.c: _thread_hook,
 *     monitoring.c: Thread._bootstrap);
 *   - session.py's after-fork hook runs after threading's, which resets
 *     threading's state in the child and is not the program's work: it is
 *     registered again, and its first registration does nothing from then.
 *
 * A finder first on sys.meta_path sees the import of threading. It steps
 * out of sys.meta_path, asks the finders after it, as importlib would, and
 * hands importlib the spec they found with its loader wrapped; the wrapper
 * puts the found loader back in the spec and the module before threading
 * runs, runs it, and then does the above. All of it is C, so that the import
 * records the calls it records without tracetop (the finders' find_spec,
 * the loader's exec_module) and none of tracetop's own.
 */
#include "threadwatch.h"

#include "pyregions.h"
#include "threadhook.h"

static PyObject *finder;     /* the one in sys.meta_path, made once */
static PyObject *child_hook; /* session.py's after-fork hook, or NULL */
static int child_hook_registered_again;

PyObject *tt_imported_threading(void)
{
    PyObject *modname = PyUnicode_FromString("threading");
    PyObject *threading = modname ? PyImport_GetModule(modname) : NULL;
    Py_XDECREF(modname);
    PyErr_Clear();
    return threading;
}

/* ---- the loader ---- */

typedef struct {
    PyObject_HEAD
    PyObject *loader; /* the one the other finders found */
} Loader;

static void Loader_dealloc(Loader *self)
{
    Py_XDECREF(self->loader);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Loader_create_module(Loader *self, PyObject *spec)
{
    return PyObject_CallMethod(self->loader, "create_module", "O", spec);
}

static int register_child_hook(PyObject *hook);
/* The same hook, registered before and after threading's (self False, True). */
static PyObject *in_child_before_threading, *in_child_after_threading;

static void threading_imported(void)
{
    if (child_hook && !child_hook_registered_again) {
        child_hook_registered_again = 1;
        if (register_child_hook(in_child_after_threading) < 0) child_hook_registered_again = 0;
    }
    tt_hooks_threading_imported();
    /* The program's import goes on as without tracetop: what could not be
     * done is said once. */
    if (PyErr_Occurred()) PyErr_WriteUnraisable(finder);
}

static PyObject *Loader_exec_module(Loader *self, PyObject *module)
{
    PyObject *spec = PyObject_GetAttrString(module, "__spec__");
    int rc = spec ? PyObject_SetAttrString(spec, "loader", self->loader) : -1;
    Py_XDECREF(spec);
    if (rc < 0 || PyObject_SetAttrString(module, "__loader__", self->loader) < 0) return NULL;
    PyObject *r = PyObject_CallMethod(self->loader, "exec_module", "O", module);
    if (!r) return NULL;
    Py_DECREF(r);
    threading_imported();
    Py_RETURN_NONE;
}

static PyMethodDef Loader_methods[] = {
    {"create_module", (PyCFunction)Loader_create_module, METH_O, NULL},
    {"exec_module", (PyCFunction)Loader_exec_module, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject LoaderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tracetop._tracetop._ThreadingLoader",
    .tp_basicsize = sizeof(Loader),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The loader of threading that another finder found, run by tracetop's finder.",
    .tp_dealloc = (destructor)Loader_dealloc,
    .tp_methods = Loader_methods,
};

/* ---- the finder ---- */

static void leave_meta_path(void)
{
    PyObject *meta_path = PySys_GetObject("meta_path"); /* borrowed */
    Py_ssize_t n = meta_path && PyList_Check(meta_path) ? PyList_GET_SIZE(meta_path) : 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (PyList_GET_ITEM(meta_path, i) == finder) {
            PySequence_DelItem(meta_path, i);
            return;
        }
}

/* The spec the finders of sys.meta_path find (new reference), None when
 * none does, NULL with an exception. */
static PyObject *find_elsewhere(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *meta_path = PySys_GetObject("meta_path"); /* borrowed */
    PyObject *finders = meta_path ? PySequence_List(meta_path) : NULL;
    if (!finders) return NULL;
    PyObject *name = PyUnicode_FromString("find_spec"), *spec = NULL;
    Py_ssize_t total = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    PyObject **call = name ? PyMem_Calloc((size_t)total + 1, sizeof *call) : NULL;
    if (call) {
        memcpy(call + 1, args, (size_t)total * sizeof *call);
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(finders); i++) {
            call[0] = PyList_GET_ITEM(finders, i);
            spec = PyObject_VectorcallMethod(name, call, (size_t)nargs + 1, kwnames);
            if (!spec && PyErr_ExceptionMatches(PyExc_AttributeError) && !PyObject_HasAttr(call[0], name)) {
                PyErr_Clear(); /* not a finder of importlib's protocol: importlib passes it over too */
                continue;
            }
            if (!spec || spec != Py_None) break;
            Py_CLEAR(spec);
        }
        if (!spec && !PyErr_Occurred()) spec = Py_NewRef(Py_None);
    } else if (name) {
        PyErr_NoMemory();
    }
    PyMem_Free(call);
    Py_XDECREF(name);
    Py_DECREF(finders);
    return spec;
}

static PyObject *Finder_find_spec(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    (void)self;
    if (nargs < 1 || !PyUnicode_Check(args[0]) || PyUnicode_CompareWithASCIIString(args[0], "threading") != 0)
        Py_RETURN_NONE;
    leave_meta_path();
    PyObject *spec = find_elsewhere(args, nargs, kwnames);
    if (!spec || spec == Py_None) return spec;
    PyObject *loader = PyObject_GetAttrString(spec, "loader");
    if (!loader) {
        Py_DECREF(spec);
        return NULL;
    }
    /* A loader of the old protocol, without exec_module, is left alone:
     * threading then has no measured threads, which it never has there. */
    if (PyObject_HasAttrString(loader, "exec_module")) {
        Loader *wrapper = PyObject_New(Loader, &LoaderType);
        if (wrapper) wrapper->loader = Py_NewRef(loader);
        if (!wrapper || PyObject_SetAttrString(spec, "loader", (PyObject *)wrapper) < 0) Py_CLEAR(spec);
        Py_XDECREF(wrapper);
    }
    Py_DECREF(loader);
    return spec;
}

static PyMethodDef Finder_methods[] = {
    {"find_spec", (PyCFunction)(void (*)(void))Finder_find_spec, METH_FASTCALL | METH_KEYWORDS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject FinderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tracetop._tracetop._ThreadingFinder",
    .tp_basicsize = sizeof(PyObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Sees the program import threading (src/ext/threadwatch.c).",
    .tp_methods = Finder_methods,
};

/* ---- the after-fork hook ---- */

/* In a forked child: session.py's hook, from its last registration. */
static PyObject *in_child(PyObject *self, PyObject *unused)
{
    (void)unused;
    if (!child_hook || (self == Py_False && child_hook_registered_again)) Py_RETURN_NONE;
    return PyObject_CallNoArgs(child_hook);
}

static PyMethodDef in_child_def = {"_after_fork_in_child", in_child, METH_NOARGS,
                                   "session.py's after-fork hook, once threading's has run."};

/* os.register_at_fork(after_in_child=hook). */
static int register_child_hook(PyObject *hook)
{
    PyObject *posix = PyImport_ImportModule("posix");
    PyObject *reg = posix ? PyObject_GetAttrString(posix, "register_at_fork") : NULL;
    PyObject *args = reg ? PyTuple_New(0) : NULL;
    PyObject *kwargs = args ? Py_BuildValue("{sO}", "after_in_child", hook) : NULL;
    PyObject *r = kwargs ? PyObject_Call(reg, args, kwargs) : NULL;
    Py_XDECREF(r);
    Py_XDECREF(kwargs);
    Py_XDECREF(args);
    Py_XDECREF(reg);
    Py_XDECREF(posix);
    return r ? 0 : -1;
}

static PyObject *after_fork_in_child(PyObject *self, PyObject *hook)
{
    (void)self;
    if (child_hook) {
        PyErr_SetString(PyExc_RuntimeError, "after_fork_in_child: a hook is registered already");
        return NULL;
    }
    if (!PyCallable_Check(hook)) {
        PyErr_SetString(PyExc_TypeError, "after_fork_in_child: the hook must be callable");
        return NULL;
    }
    PyObject *threading = tt_imported_threading();
    child_hook = Py_NewRef(hook);
    child_hook_registered_again = threading != NULL; /* its own hook is registered already */
    Py_XDECREF(threading);
    if (register_child_hook(child_hook_registered_again ? in_child_after_threading : in_child_before_threading) < 0)
        return NULL;
    if (!child_hook_registered_again) {
        PyObject *meta_path = PySys_GetObject("meta_path"); /* borrowed */
        if (!meta_path || !PyList_Check(meta_path)) {
            PyErr_SetString(PyExc_RuntimeError, "sys.meta_path is not a list");
            return NULL;
        }
        if (PyList_Insert(meta_path, 0, finder) < 0) return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef threadwatch_methods[] = {
    {"after_fork_in_child", after_fork_in_child, METH_O,
     "after_fork_in_child(hook)\n--\n\n"
     "os.register_at_fork(after_in_child=hook), after threading's own hook even when the program imports\n"
     "threading later; from then on, the threads threading starts are measured. Once per process."},
    {NULL, NULL, 0, NULL},
};

int tt_ext_add_threadwatch(PyObject *module)
{
    if (PyType_Ready(&FinderType) < 0 || PyType_Ready(&LoaderType) < 0) return -1;
    finder = PyObject_New(PyObject, &FinderType);
    in_child_before_threading = PyCFunction_NewEx(&in_child_def, Py_False, NULL);
    in_child_after_threading = PyCFunction_NewEx(&in_child_def, Py_True, NULL);
    if (!finder || !in_child_before_threading || !in_child_after_threading) return -1;
    if (tt_pyregions_own_methods(Finder_methods) < 0 || tt_pyregions_own_methods(Loader_methods) < 0) return -1;
    return PyModule_AddFunctions(module, threadwatch_methods);
}

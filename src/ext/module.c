/* module.c -- the extension module tracetop._tracetop: what the measured
 * process loads. Reading traces is tracetop._reader's (src/readext), which
 * this module neither links nor imports.
 */
#include "ext.h"

#include "pyregions.h"

/* _own_functions(module): the module functions of `module` (tracetop._reader)
 * are tracetop's own, never recorded, like this module's own functions. */
static PyObject *own_functions(PyObject *self, PyObject *module)
{
    (void)self;
    PyObject *names = PyObject_Dir(module);
    for (Py_ssize_t i = 0; names && i < PyList_GET_SIZE(names); i++) {
        PyObject *f = PyObject_GetAttr(module, PyList_GET_ITEM(names, i));
        int failed = !f;
        if (f && PyCFunction_Check(f) && PyCFunction_GET_SELF(f) == module)
            failed = tt_ptrmap_put(&tt_cfunction_regions, ((PyCFunctionObject *)f)->m_ml, TT_STACK_OWN) < 0;
        Py_XDECREF(f);
        if (failed) Py_CLEAR(names);
    }
    if (!names) return PyErr_Occurred() ? NULL : PyErr_NoMemory();
    Py_DECREF(names);
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"_own_functions", own_functions, METH_O, "_own_functions(module)\n--\n\nNever record module's functions."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "tracetop._tracetop",
    .m_doc = "tracetop's measurement: hooks, regions, the running session.",
    .m_methods = module_methods,
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__tracetop(void)
{
    /* The core keeps process-wide state (the registry, the hook), so the
     * module is created once and never unloaded. */
    PyObject *module = PyModule_Create(&module_def);
    if (!module) return NULL;
    tt_TraceError = PyErr_NewExceptionWithDoc("tracetop._tracetop.TraceError",
                                              "A measurement or a trace could not be written or read.", NULL, NULL);
    if (!tt_TraceError || tt_module_add(module, "TraceError", tt_TraceError) < 0 ||
        PyModule_AddStringConstant(module, "__version__", TRACETOP_VERSION) < 0 || tt_pyregions_init(module) < 0 ||
        tt_ext_add_hooks(module) < 0 || tt_ext_add_api(module) < 0 || tt_ext_add_inline(module) < 0 ||
        tt_ext_add_fork(module) < 0 || tt_ext_add_terminate(module) < 0 || tt_ext_add_last_thread(module) < 0 ||
        tt_ext_add_mpi(module) < 0 || tt_ext_add_attach(module) < 0 || tt_ext_add_objects(module) < 0 ||
        tt_ext_add_gc(module) < 0 || tt_ext_add_threadwatch(module) < 0 || tt_ext_add_task_recording(module) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}

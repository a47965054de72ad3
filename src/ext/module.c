/* module.c -- the extension module tracetop._tracetop. */
#include "ext.h"

PyObject *tt_TraceError;

PyObject *tt_raise(const tt_error *err)
{
    PyErr_SetString(tt_TraceError, err->message);
    return NULL;
}

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "tracetop._tracetop",
    .m_doc = "tracetop's measurement core and trace reader.",
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
        PyModule_AddStringConstant(module, "__version__", TRACETOP_VERSION) < 0 ||
        tt_pyregions_init(module) < 0 || tt_ext_add_hooks(module) < 0 || tt_ext_add_api(module) < 0 ||
        tt_ext_add_reader(module) < 0 || tt_ext_add_inline(module) < 0 ||
        tt_ext_add_convert(module) < 0 ||
        tt_ext_add_live(module) < 0 || tt_ext_add_livewatch(module) < 0 ||
        tt_ext_add_index(module) < 0 || tt_ext_add_mpi_view(module) < 0 ||
        tt_ext_add_fork(module) < 0 || tt_ext_add_terminate(module) < 0 ||
        tt_ext_add_mpi(module) < 0 || tt_ext_add_attach(module) < 0 || tt_ext_add_objects(module) < 0 ||
        tt_ext_add_gc(module) < 0 || tt_ext_add_threadwatch(module) < 0 || tt_ext_add_tasks(module) < 0 ||
        tt_ext_add_task_recording(module) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}

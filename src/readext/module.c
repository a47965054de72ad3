/* module.c -- the extension module tracetop._reader (readext.h).
 *
 * Its failures are tracetop._tracetop.TraceError, the same class object; and
 * its module functions are tracetop's own (_tracetop._own_functions), so that
 * a measurement running in the same process never records them.
 */
#include "readext.h"

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "tracetop._reader",
    .m_doc = "tracetop's trace reader: traces, their analyses, the viewer's index, conversions, live channels.",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__reader(void)
{
    PyObject *recording = PyImport_ImportModule("tracetop._tracetop");
    if (!recording) return NULL;
    PyObject *module = PyModule_Create(&module_def);
    tt_TraceError = PyObject_GetAttrString(recording, "TraceError");
    if (!module || !tt_TraceError || tt_module_add(module, "TraceError", tt_TraceError) < 0 ||
        tt_readext_add_reader(module) < 0 || tt_readext_add_overview(module) < 0 || tt_readext_add_tasks(module) < 0 ||
        tt_readext_add_convert(module) < 0 || tt_readext_add_index(module) < 0 || tt_readext_add_mpi_view(module) < 0 ||
        tt_readext_add_live(module) < 0 || tt_readext_add_livewatch(module) < 0) {
        Py_XDECREF(module);
        Py_DECREF(recording);
        return NULL;
    }
    PyObject *done = PyObject_CallMethod(recording, "_own_functions", "O", module);
    Py_DECREF(recording);
    if (!done) {
        Py_DECREF(module);
        return NULL;
    }
    Py_DECREF(done);
    return module;
}

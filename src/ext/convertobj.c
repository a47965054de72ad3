/* convertobj.c -- the converters for Python: convert() and the formats
 * (export.h). The conversion runs without the GIL. */
#include "ext.h"

#include "export.h"
#include "reader.h"

static PyObject *text(const char *s) { return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace"); }

static PyObject *convert(PyObject *module, PyObject *args, PyObject *kwds)
{
    (void)module;
    static char *kwlist[] = {"experiment_dir", "format", "path", NULL};
    PyObject *dir, *path;
    const char *format;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&sO&:convert", kwlist, PyUnicode_FSConverter, &dir, &format,
                                     PyUnicode_FSConverter, &path))
        return NULL;
    tt_trace *trace = NULL;
    tt_export_result result;
    tt_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tt_trace_open(PyBytes_AS_STRING(dir), &trace, &err);
    if (rc == 0) rc = tt_export(trace, format, PyBytes_AS_STRING(path), &result, &err);
    tt_trace_close(trace);
    Py_END_ALLOW_THREADS
    Py_DECREF(dir);
    Py_DECREF(path);
    if (rc != 0) return tt_raise(&err);
    PyObject *problems = PyList_New((Py_ssize_t)result.problem_count);
    for (size_t i = 0; problems && i < result.problem_count; i++) {
        PyObject *line = text(result.problems[i]);
        if (!line) Py_CLEAR(problems);
        else PyList_SET_ITEM(problems, (Py_ssize_t)i, line);
    }
    PyObject *out = Py_BuildValue("{s:K,s:K,s:N,s:N}", "events", (unsigned long long)result.events, "bytes",
                                  (unsigned long long)result.bytes, "problems", problems, "corrupt",
                                  PyBool_FromLong(result.corrupt));
    tt_export_result_free(&result);
    return out;
}

static PyObject *default_name(PyObject *module, PyObject *format)
{
    (void)module;
    const char *name = PyUnicode_Check(format) ? tt_export_default_name(PyUnicode_AsUTF8(format)) : NULL;
    if (!name) {
        if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "unknown format %R", format);
        return NULL;
    }
    return PyUnicode_FromString(name);
}

static PyMethodDef convert_methods[] = {
    {"convert", (PyCFunction)(void (*)(void))convert, METH_VARARGS | METH_KEYWORDS,
     "convert(experiment_dir, format, path)\n--\n\n"
     "Converts the experiment's trace to `format` (one of FORMATS) at `path`; returns\n"
     "{events, bytes, problems, corrupt}: what was read and written, and what the\n"
     "reader found cut or damaged."},
    {"default_name", default_name, METH_O,
     "default_name(format)\n--\n\nThe file name of `format` in an experiment directory."},
    {NULL, NULL, 0, NULL},
};

int tt_ext_add_convert(PyObject *module)
{
    size_t n = 0;
    while (tt_export_format(n)) n++;
    PyObject *formats = PyTuple_New((Py_ssize_t)n);
    for (size_t i = 0; formats && i < n; i++) {
        PyObject *name = PyUnicode_FromString(tt_export_format(i));
        if (!name) Py_CLEAR(formats);
        else PyTuple_SET_ITEM(formats, (Py_ssize_t)i, name);
    }
    int rc = formats ? tt_module_add(module, "FORMATS", formats) : -1;
    Py_XDECREF(formats);
    return rc < 0 ? -1 : PyModule_AddFunctions(module, convert_methods);
}

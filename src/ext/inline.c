/* inline.c -- the CPU and memory sampler (usage.h) behind the chart under a
 * measured Jupyter cell: usage_start() and usage_stop(). Module functions, so
 * that the hooks know them as tracetop's own and never record them.
 */
#include "ext.h"

#include "usage.h"

/* One sampler at a time: a process measures one cell at a time. */
static tt_usage *sampler;

static PyObject *usage_start(PyObject *module, PyObject *arg)
{
    (void)module;
    double interval = PyFloat_AsDouble(arg);
    if (interval == -1.0 && PyErr_Occurred()) return NULL;
    if (!(interval > 0)) return PyErr_Format(PyExc_ValueError, "the sampling interval must be positive");
    if (sampler) {
        PyErr_SetString(tt_TraceError, "the usage sampler is already running");
        return NULL;
    }
    tt_error err;
    if (tt_usage_start((uint64_t)(interval * 1e9), &sampler, &err) != 0) return tt_raise(&err);
    Py_RETURN_NONE;
}

static PyObject *usage_stop(PyObject *module, PyObject *unused)
{
    (void)module, (void)unused;
    if (!sampler) {
        PyErr_SetString(tt_TraceError, "the usage sampler is not running");
        return NULL;
    }
    tt_usage_sample *samples;
    size_t count;
    Py_BEGIN_ALLOW_THREADS
    tt_usage_stop(sampler, &samples, &count);
    Py_END_ALLOW_THREADS
    sampler = NULL;
    PyObject *list = PyList_New((Py_ssize_t)count);
    for (size_t i = 0; list && i < count; i++) {
        PyObject *item = Py_BuildValue("(ddK)", samples[i].time_ns / 1e9, samples[i].cpu_ns / 1e9,
                                       (unsigned long long)samples[i].rss_bytes);
        if (!item)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    free(samples);
    return list;
}

static PyMethodDef inline_methods[] = {
    {"usage_start", usage_start, METH_O,
     "usage_start(interval)\n--\n\nStart sampling this process's CPU time and resident memory every\n"
     "`interval` seconds, in a thread of its own."},
    {"usage_stop", usage_stop, METH_NOARGS,
     "usage_stop()\n--\n\nStop the sampler: [(seconds since usage_start, CPU seconds of the process,\n"
     "resident bytes)], the last sample taken now."},
    {NULL, NULL, 0, NULL},
};

int tt_ext_add_inline(PyObject *module) { return PyModule_AddFunctions(module, inline_methods); }

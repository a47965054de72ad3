/* inline.c -- what the result shown under a measured Jupyter cell needs from
 * C: overview() (overview.h: the compact timeline, read without the GIL) and
 * the CPU and memory sampler (usage.h). Module functions, so that the hooks
 * know them as tracetop's own and never record them.
 */
#include "ext.h"

#include "overview.h"
#include "usage.h"

static PyObject *text(const char *s) { return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace"); }

/* The runs of equal cells of one row: [(first column, last column, region name), ...]. */
static PyObject *row_runs(const tt_process *p, const uint32_t *cells, size_t width)
{
    PyObject *runs = PyList_New(0);
    for (size_t c = 0; runs && c < width;) {
        size_t first = c;
        while (c < width && cells[c] == cells[first]) c++;
        if (cells[first] == TT_OVERVIEW_EMPTY) continue;
        /* region ids past the table are the "<undefined>" placeholder (reader.h) */
        uint32_t region = cells[first] < p->region_count ? cells[first] : (uint32_t)p->region_count;
        PyObject *run = Py_BuildValue("(nnN)", (Py_ssize_t)first, (Py_ssize_t)(c - 1), text(p->regions[region].name));
        if (!run || PyList_Append(runs, run) < 0) Py_CLEAR(runs);
        Py_XDECREF(run);
    }
    return runs;
}

static PyObject *lane_dict(const tt_overview *o, const tt_overview_lane *lane)
{
    const tt_process *p = tt_trace_process(o->trace, lane->process);
    PyObject *rows = PyList_New((Py_ssize_t)o->depth);
    for (size_t level = 0; rows && level < o->depth; level++) {
        PyObject *runs = row_runs(p, lane->cells + level * o->width, o->width);
        if (!runs) Py_CLEAR(rows);
        else PyList_SET_ITEM(rows, (Py_ssize_t)level, runs);
    }
    if (!rows) return NULL;
    return Py_BuildValue("{s:K,s:n,s:N,s:N}", "pid", (unsigned long long)p->pid, "stream", (Py_ssize_t)lane->stream,
                         "thread", text(p->threads[lane->stream].name), "rows", rows);
}

static PyObject *overview(PyObject *module, PyObject *args, PyObject *kwds)
{
    (void)module;
    static char *kwlist[] = {"experiment_dir", "begin_ns", "end_ns", "width", "depth", NULL};
    PyObject *path;
    unsigned long long begin, end;
    Py_ssize_t width = 600, depth = 6;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&KK|nn:overview", kwlist, PyUnicode_FSConverter, &path, &begin,
                                     &end, &width, &depth))
        return NULL;
    if (width <= 0 || depth <= 0 || end <= begin) {
        Py_DECREF(path);
        return PyErr_Format(PyExc_ValueError, "overview needs begin_ns < end_ns and positive width and depth");
    }
    tt_trace *trace = NULL;
    tt_overview *o = NULL;
    tt_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tt_trace_open(PyBytes_AS_STRING(path), &trace, &err);
    if (rc == 0) rc = tt_overview_build(trace, begin, end, (size_t)width, (size_t)depth, &o, &err);
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    PyObject *lanes = rc == 0 ? PyList_New((Py_ssize_t)o->lane_count) : tt_raise(&err);
    for (size_t i = 0; lanes && i < o->lane_count; i++) {
        PyObject *lane = lane_dict(o, &o->lanes[i]);
        if (!lane) Py_CLEAR(lanes);
        else PyList_SET_ITEM(lanes, (Py_ssize_t)i, lane);
    }
    tt_overview_free(o);
    if (trace) tt_trace_close(trace);
    return lanes;
}

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
        if (!item) Py_CLEAR(list);
        else PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    free(samples);
    return list;
}

static PyMethodDef inline_methods[] = {
    {"overview", (PyCFunction)(void (*)(void))overview, METH_VARARGS | METH_KEYWORDS,
     "overview(experiment_dir, begin_ns, end_ns, width=600, depth=6)\n--\n\n"
     "The compact timeline of [begin_ns, end_ns) in `width` columns: one dict per\n"
     "thread (pid, stream, thread, rows), rows[level] listing (first column, last\n"
     "column, region name) for the `depth` outermost stack levels."},
    {"usage_start", usage_start, METH_O,
     "usage_start(interval)\n--\n\nStart sampling this process's CPU time and resident memory every\n"
     "`interval` seconds, in a thread of its own."},
    {"usage_stop", usage_stop, METH_NOARGS,
     "usage_stop()\n--\n\nStop the sampler: [(seconds since usage_start, CPU seconds of the process,\n"
     "resident bytes)], the last sample taken now."},
    {NULL, NULL, 0, NULL},
};

int tt_ext_add_inline(PyObject *module) { return PyModule_AddFunctions(module, inline_methods); }

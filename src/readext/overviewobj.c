/* overviewobj.c -- overview() (overview.h): the compact timeline drawn under a
 * measured Jupyter cell, read from the experiment without the GIL.
 */
#include "readext.h"

#include "overview.h"

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
        PyObject *run = Py_BuildValue("(nnN)", (Py_ssize_t)first, (Py_ssize_t)(c - 1),
                                      tt_readext_text(p->regions[region].name));
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
        if (!runs)
            Py_CLEAR(rows);
        else
            PyList_SET_ITEM(rows, (Py_ssize_t)level, runs);
    }
    if (!rows) return NULL;
    return Py_BuildValue("{s:K,s:n,s:N,s:N}", "pid", (unsigned long long)p->pid, "stream", (Py_ssize_t)lane->stream,
                         "thread", tt_readext_text(p->threads[lane->stream].name), "rows", rows);
}

static PyObject *overview(PyObject *module, PyObject *args, PyObject *kwds)
{
    (void)module;
    static char *kwlist[] = {"experiment_dir", "begin_ns", "end_ns", "width", "depth", NULL};
    PyObject *path;
    unsigned long long begin, end;
    Py_ssize_t width = 600, depth = 6;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&KK|nn:overview", kwlist, PyUnicode_FSConverter, &path, &begin, &end,
                                     &width, &depth))
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
        if (!lane)
            Py_CLEAR(lanes);
        else
            PyList_SET_ITEM(lanes, (Py_ssize_t)i, lane);
    }
    tt_overview_free(o);
    if (trace) tt_trace_close(trace);
    return lanes;
}

static PyMethodDef overview_methods[] = {
    {"overview", (PyCFunction)(void (*)(void))overview, METH_VARARGS | METH_KEYWORDS,
     "overview(experiment_dir, begin_ns, end_ns, width=600, depth=6)\n--\n\n"
     "The compact timeline of [begin_ns, end_ns) in `width` columns: one dict per\n"
     "thread (pid, stream, thread, rows), rows[level] listing (first column, last\n"
     "column, region name) for the `depth` outermost stack levels."},
    {NULL, NULL, 0, NULL},
};

int tt_readext_add_overview(PyObject *module) { return PyModule_AddFunctions(module, overview_methods); }

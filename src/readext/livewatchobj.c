/* livewatchobj.c -- tracetop._tracetop.LiveWatch: live processes read for
 * the viewer (`tracetop view --live`), through top's own watch (watch.h),
 * aggregation (agg.h) and rows (view.h), so that the page shows the numbers
 * `tracetop top` shows.
 *
 * read() takes what the channels sent (without the GIL); frame() says what
 * is new since the last frame: the processes and their threads' stacks now
 * (a thread that ended until ended_ns after its last record, then no more:
 * a program that starts a thread per request makes thousands), the
 * functions named since, top's rows, top's objects (view.h: the types of
 * objects counted with --objects), and the calls that returned
 * and the counter and parameter samples, each kept by a sink (agg.h) per
 * process, bounded. Times are CLOCK_MONOTONIC nanoseconds. One thread uses
 * a LiveWatch at a time.
 */
#include "readext.h"

#include "agg.h"
#include "clock.h"
#include "view.h"
#include "watch.h"

#define SCAN_NS 100000000ull    /* new processes are looked for ten times a second */
#define READ_BUDGET (64u << 20) /* bytes read from one channel at a call */
#define ROWS_MAX 200

typedef struct {
    PyObject_HEAD
    tt_watch watch;
    tt_view view;
    tt_objview objects;
    tt_agg_sink **sinks; /* by the watch's index */
    size_t sink_count;
    uint64_t min_ns;
    uint64_t ended_ns; /* how long a thread that ended is listed; 0: always */
    size_t limit;
    uint64_t next_scan;
    size_t functions_sent;
    int ready;
} LiveWatchObject;

static void livewatch_dealloc(LiveWatchObject *self)
{
    if (self->ready) {
        tt_view_free(&self->view);
        tt_objview_free(&self->objects);
        tt_watch_free(&self->watch);
    }
    for (size_t i = 0; i < self->sink_count; i++) {
        tt_agg_sink_free(self->sinks[i]);
        free(self->sinks[i]);
    }
    free(self->sinks);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int livewatch_init(LiveWatchObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"pids", "min_ns", "limit", "ended_ns", NULL};
    PyObject *pids = NULL;
    unsigned long long min_ns = 1000000, ended_ns = 0;
    Py_ssize_t limit = 20000;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OKnK:LiveWatch", kwlist, &pids, &min_ns, &limit, &ended_ns))
        return -1;
    if (self->ready) {
        PyErr_SetString(PyExc_RuntimeError, "LiveWatch is made once");
        return -1;
    }
    if (limit < 1) {
        PyErr_SetString(PyExc_ValueError, "limit must be positive");
        return -1;
    }
    pid_t *only = NULL;
    Py_ssize_t count = 0;
    if (pids && pids != Py_None) {
        PyObject *seq = PySequence_Fast(pids, "pids must be a sequence of process ids");
        if (!seq) return -1;
        count = PySequence_Fast_GET_SIZE(seq);
        only = PyMem_Calloc((size_t)count + 1, sizeof *only);
        for (Py_ssize_t i = 0; only && i < count; i++) {
            long pid = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
            if (pid <= 0 && !PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "not a process id");
            if (PyErr_Occurred()) break;
            only[i] = (pid_t)pid;
        }
        Py_DECREF(seq);
        if (!only) PyErr_NoMemory();
        if (PyErr_Occurred()) {
            PyMem_Free(only);
            return -1;
        }
    }
    int rc = tt_watch_init(&self->watch, only, (size_t)count);
    PyMem_Free(only);
    if (rc < 0) {
        PyErr_NoMemory();
        return -1;
    }
    tt_view_init(&self->view);
    self->min_ns = min_ns ? min_ns : 1;
    self->ended_ns = ended_ns;
    self->limit = (size_t)limit;
    self->ready = 1;
    return 0;
}

/* Gives every watched process a sink. -1 when out of memory. */
static int give_sinks(LiveWatchObject *self)
{
    if (self->sink_count < self->watch.count) {
        tt_agg_sink **grown = realloc(self->sinks, self->watch.count * sizeof *grown);
        if (!grown) return -1;
        self->sinks = grown;
        for (; self->sink_count < self->watch.count; self->sink_count++) {
            tt_agg_sink *k = calloc(1, sizeof *k);
            if (!k) return -1;
            k->limit = self->limit;
            k->min_ticks = UINT64_MAX; /* until the process says its clock's rate */
            self->sinks[self->sink_count] = k;
            self->watch.procs[self->sink_count]->agg.sink = k;
        }
    }
    for (size_t i = 0; i < self->watch.count; i++) {
        const tt_agg_process *a = &self->watch.procs[i]->agg;
        if (a->ticks_per_second && self->sinks[i]->min_ticks == UINT64_MAX) {
            uint64_t ticks = (uint64_t)((double)self->min_ns * (double)a->ticks_per_second / 1e9);
            self->sinks[i]->min_ticks = ticks ? ticks : 1;
        }
    }
    return 0;
}

static PyObject *livewatch_read(LiveWatchObject *self, PyObject *unused)
{
    (void)unused;
    if (!self->ready) {
        PyErr_SetString(PyExc_RuntimeError, "LiveWatch is not initialised");
        return NULL;
    }
    tt_error err;
    int rc = 0, oom = 0;
    size_t read = 0;
    Py_BEGIN_ALLOW_THREADS
    uint64_t now = tt_monotonic_ns();
    if (now >= self->next_scan) {
        rc = tt_watch_scan(&self->watch, &err);
        self->next_scan = now + SCAN_NS;
    }
    if (rc == 0) {
        oom = give_sinks(self) < 0;
        read = tt_watch_consume(&self->watch, READ_BUDGET);
        oom |= give_sinks(self) < 0; /* the rates the definitions just gave */
    }
    Py_END_ALLOW_THREADS
    if (rc < 0) return tt_raise(&err);
    if (oom) return PyErr_NoMemory();
    return PyLong_FromSize_t(read);
}

/* ticks of process p, as CLOCK_MONOTONIC nanoseconds: its clock may be the
 * TSC; `now_ticks` and `now_ns` were read together. */
static long long to_ns(const tt_watched *p, uint64_t ticks, uint64_t now_ticks, uint64_t now_ns)
{
    double tps = p->agg.ticks_per_second ? (double)p->agg.ticks_per_second : 1e9;
    return (long long)now_ns - (long long)(((double)now_ticks - (double)ticks) * 1e9 / tps);
}

static PyObject *thread_info(const tt_watched *p, const tt_agg_thread *th, uint64_t now_ticks, uint64_t now_ns)
{
    PyObject *stack = PyList_New(th->depth);
    if (!stack) return NULL;
    for (uint32_t d = 0; d < th->depth; d++) {
        const tt_agg_frame *f = &th->stack[d];
        long function = f->region < p->agg.region_count ? (long)p->agg.regions[f->region].function : -1;
        PyObject *frame = Py_BuildValue("(lL)", function, to_ns(p, f->enter, now_ticks, now_ns));
        if (!frame) {
            Py_DECREF(stack);
            return NULL;
        }
        PyList_SET_ITEM(stack, d, frame);
    }
    return Py_BuildValue("{s:I,s:s,s:O,s:N,s:K,s:L}", "stream", th->stream, "name", tt_agg_string(&p->agg, th->name),
                         "ended", th->ended ? Py_True : Py_False, "stack", stack, "events",
                         (unsigned long long)th->events, "last", to_ns(p, th->ticks, now_ticks, now_ns));
}

static PyObject *process_info(const tt_watched *p, tt_agg_sink *k, uint64_t now_ns, uint64_t ended_ns)
{
    uint64_t now_ticks = tt_watched_now(p);
    long long forgotten = ended_ns ? (long long)now_ns - (long long)ended_ns : LLONG_MIN;
    PyObject *threads = PyList_New(0), *spans = PyList_New(0), *samples = PyList_New(0);
    if (!threads || !spans || !samples) goto fail;
    for (uint32_t t = 0; t < p->agg.thread_cap; t++) {
        const tt_agg_thread *th = p->agg.threads[t];
        if (!th || !th->seen) continue;
        if (th->ended && to_ns(p, th->ticks, now_ticks, now_ns) < forgotten) continue;
        PyObject *info = thread_info(p, th, now_ticks, now_ns);
        if (!info || PyList_Append(threads, info) < 0) {
            Py_XDECREF(info);
            goto fail;
        }
        Py_DECREF(info);
    }
    for (size_t i = 0; i < k->span_count; i++) {
        const tt_agg_span *s = &k->spans[i];
        if (s->function == UINT32_MAX) continue;
        PyObject *span = Py_BuildValue("(IIILL)", s->stream, s->function, s->depth,
                                       to_ns(p, s->begin, now_ticks, now_ns), to_ns(p, s->end, now_ticks, now_ns));
        if (!span || PyList_Append(spans, span) < 0) {
            Py_XDECREF(span);
            goto fail;
        }
        Py_DECREF(span);
    }
    for (size_t i = 0; i < k->sample_count; i++) {
        const tt_agg_sample *s = &k->samples[i];
        PyObject *sample = Py_BuildValue("(IsLd)", s->stream, tt_agg_string(&p->agg, s->name),
                                         to_ns(p, s->ticks, now_ticks, now_ns), s->value);
        if (!sample || PyList_Append(samples, sample) < 0) {
            Py_XDECREF(sample);
            goto fail;
        }
        Py_DECREF(sample);
    }
    PyObject *info = Py_BuildValue(
        "{s:l,s:s,s:s,s:s,s:O,s:K,s:K,s:K,s:N,s:N,s:N}", "pid", (long)p->pid, "name", p->name, "experiment",
        p->view ? tt_live_experiment(p->view) : "", "state", tt_watched_state(p), "pending",
        p->ticket && tt_watched_running(p) ? Py_True : Py_False, "events", (unsigned long long)p->agg.events, "dropped",
        (unsigned long long)tt_watched_dropped_events(p), "lost", (unsigned long long)(k->spans_lost + k->samples_lost),
        "threads", threads, "spans", spans, "samples", samples);
    tt_agg_sink_clear(k);
    return info;

fail:
    Py_XDECREF(threads);
    Py_XDECREF(spans);
    Py_XDECREF(samples);
    return NULL;
}

static PyObject *new_functions(LiveWatchObject *self)
{
    const tt_functions *t = &self->watch.functions;
    PyObject *list = PyList_New(0);
    if (!list) return NULL;
    for (size_t i = self->functions_sent; i < t->count; i++) {
        PyObject *f = Py_BuildValue("(ssI)", t->items[i].name, t->items[i].file, t->items[i].line);
        if (!f || PyList_Append(list, f) < 0) {
            Py_XDECREF(f);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(f);
    }
    self->functions_sent = t->count;
    return list;
}

static PyObject *top_rows(LiveWatchObject *self)
{
    if (tt_view_build(&self->view, &self->watch) < 0) return PyErr_NoMemory();
    size_t n = self->view.row_count < ROWS_MAX ? self->view.row_count : ROWS_MAX;
    PyObject *rows = PyList_New((Py_ssize_t)n);
    if (!rows) return NULL;
    for (size_t i = 0; i < n; i++) {
        const tt_row *r = &self->view.rows[i];
        PyObject *row = Py_BuildValue("(IKdddd)", r->function, (unsigned long long)r->calls, r->own, r->total,
                                      r->own_percent, r->desc_percent);
        if (!row) {
            Py_DECREF(rows);
            return NULL;
        }
        PyList_SET_ITEM(rows, (Py_ssize_t)i, row);
    }
    return rows;
}

/* None while no process counts objects; else top's rows of types. */
static PyObject *object_rows(LiveWatchObject *self, uint64_t now_ns)
{
    if (tt_objview_build(&self->objects, &self->watch, now_ns) < 0) return PyErr_NoMemory();
    if (!self->objects.counting) Py_RETURN_NONE;
    size_t n = self->objects.row_count < ROWS_MAX ? self->objects.row_count : ROWS_MAX;
    PyObject *rows = PyList_New((Py_ssize_t)n);
    if (!rows) return NULL;
    for (size_t i = 0; i < n; i++) {
        const tt_objrow *r = &self->objects.rows[i];
        PyObject *row = Py_BuildValue("(sKKLdd)", r->type, (unsigned long long)r->created,
                                      (unsigned long long)r->destroyed, (long long)r->alive, r->created_rate,
                                      r->destroyed_rate);
        if (!row) {
            Py_DECREF(rows);
            return NULL;
        }
        PyList_SET_ITEM(rows, (Py_ssize_t)i, row);
    }
    return rows;
}

static PyObject *livewatch_frame(LiveWatchObject *self, PyObject *unused)
{
    (void)unused;
    if (!self->ready) {
        PyErr_SetString(PyExc_RuntimeError, "LiveWatch is not initialised");
        return NULL;
    }
    uint64_t now_ns = tt_monotonic_ns();
    PyObject *processes = PyList_New(0);
    if (!processes) return NULL;
    for (size_t i = 0; i < self->watch.count && i < self->sink_count; i++) {
        PyObject *info = process_info(self->watch.procs[i], self->sinks[i], now_ns, self->ended_ns);
        if (!info || PyList_Append(processes, info) < 0) {
            Py_XDECREF(info);
            Py_DECREF(processes);
            return NULL;
        }
        Py_DECREF(info);
    }
    /* The functions after the rows: building them may name none, but the
     * processes' stacks and spans above name only functions known now. */
    PyObject *rows = top_rows(self);
    PyObject *objects = rows ? object_rows(self, now_ns) : NULL;
    PyObject *functions = objects ? new_functions(self) : NULL;
    if (!functions) {
        Py_XDECREF(rows);
        Py_XDECREF(objects);
        Py_DECREF(processes);
        return NULL;
    }
    return Py_BuildValue("{s:K,s:N,s:N,s:N,s:N}", "now", (unsigned long long)now_ns, "processes", processes,
                         "functions", functions, "rows", rows, "objects", objects);
}

static PyObject *livewatch_scope(LiveWatchObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"pid", "stream", NULL};
    long pid = 0, stream = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|ll:scope", kwlist, &pid, &stream)) return NULL;
    if (!self->ready) {
        PyErr_SetString(PyExc_RuntimeError, "LiveWatch is not initialised");
        return NULL;
    }
    tt_view_set_scope(&self->view, pid > 0 ? pid : 0, stream);
    Py_RETURN_NONE;
}

static PyMethodDef livewatch_methods[] = {
    {"read", (PyCFunction)livewatch_read, METH_NOARGS,
     "read()\n--\n\nReads what the watched processes sent (and looks for new ones); returns the bytes read."},
    {"frame", (PyCFunction)livewatch_frame, METH_NOARGS,
     "frame()\n--\n\nWhat is new since the last frame: a dict of now (monotonic ns), processes (each with\n"
     "its threads' stacks, the calls that returned and the samples since), functions (named since, in\n"
     "order of their numbers), rows (top's, of the threads scope() chose) and objects (None while no\n"
     "process counts objects; else top's rows of types: type, created, destroyed, alive, created/s,\n"
     "destroyed/s)."},
    {"scope", (PyCFunction)(void (*)(void))livewatch_scope, METH_VARARGS | METH_KEYWORDS,
     "scope(pid=0, stream=-1)\n--\n\nWhich threads top's rows sum from the next frame on: every thread of\n"
     "every process (pid 0, the default), every thread of process pid, or its thread `stream`."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject LiveWatchType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tracetop._reader.LiveWatch",
    .tp_basicsize = sizeof(LiveWatchObject),
    .tp_dealloc = (destructor)livewatch_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "LiveWatch(pids=None, min_ns=1000000, limit=20000, ended_ns=0)\n--\n\n"
              "The live processes pids (None: every live process of this user, as they come), read as\n"
              "`tracetop top` reads them. Calls shorter than min_ns are counted, not kept as spans; at\n"
              "most limit spans and limit samples a process are kept between frames. A thread that ended\n"
              "is in the frames until its last record is ended_ns old (0: as long as its process).",
    .tp_methods = livewatch_methods,
    .tp_init = (initproc)livewatch_init,
    .tp_new = PyType_GenericNew,
};

int tt_readext_add_livewatch(PyObject *module)
{
    if (PyType_Ready(&LiveWatchType) < 0) return -1;
    return tt_module_add(module, "LiveWatch", (PyObject *)&LiveWatchType);
}

/* readerobj.c -- the trace reader for Python: Trace, profile(), summary().
 *
 * A thin layer over reader.h and profile.h: the core reads, this file only
 * turns its results into Python objects. Work that reads a whole trace
 * without making Python objects (profile, summary, count_enters) runs with
 * the GIL released, so other threads (a viewer's server) go on meanwhile.
 */
#include "readext.h"

#include <structmember.h>

#include "profile.h"
#include "tasklanes.h"
#include "reader.h"

/* Event kinds as Python sees them, by tag; interned once. */
static const char *const kind_names[] = {
    [TT_EV_ENTER] = "enter",
    [TT_EV_LEAVE] = "leave",
    [TT_EV_PARAM_INT] = "param_int",
    [TT_EV_PARAM_UINT] = "param_uint",
    [TT_EV_PARAM_STRING] = "param_string",
    [TT_EV_COUNTER] = "counter",
    [TT_EV_MARK] = "mark",
    [TT_EV_RECORDING_OFF] = "recording_off",
    [TT_EV_RECORDING_ON] = "recording_on",
    [TT_EV_STREAM_END] = "stream_end",
    [TT_EV_MPI_SEND] = "mpi_send",
    [TT_EV_MPI_RECV] = "mpi_recv",
    [TT_EV_MPI_ISEND] = "mpi_isend",
    [TT_EV_MPI_ISEND_COMPLETE] = "mpi_isend_complete",
    [TT_EV_MPI_IRECV_REQUEST] = "mpi_irecv_request",
    [TT_EV_MPI_IRECV] = "mpi_irecv",
    [TT_EV_MPI_COLLECTIVE_BEGIN] = "mpi_collective_begin",
    [TT_EV_MPI_COLLECTIVE_END] = "mpi_collective_end",
    [TT_EV_OBJECTS] = "objects",
    [TT_EV_GC] = "gc",
    [TT_EV_TASK_RESUME] = "task_resume",
};
#define KIND_COUNT (sizeof kind_names / sizeof kind_names[0])
static PyObject *kind_objects[KIND_COUNT];

static const char *const state_names[] = {
    [TT_STREAM_COMPLETE] = "complete",
    [TT_STREAM_CUT] = "cut",
    [TT_STREAM_CORRUPT] = "corrupt",
};

static const char *comm_kind_name(uint8_t kind)
{
    switch (kind) {
    case TT_COMM_WORLD:
        return "world";
    case TT_COMM_SELF:
        return "self";
    case TT_COMM_DERIVED:
        return "derived";
    default:
        return "unknown"; /* the "<undefined>" placeholder */
    }
}

/* Names in a trace are UTF-8 as the program gave them; a damaged byte must
 * not make the whole trace unreadable from Python. */
static PyObject *text_or_none(const char *s)
{
    if (s) return tt_readext_text(s);
    Py_RETURN_NONE;
}

/* ---- Trace ---- */

typedef struct {
    PyObject_HEAD
    tt_trace *trace;
    PyObject *processes; /* list of dicts, made once */
    PyObject *problems;  /* list of str: process directories left out */
} TraceObject;

/* A thread's THREAD_USAGE records as (time, cpu_ns, samples, gil_samples) tuples. */
static PyObject *usage_list(const tt_thread *th)
{
    PyObject *list = PyList_New((Py_ssize_t)th->usage_count);
    for (size_t i = 0; list && i < th->usage_count; i++) {
        const tt_thread_usage *u = &th->usage[i];
        PyObject *item = Py_BuildValue("(KKKK)", (unsigned long long)u->time, (unsigned long long)u->cpu_ns,
                                       (unsigned long long)u->samples, (unsigned long long)u->gil_samples);
        if (!item)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return list;
}

static PyObject *thread_list(const tt_process *p)
{
    PyObject *list = PyList_New(0);
    for (size_t s = 0; list && s < p->thread_count; s++) {
        const tt_thread *th = &p->threads[s];
        if (!th->present) continue;
        PyObject *item = Py_BuildValue("{s:n,s:N,s:K,s:K,s:N}", "stream", (Py_ssize_t)s, "name",
                                       tt_readext_text(th->name), "native_tid", (unsigned long long)th->native_tid,
                                       "open_at_start", (unsigned long long)th->open_at_start, "usage", usage_list(th));
        if (!item || PyList_Append(list, item) < 0) Py_CLEAR(list);
        Py_XDECREF(item);
    }
    return list;
}

static PyObject *region_list(const tt_process *p)
{
    PyObject *list = PyList_New((Py_ssize_t)p->region_count);
    for (size_t i = 0; list && i < p->region_count; i++) {
        const tt_region *r = &p->regions[i];
        PyObject *item = Py_BuildValue("{s:n,s:N,s:N,s:k,s:s}", "id", (Py_ssize_t)i, "name", tt_readext_text(r->name),
                                       "file", tt_readext_text(r->file), "line", (unsigned long)r->line, "kind",
                                       tt_readext_region_kind(r->kind));
        if (!item)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return list;
}

static PyObject *attribute_dict(const tt_process *p)
{
    PyObject *dict = PyDict_New();
    for (size_t i = 0; dict && i < p->attribute_count; i++) {
        PyObject *key = tt_readext_text(p->attributes[i].key), *value = tt_readext_text(p->attributes[i].value);
        if (!key || !value || PyDict_SetItem(dict, key, value) < 0) Py_CLEAR(dict);
        Py_XDECREF(key);
        Py_XDECREF(value);
    }
    return dict;
}

static PyObject *comm_list(const tt_process *p)
{
    PyObject *list = PyList_New((Py_ssize_t)p->comm_count);
    for (size_t i = 0; list && i < p->comm_count; i++) {
        const tt_comm *c = &p->comms[i];
        PyObject *members = c->listed ? PyList_New((Py_ssize_t)c->listed) : Py_NewRef(Py_None);
        for (size_t m = 0; members && c->listed && m < c->listed; m++) {
            PyObject *rank = PyLong_FromUnsignedLong(c->members[m]);
            if (!rank)
                Py_CLEAR(members);
            else
                PyList_SET_ITEM(members, (Py_ssize_t)m, rank);
        }
        PyObject *parent = c->parent == UINT32_MAX ? Py_NewRef(Py_None) : PyLong_FromUnsignedLong(c->parent);
        PyObject *item = Py_BuildValue("{s:s,s:N,s:K,s:K,s:N}", "kind", comm_kind_name(c->kind), "parent", parent,
                                       "seq", (unsigned long long)c->seq, "size", (unsigned long long)c->size,
                                       "members", members);
        if (!item)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return list;
}

static PyObject *task_list(const tt_process *p)
{
    PyObject *list = PyList_New((Py_ssize_t)p->task_count);
    for (size_t i = 0; list && i < p->task_count; i++) {
        PyObject *name = tt_readext_text(p->task_names[i]);
        if (!name)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, name);
    }
    return list;
}

/* [(from, to)] in ns since the epoch: when the measurement was off. */
static PyObject *gap_list(const tt_process *p)
{
    PyObject *list = PyList_New((Py_ssize_t)p->gap_count);
    for (size_t i = 0; list && i < p->gap_count; i++) {
        PyObject *gap = Py_BuildValue("(KK)", (unsigned long long)tt_process_time(p, p->gaps[i].from),
                                      (unsigned long long)tt_process_time(p, p->gaps[i].to));
        if (!gap)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, gap);
    }
    return list;
}

static PyObject *process_dict(const tt_process *p)
{
    PyObject *end_time = p->ended ? PyLong_FromUnsignedLongLong(p->end_time) : text_or_none(NULL);
    PyObject *rank = p->mpi_size ? PyLong_FromUnsignedLongLong(p->mpi_rank) : Py_NewRef(Py_None);
    return Py_BuildValue(
        "{s:K,s:K,s:N,s:N,s:K,s:K,s:K,s:N,s:N,s:N,s:N,s:N,s:N,s:K,s:N,s:N,s:N}", "pid", (unsigned long long)p->pid,
        "ppid", (unsigned long long)p->ppid, "name", tt_readext_text(p->name), "ended", PyBool_FromLong(p->ended),
        "events", (unsigned long long)p->events, "waits", (unsigned long long)p->waits, "wait_ns",
        (unsigned long long)p->wait_ns, "defs_cut", text_or_none(p->defs_cut), "end_time", end_time, "threads",
        thread_list(p), "regions", region_list(p), "attributes", attribute_dict(p), "mpi_rank", rank, "mpi_size",
        (unsigned long long)p->mpi_size, "comms", comm_list(p), "tasks", task_list(p), "gaps", gap_list(p));
}

static PyObject *Trace_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"experiment_dir", NULL};
    PyObject *path;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&:Trace", kwlist, PyUnicode_FSConverter, &path)) return NULL;
    tt_trace *trace;
    tt_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tt_trace_open(PyBytes_AS_STRING(path), &trace, &err);
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    if (rc != 0) return tt_raise(&err);

    TraceObject *self = (TraceObject *)type->tp_alloc(type, 0);
    if (!self) {
        tt_trace_close(trace);
        return NULL;
    }
    self->trace = trace;
    size_t n = tt_trace_process_count(trace);
    self->processes = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; self->processes && i < n; i++) {
        PyObject *item = process_dict(tt_trace_process(trace, i));
        if (!item)
            Py_CLEAR(self->processes);
        else
            PyList_SET_ITEM(self->processes, (Py_ssize_t)i, item);
    }
    self->problems = PyList_New((Py_ssize_t)tt_trace_problem_count(trace));
    for (size_t i = 0; self->problems && i < tt_trace_problem_count(trace); i++) {
        PyObject *line = tt_readext_text(tt_trace_problem(trace, i, NULL));
        if (!line)
            Py_CLEAR(self->problems);
        else
            PyList_SET_ITEM(self->problems, (Py_ssize_t)i, line);
    }
    if (!self->processes || !self->problems) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

/* The lists are the caller's to change, and so to make cycles with. */
static int Trace_traverse(TraceObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->processes);
    Py_VISIT(self->problems);
    return 0;
}

static int Trace_clear(TraceObject *self)
{
    Py_CLEAR(self->processes);
    Py_CLEAR(self->problems);
    return 0;
}

static void Trace_dealloc(TraceObject *self)
{
    PyObject_GC_UnTrack(self);
    Trace_clear(self);
    tt_trace_close(self->trace);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The process at a Python index, or NULL with IndexError. */
static const tt_process *process_at(TraceObject *self, Py_ssize_t index)
{
    if (index < 0 || (size_t)index >= tt_trace_process_count(self->trace)) {
        PyErr_Format(PyExc_IndexError, "no process %zd in this trace", index);
        return NULL;
    }
    return tt_trace_process(self->trace, (size_t)index);
}

/* Opens a cursor on (process_index, stream) from a method's arguments. A
 * stream that is not there is an IndexError like a process that is not;
 * TraceError is for a stream that is there but cannot be read. */
static tt_cursor *open_cursor(TraceObject *self, PyObject *args, const char *format, const tt_process **p)
{
    Py_ssize_t index, stream;
    if (!PyArg_ParseTuple(args, format, &index, &stream) || !(*p = process_at(self, index))) return NULL;
    if (stream < 0 || (size_t)stream >= (*p)->thread_count || !(*p)->threads[stream].present) {
        PyErr_Format(PyExc_IndexError, "process %llu has no stream %zd", (unsigned long long)(*p)->pid, stream);
        return NULL;
    }
    tt_cursor *c;
    tt_error err;
    if (tt_cursor_open(self->trace, *p, (size_t)stream, &c, &err) != 0) {
        tt_raise(&err);
        return NULL;
    }
    return c;
}

/* Python objects for ids, made once per id in a read. */
typedef struct name_cache {
    const char *const *strings; /* NULL: look names up as regions */
    const tt_region *regions;
    size_t count;
    PyObject **objects;
} name_cache;

static PyObject *cached_name(name_cache *cache, uint32_t id)
{
    if (!cache->objects[id])
        cache->objects[id] = tt_readext_text(cache->strings ? cache->strings[id] : cache->regions[id].name);
    Py_XINCREF(cache->objects[id]);
    return cache->objects[id];
}

static void free_cache(name_cache *cache)
{
    for (size_t i = 0; cache->objects && i < cache->count; i++) Py_XDECREF(cache->objects[i]);
    PyMem_Free(cache->objects);
}

/* The tuple for one event, or NULL. */
static PyObject *event_tuple(const tt_event *ev, name_cache *regions, name_cache *strings)
{
    PyObject *items[7] = {kind_objects[ev->kind], PyLong_FromUnsignedLongLong(ev->time)};
    Py_ssize_t n = 2;
    Py_INCREF(items[0]);
    switch (ev->kind) {
    case TT_EV_MPI_SEND:
    case TT_EV_MPI_RECV:
    case TT_EV_MPI_ISEND:
    case TT_EV_MPI_IRECV:
        items[n++] = PyLong_FromUnsignedLong(ev->peer);
        items[n++] = PyLong_FromUnsignedLong(ev->tag);
        items[n++] = PyLong_FromUnsignedLong(ev->comm);
        items[n++] = PyLong_FromUnsignedLongLong(ev->bytes);
        if (ev->kind == TT_EV_MPI_ISEND || ev->kind == TT_EV_MPI_IRECV)
            items[n++] = PyLong_FromUnsignedLongLong(ev->request);
        break;
    case TT_EV_MPI_ISEND_COMPLETE:
    case TT_EV_MPI_IRECV_REQUEST:
        items[n++] = PyLong_FromUnsignedLongLong(ev->request);
        break;
    case TT_EV_MPI_COLLECTIVE_END:
        items[n++] = PyUnicode_FromString(tt_mpi_collective_name(ev->op));
        items[n++] = PyLong_FromUnsignedLong(ev->comm);
        items[n++] = ev->root == UINT32_MAX ? Py_NewRef(Py_None) : PyLong_FromUnsignedLong(ev->root);
        items[n++] = PyLong_FromUnsignedLongLong(ev->sent);
        items[n++] = PyLong_FromUnsignedLongLong(ev->received);
        break;
    case TT_EV_ENTER:
    case TT_EV_LEAVE:
        items[n++] = cached_name(regions, ev->region);
        if (ev->resumed) items[n++] = Py_NewRef(Py_True); /* a call going on after a gap (reader.h) */
        break;
    case TT_EV_OBJECTS:
        items[n++] = ev->region == UINT32_MAX ? Py_NewRef(Py_None) : cached_name(regions, ev->region);
        items[n++] = cached_name(strings, ev->name);
        items[n++] = PyLong_FromUnsignedLongLong(ev->bytes);
        items[n++] = PyLong_FromUnsignedLongLong(ev->created);
        items[n++] = PyLong_FromUnsignedLongLong(ev->destroyed);
        break;
    case TT_EV_GC:
        items[n++] = PyLong_FromLong(ev->generation);
        items[n++] = PyLong_FromUnsignedLongLong(ev->collected);
        items[n++] = PyLong_FromUnsignedLongLong(ev->uncollectable);
        items[n++] = PyLong_FromUnsignedLongLong(ev->duration_ns);
        break;
    case TT_EV_MARK:
        items[n++] = cached_name(strings, ev->name);
        break;
    case TT_EV_TASK_RESUME: /* the task's id: the process's "tasks" names it */
        items[n++] = PyLong_FromUnsignedLong(ev->task);
        break;
    case TT_EV_PARAM_INT:
    case TT_EV_PARAM_UINT:
    case TT_EV_PARAM_STRING:
    case TT_EV_COUNTER:
        items[n++] = cached_name(strings, ev->name);
        items[n++] = ev->kind == TT_EV_PARAM_INT    ? PyLong_FromLongLong(ev->int_value)
                     : ev->kind == TT_EV_PARAM_UINT ? PyLong_FromUnsignedLongLong(ev->uint_value)
                     : ev->kind == TT_EV_PARAM_STRING
                         ? PyUnicode_DecodeUTF8(ev->str, (Py_ssize_t)ev->str_len, "replace")
                         : PyFloat_FromDouble(ev->double_value);
        break;
    }
    PyObject *tuple = NULL;
    int complete = 1;
    for (Py_ssize_t i = 0; i < n; i++) complete &= items[i] != NULL;
    if (complete && (tuple = PyTuple_New(n)))
        for (Py_ssize_t i = 0; i < n; i++) PyTuple_SET_ITEM(tuple, i, items[i]);
    else
        for (Py_ssize_t i = 0; i < n; i++) Py_XDECREF(items[i]);
    return tuple;
}

static PyObject *Trace_read_stream(TraceObject *self, PyObject *args)
{
    const tt_process *p;
    tt_cursor *c = open_cursor(self, args, "nn:read_stream", &p);
    if (!c) return NULL;
    /* +1: the "<undefined>" placeholders (reader.h). */
    name_cache regions = {.regions = p->regions, .count = p->region_count + 1};
    name_cache strings = {.strings = p->strings, .count = p->string_count + 1};
    regions.objects = PyMem_Calloc(regions.count, sizeof *regions.objects);
    strings.objects = PyMem_Calloc(strings.count, sizeof *strings.objects);
    PyObject *events = regions.objects && strings.objects ? PyList_New(0) : PyErr_NoMemory();
    tt_event ev;
    while (events && tt_cursor_next(c, &ev)) {
        PyObject *item = event_tuple(&ev, &regions, &strings);
        if (!item || PyList_Append(events, item) < 0) Py_CLEAR(events);
        Py_XDECREF(item);
    }
    PyObject *result = NULL;
    if (events) {
        tt_stream_state state = tt_cursor_state(c);
        result = Py_BuildValue("(NsN)", events, state_names[state], text_or_none(tt_cursor_problem(c)));
    }
    free_cache(&regions);
    free_cache(&strings);
    tt_cursor_close(c);
    return result;
}

static PyObject *Trace_count_enters(TraceObject *self, PyObject *args)
{
    const tt_process *p;
    tt_cursor *c = open_cursor(self, args, "nn:count_enters", &p);
    if (!c) return NULL;
    size_t count = p->region_count + 1; /* and the placeholder */
    uint64_t *enters = PyMem_RawCalloc(count, sizeof *enters);
    if (!enters) {
        tt_cursor_close(c);
        return PyErr_NoMemory();
    }
    tt_event ev;
    Py_BEGIN_ALLOW_THREADS
    while (tt_cursor_next(c, &ev))
        if (ev.kind == TT_EV_ENTER && !ev.resumed) enters[ev.region]++;
    Py_END_ALLOW_THREADS
    tt_cursor_close(c);

    /* By name: distinct regions may share one (two lambdas of a module). */
    PyObject *dict = PyDict_New();
    for (size_t i = 0; dict && i < count; i++) {
        if (!enters[i]) continue;
        PyObject *name = tt_readext_text(p->regions[i].name), *sum = NULL;
        PyObject *before = name ? PyDict_GetItemWithError(dict, name) : NULL;
        if (name && !PyErr_Occurred()) {
            unsigned long long earlier = before ? PyLong_AsUnsignedLongLong(before) : 0;
            sum = PyLong_FromUnsignedLongLong(earlier + enters[i]);
        }
        if (!sum || PyDict_SetItem(dict, name, sum) < 0) Py_CLEAR(dict);
        Py_XDECREF(name);
        Py_XDECREF(sum);
    }
    PyMem_RawFree(enters);
    return dict;
}

static PyObject *Trace_record_bytes(TraceObject *self, PyObject *args)
{
    Py_ssize_t index, stream;
    unsigned long long from = 0, until = UINT64_MAX;
    const tt_process *p;
    if (!PyArg_ParseTuple(args, "nn|KK:record_bytes", &index, &stream, &from, &until) || !(p = process_at(self, index)))
        return NULL;
    uint64_t bytes;
    Py_BEGIN_ALLOW_THREADS
    bytes = stream < 0 ? 0 : tt_stream_record_bytes(p, (size_t)stream, from, until);
    Py_END_ALLOW_THREADS
    return PyLong_FromUnsignedLongLong(bytes);
}

static PyMethodDef Trace_methods[] = {
    {"read_stream", (PyCFunction)Trace_read_stream, METH_VARARGS,
     "read_stream(process_index, stream)\n--\n\n"
     "All events of one stream as tuples, with the stream's state and problem:\n"
     "(events, 'complete'|'cut'|'corrupt', problem or None). Times are ns since the\n"
     "experiment's epoch. A call open across a gap in the measurement is left at its\n"
     "start and entered again at its end: ('enter', time, name, True)."},
    {"count_enters", (PyCFunction)Trace_count_enters, METH_VARARGS,
     "count_enters(process_index, stream)\n--\n\n"
     "{region name: number of calls entered} of one stream, read without building\n"
     "a list of events (the ENTERs that resume a call after a gap not counted)."},
    {"record_bytes", (PyCFunction)Trace_record_bytes, METH_VARARGS,
     "record_bytes(process_index, stream, from=0, until=2**64-1)\n--\n\n"
     "The bytes of one stream's records made in [from, until) (ns since the\n"
     "experiment's epoch) as decoded (compressed chunks at their raw size; the\n"
     "call tree not counted), from its chunk headers, each chunk's in the share of\n"
     "its span the range holds; 0 without a file."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef Trace_members[] = {
    {"processes", T_OBJECT, offsetof(TraceObject, processes), READONLY,
     "the processes, by start time: dicts of their definitions"},
    {"problems", T_OBJECT, offsetof(TraceObject, problems), READONLY,
     "one line per process directory that could not be read"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject TraceType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tracetop._reader.Trace",
    .tp_basicsize = sizeof(TraceObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Trace(experiment_dir)\n--\n\n"
              "The native trace of an experiment: its processes' definitions, and\n"
              "their streams of events read on demand.",
    .tp_new = Trace_new,
    .tp_dealloc = (destructor)Trace_dealloc,
    .tp_traverse = (traverseproc)Trace_traverse,
    .tp_clear = (inquiry)Trace_clear,
    .tp_methods = Trace_methods,
    .tp_members = Trace_members,
};

/* ---- profile() and summary() ---- */

/* Which processes a profile covers: all, or the one with a pid or an MPI rank. */
typedef struct process_choice {
    PyObject *pid, *rank; /* None or an int; at most one of them an int */
} process_choice;

/* The index of the chosen process, SIZE_MAX for all; -1 with TraceError
 * when there is no such process. */
static int choose_process(const tt_trace *t, const char *path, const process_choice *choice, size_t *index)
{
    *index = SIZE_MAX;
    int by_pid = choice->pid != Py_None;
    PyObject *wanted = by_pid ? choice->pid : choice->rank;
    if (wanted == Py_None) return 0;
    unsigned long long value = PyLong_AsUnsignedLongLong(wanted);
    if (value == (unsigned long long)-1 && PyErr_Occurred()) return -1;
    for (size_t i = 0; i < tt_trace_process_count(t); i++) {
        const tt_process *p = tt_trace_process(t, i);
        if (by_pid ? p->pid == value : p->mpi_size && p->mpi_rank == value) {
            *index = i;
            return 0;
        }
    }
    PyErr_Format(tt_TraceError, "%s has no %s %llu", path, by_pid ? "process" : "MPI rank", value);
    return -1;
}

/* Opens the experiment at `path` (a bytes object from PyUnicode_FSConverter,
 * released here) and builds its profile (of the process chosen), without
 * the GIL, its records trusted when `trust_records` (tt_trace_trust_records); and renders the text when `text_top` is
 * not 0: the summary's asyncio tasks too (tasklanes.h, made in the same read), when the trace has some. 0, or -1 with
 * TraceError or MemoryError. */
static int build_profile(PyObject *path, const process_choice *choice, int trust_records, tt_trace **trace,
                         tt_profile **prof, size_t text_top, char **text_out, char **tasks_out)
{
    tt_tasks *tasks = NULL;
    tt_error err;
    int rc;
    size_t process = SIZE_MAX;
    *trace = NULL;
    *prof = NULL;
    Py_BEGIN_ALLOW_THREADS
    rc = tt_trace_open(PyBytes_AS_STRING(path), trace, &err);
    Py_END_ALLOW_THREADS
    if (rc == 0 && choose_process(*trace, PyBytes_AS_STRING(path), choice, &process) != 0) {
        tt_trace_close(*trace);
        Py_DECREF(path);
        return -1;
    }
    if (rc == 0 && trust_records) tt_trace_trust_records(*trace);
    Py_BEGIN_ALLOW_THREADS
    if (rc == 0)
        rc = tt_profile_build_tasks(*trace, process, prof, text_top && tt_trace_has_tasks(*trace) ? &tasks : NULL,
                                    &err);
    if (rc == 0 && text_top) {
        *text_out = tt_profile_render_text(*prof, text_top);
        *tasks_out = tasks ? tt_tasks_render_text(tasks, text_top) : strdup("");
    }
    tt_tasks_free(tasks);
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    if (rc == 0 && text_top && (!*text_out || !*tasks_out)) {
        free(*text_out);
        free(*tasks_out);
        PyErr_NoMemory();
        rc = -1;
    } else if (rc != 0) {
        tt_raise(&err);
    }
    if (rc != 0) {
        tt_profile_free(*prof);
        tt_trace_close(*trace);
    }
    return rc;
}

static PyObject *problem_list(const tt_profile *prof)
{
    PyObject *list = PyList_New((Py_ssize_t)prof->problem_count);
    for (size_t i = 0; list && i < prof->problem_count; i++) {
        PyObject *line = tt_readext_text(prof->problems[i]);
        if (!line)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, line);
    }
    return list;
}

static PyObject *profile_dict(const tt_profile *prof)
{
    PyObject *regions = PyList_New((Py_ssize_t)prof->region_count);
    for (size_t i = 0; regions && i < prof->region_count; i++) {
        const tt_profile_region *r = &prof->regions[i];
        PyObject *item = Py_BuildValue(
            "{s:N,s:N,s:k,s:s,s:K,s:K,s:K}", "name", tt_readext_text(r->name), "file", tt_readext_text(r->file), "line",
            (unsigned long)r->line, "kind", tt_readext_region_kind(r->kind), "visits", (unsigned long long)r->visits,
            "inclusive_ns", (unsigned long long)r->inclusive_ns, "exclusive_ns", (unsigned long long)r->exclusive_ns);
        if (!item)
            Py_CLEAR(regions);
        else
            PyList_SET_ITEM(regions, (Py_ssize_t)i, item);
    }
    PyObject *threads = PyList_New((Py_ssize_t)prof->thread_count);
    for (size_t i = 0; threads && i < prof->thread_count; i++) {
        const tt_profile_thread *th = &prof->threads[i];
        const tt_process *p = tt_trace_process(prof->trace, th->process);
        PyObject *item = Py_BuildValue("{s:K,s:n,s:N,s:K,s:K,s:K,s:K}", "pid", (unsigned long long)p->pid, "stream",
                                       (Py_ssize_t)th->stream, "name", tt_readext_text(p->threads[th->stream].name),
                                       "events", (unsigned long long)th->events, "begin_ns",
                                       (unsigned long long)th->begin_ns, "end_ns", (unsigned long long)th->end_ns,
                                       "records_read", (unsigned long long)th->records_read);
        if (!item)
            Py_CLEAR(threads);
        else
            PyList_SET_ITEM(threads, (Py_ssize_t)i, item);
    }
    PyObject *processes = PyList_New((Py_ssize_t)prof->process_count);
    for (size_t i = 0; processes && i < prof->process_count; i++) {
        const tt_profile_process *pp = &prof->processes[i];
        PyObject *top = pp->top_region == SIZE_MAX ? Py_NewRef(Py_None)
                                                   : tt_readext_text(prof->regions[pp->top_region].name);
        PyObject *item = Py_BuildValue(
            "{s:K,s:n,s:K,s:K,s:K,s:N}", "pid", (unsigned long long)tt_trace_process(prof->trace, pp->process)->pid,
            "threads", (Py_ssize_t)pp->threads, "events", (unsigned long long)pp->events, "begin_ns",
            (unsigned long long)pp->begin_ns, "end_ns", (unsigned long long)pp->end_ns, "top_region", top);
        if (!item)
            Py_CLEAR(processes);
        else
            PyList_SET_ITEM(processes, (Py_ssize_t)i, item);
    }
    PyObject *messages = PyList_New((Py_ssize_t)prof->message_count);
    for (size_t i = 0; messages && i < prof->message_count; i++) {
        const tt_profile_messages *m = &prof->messages[i];
        PyObject *item = Py_BuildValue("{s:k,s:k,s:K,s:K}", "sender", (unsigned long)m->sender, "receiver",
                                       (unsigned long)m->receiver, "count", (unsigned long long)m->count, "bytes",
                                       (unsigned long long)m->bytes);
        if (!item)
            Py_CLEAR(messages);
        else
            PyList_SET_ITEM(messages, (Py_ssize_t)i, item);
    }
    PyObject *collectives = PyDict_New();
    for (uint8_t op = 0; collectives && op < TT_PROFILE_COLLECTIVES; op++) {
        const tt_profile_collective *c = &prof->collectives[op];
        if (!c->calls) continue;
        PyObject *item = Py_BuildValue("{s:K,s:K,s:K}", "calls", (unsigned long long)c->calls, "sent",
                                       (unsigned long long)c->sent, "received", (unsigned long long)c->received);
        if (!item || PyDict_SetItemString(collectives, tt_mpi_collective_name(op), item) < 0) Py_CLEAR(collectives);
        Py_XDECREF(item);
    }
    PyObject *gc = PyList_New(TT_PROFILE_GC_GENERATIONS);
    for (Py_ssize_t g = 0; gc && g < TT_PROFILE_GC_GENERATIONS; g++) {
        const tt_profile_gc *c = &prof->gc[g];
        PyObject *item = Py_BuildValue("{s:K,s:K,s:K,s:K,s:K}", "collections", (unsigned long long)c->collections,
                                       "total_ns", (unsigned long long)c->total_ns, "longest_ns",
                                       (unsigned long long)c->longest_ns, "collected", (unsigned long long)c->collected,
                                       "uncollectable", (unsigned long long)c->uncollectable);
        if (!item)
            Py_CLEAR(gc);
        else
            PyList_SET_ITEM(gc, g, item);
    }
    return Py_BuildValue("{s:K,s:K,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N}", "events", (unsigned long long)prof->events,
                         "total_ns", (unsigned long long)prof->total_ns, "corrupt", PyBool_FromLong(prof->corrupt),
                         "problems", problem_list(prof), "regions", regions, "threads", threads, "processes", processes,
                         "messages", messages, "collectives", collectives, "gc", gc);
}

/* The keywords that choose a process: pid=, rank=. */
static int check_choice(const process_choice *choice)
{
    if ((choice->pid != Py_None && !PyLong_Check(choice->pid)) ||
        (choice->rank != Py_None && !PyLong_Check(choice->rank))) {
        PyErr_SetString(PyExc_TypeError, "pid and rank must be int or None");
        return -1;
    }
    if (choice->pid != Py_None && choice->rank != Py_None) {
        PyErr_SetString(PyExc_ValueError, "choose a process by pid or by rank, not both");
        return -1;
    }
    return 0;
}

static PyObject *profile(PyObject *module, PyObject *args, PyObject *kwds)
{
    (void)module;
    static char *kwlist[] = {"experiment_dir", "pid", "rank", NULL};
    PyObject *path;
    process_choice choice = {Py_None, Py_None};
    tt_trace *trace;
    tt_profile *prof;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&|$OO:profile", kwlist, PyUnicode_FSConverter, &path, &choice.pid,
                                     &choice.rank))
        return NULL;
    if (check_choice(&choice) != 0) {
        Py_DECREF(path);
        return NULL;
    }
    if (build_profile(path, &choice, 0, &trace, &prof, 0, NULL, NULL) != 0) return NULL;
    PyObject *result = profile_dict(prof);
    tt_profile_free(prof);
    tt_trace_close(trace);
    return result;
}

static PyObject *summary(PyObject *module, PyObject *args, PyObject *kwds)
{
    (void)module;
    static char *kwlist[] = {"experiment_dir", "top", "pid", "rank", "trust_records", NULL};
    PyObject *path;
    Py_ssize_t top = 25;
    process_choice choice = {Py_None, Py_None};
    int trust_records = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&|n$OOp:summary", kwlist, PyUnicode_FSConverter, &path, &top,
                                     &choice.pid, &choice.rank, &trust_records))
        return NULL;
    if (top <= 0) {
        Py_DECREF(path);
        return PyErr_Format(PyExc_ValueError, "top must be positive, not %zd", top);
    }
    if (check_choice(&choice) != 0) {
        Py_DECREF(path);
        return NULL;
    }
    tt_trace *trace;
    tt_profile *prof;
    char *rendered = NULL, *tasks = NULL;
    if (build_profile(path, &choice, trust_records, &trace, &prof, (size_t)top, &rendered, &tasks) != 0) return NULL;
    PyObject *result = Py_BuildValue("(NNN)", PyUnicode_FromFormat("%U%s", tt_readext_text(rendered), tasks),
                                     problem_list(prof), PyBool_FromLong(prof->corrupt));
    free(tasks);
    free(rendered);
    tt_profile_free(prof);
    tt_trace_close(trace);
    return result;
}

static PyMethodDef reader_methods[] = {
    {"profile", (PyCFunction)(void (*)(void))profile, METH_VARARGS | METH_KEYWORDS,
     "profile(experiment_dir, *, pid=None, rank=None)\n--\n\n"
     "The call-path profile of an experiment (of one process, by pid or MPI rank)\n"
     "as a dict: events, total_ns, corrupt, problems, regions (merged by name),\n"
     "threads (records_read: the records decoded to make each, fewer than its\n"
     "events when made from the call tree its writer kept), processes, messages\n"
     "(MPI, by world rank) and collectives."},
    {"summary", (PyCFunction)(void (*)(void))summary, METH_VARARGS | METH_KEYWORDS,
     "summary(experiment_dir, top=25, *, pid=None, rank=None, trust_records=False)\n--\n\n"
     "(text, problems, corrupt): the text summary of an experiment (of one\n"
     "process, by pid or MPI rank; what `tracetop summary` prints), the lines\n"
     "saying what was cut or damaged, and whether anything was damaged.\n"
     "trust_records: for the run that has just written the trace, its profile.txt:\n"
     "the call trees are reached without checking the records' checksums, whose\n"
     "damage a later read of the records reports."},
    {NULL, NULL, 0, NULL},
};

int tt_readext_add_reader(PyObject *module)
{
    for (size_t i = 0; i < KIND_COUNT; i++)
        if (kind_names[i] && !(kind_objects[i] = PyUnicode_InternFromString(kind_names[i]))) return -1;
    if (PyType_Ready(&TraceType) < 0 || tt_module_add(module, "Trace", (PyObject *)&TraceType) < 0) return -1;
    return PyModule_AddFunctions(module, reader_methods);
}

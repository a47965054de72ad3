/* mpiviewobj.c -- the communication of an MPI job for Python: MpiView, the
 * viewer's communication view.
 *
 * A thin layer over mpi_view.h: building reads the trace with the GIL
 * released; queries answer lists of plain rows, which the viewer's server
 * sends as JSON as they are. Rows name a call's place by the pid and
 * stream of its thread, as the viewer's lanes do.
 */
#include "readext.h"

#include "mpi_view.h"
#include "reader.h"

typedef struct {
    PyObject_HEAD
    tt_trace *trace;
    tt_mpi_view *view;
} MpiViewObject;

static const char *comm_kind_name(uint8_t kind)
{
    switch (kind) {
    case TT_COMM_WORLD:
        return "world";
    case TT_COMM_SELF:
        return "self";
    default:
        return "derived";
    }
}

static PyObject *MpiView_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"experiment_dir", NULL};
    PyObject *path;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&:MpiView", kwlist, PyUnicode_FSConverter, &path)) return NULL;
    tt_trace *trace = NULL;
    tt_mpi_view *view = NULL;
    tt_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tt_trace_open(PyBytes_AS_STRING(path), &trace, &err);
    if (rc == 0) rc = tt_mpi_view_build(trace, &view, &err);
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    if (rc != 0) {
        if (trace) tt_trace_close(trace);
        return tt_raise(&err);
    }
    MpiViewObject *self = (MpiViewObject *)type->tp_alloc(type, 0);
    if (!self) {
        tt_mpi_view_free(view);
        tt_trace_close(trace);
        return NULL;
    }
    self->trace = trace;
    self->view = view;
    return (PyObject *)self;
}

static void MpiView_dealloc(MpiViewObject *self)
{
    tt_mpi_view_free(self->view);
    if (self->trace) tt_trace_close(self->trace);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static unsigned long long pid_of(const MpiViewObject *self, tt_mpi_view_place place)
{
    return (unsigned long long)tt_trace_process(self->trace, place.process)->pid;
}

static int parse_range(PyObject *args, const char *format, unsigned long long *t0, unsigned long long *t1,
                       Py_ssize_t *limit)
{
    if (!PyArg_ParseTuple(args, format, t0, t1, limit)) return -1;
    if (*limit < 0 || *limit > 1000000) {
        PyErr_SetString(PyExc_ValueError, "limit must be 0 to 1000000");
        return -1;
    }
    return 0;
}

static PyObject *message_row(const MpiViewObject *self, const tt_mpi_view_message *m)
{
    return Py_BuildValue("(KKIIKIKIIIKK)", (unsigned long long)m->send_time, (unsigned long long)m->recv_time,
                         m->sender, m->receiver, pid_of(self, m->from), m->from.stream, pid_of(self, m->to),
                         m->to.stream, m->comm, m->tag, (unsigned long long)m->bytes, (unsigned long long)m->received);
}

/* (total, [row(index) for the indices]) */
static PyObject *rows(const MpiViewObject *self, size_t total, const uint32_t *indices, size_t count,
                      PyObject *(*row)(const MpiViewObject *, uint32_t))
{
    PyObject *list = PyList_New((Py_ssize_t)count);
    for (size_t i = 0; list && i < count; i++) {
        PyObject *o = row(self, indices[i]);
        if (!o)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, o);
    }
    return list ? Py_BuildValue("(nN)", (Py_ssize_t)total, list) : NULL;
}

static PyObject *message_at(const MpiViewObject *self, uint32_t i)
{
    return message_row(self, &self->view->messages[i]);
}

static PyObject *collective_at(const MpiViewObject *self, uint32_t i)
{
    const tt_mpi_view_collective *c = &self->view->collectives[i];
    PyObject *calls = PyList_New((Py_ssize_t)c->call_count);
    for (size_t k = 0; calls && k < c->call_count; k++) {
        const tt_mpi_view_call *call = &self->view->calls[c->first_call + k];
        PyObject *o = Py_BuildValue("(IKIKKKK)", call->rank, pid_of(self, call->place), call->place.stream,
                                    (unsigned long long)call->begin, (unsigned long long)call->end,
                                    (unsigned long long)call->sent, (unsigned long long)call->received);
        if (!o)
            Py_CLEAR(calls);
        else
            PyList_SET_ITEM(calls, (Py_ssize_t)k, o);
    }
    if (!calls) return NULL;
    PyObject *root = c->root == TT_MPI_VIEW_NONE ? Py_NewRef(Py_None) : PyLong_FromUnsignedLong(c->root);
    return root ? Py_BuildValue("(KKIsNN)", (unsigned long long)c->begin, (unsigned long long)c->end, c->comm,
                                tt_mpi_collective_name(c->op), root, calls)
                : (Py_DECREF(calls), NULL);
}

/* A query that gives indices: a buffer for `limit` of them, the query, the rows. */
static PyObject *indexed(MpiViewObject *self, PyObject *args, const char *format,
                         size_t (*query)(const tt_mpi_view *, uint64_t, uint64_t, uint32_t *, size_t),
                         PyObject *(*row)(const MpiViewObject *, uint32_t))
{
    unsigned long long t0, t1;
    Py_ssize_t limit;
    if (parse_range(args, format, &t0, &t1, &limit) != 0) return NULL;
    uint32_t *indices = PyMem_Malloc(((size_t)limit + 1) * sizeof *indices);
    if (!indices) return PyErr_NoMemory();
    size_t total;
    Py_BEGIN_ALLOW_THREADS
    total = query(self->view, t0, t1, indices, (size_t)limit);
    Py_END_ALLOW_THREADS
    PyObject *result = rows(self, total, indices, total < (size_t)limit ? total : (size_t)limit, row);
    PyMem_Free(indices);
    return result;
}

static PyObject *MpiView_lines(MpiViewObject *self, PyObject *args)
{
    return indexed(self, args, "KKn:lines", tt_mpi_view_lines, message_at);
}

static PyObject *MpiView_collectives(MpiViewObject *self, PyObject *args)
{
    return indexed(self, args, "KKn:collectives", tt_mpi_view_collectives_in, collective_at);
}

static PyObject *MpiView_matrix(MpiViewObject *self, PyObject *args)
{
    unsigned long long t0, t1;
    if (!PyArg_ParseTuple(args, "KK:matrix", &t0, &t1)) return NULL;
    tt_mpi_view_pair *pairs = NULL;
    long n;
    Py_BEGIN_ALLOW_THREADS
    n = tt_mpi_view_matrix(self->view, t0, t1, &pairs);
    Py_END_ALLOW_THREADS
    if (n < 0) return PyErr_NoMemory();
    PyObject *list = PyList_New(n);
    for (long i = 0; list && i < n; i++) {
        PyObject *o = Py_BuildValue("(IIKK)", pairs[i].sender, pairs[i].receiver, (unsigned long long)pairs[i].count,
                                    (unsigned long long)pairs[i].bytes);
        if (!o)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, i, o);
    }
    free(pairs);
    return list;
}

static PyObject *MpiView_pair(MpiViewObject *self, PyObject *args)
{
    unsigned int sender, receiver;
    unsigned long long t0, t1;
    Py_ssize_t skip, limit;
    if (!PyArg_ParseTuple(args, "IIKKnn:pair", &sender, &receiver, &t0, &t1, &skip, &limit)) return NULL;
    if (skip < 0 || limit < 0 || limit > 1000000) {
        PyErr_SetString(PyExc_ValueError, "skip must be 0 or more and limit 0 to 1000000");
        return NULL;
    }
    uint32_t *indices = PyMem_Malloc(((size_t)limit + 1) * sizeof *indices);
    if (!indices) return PyErr_NoMemory();
    size_t total;
    Py_BEGIN_ALLOW_THREADS
    total = tt_mpi_view_pair_messages(self->view, sender, receiver, t0, t1, (size_t)skip, indices, (size_t)limit);
    Py_END_ALLOW_THREADS
    size_t shown = total > (size_t)skip ? total - (size_t)skip : 0;
    PyObject *result = rows(self, total, indices, shown < (size_t)limit ? shown : (size_t)limit, message_at);
    PyMem_Free(indices);
    return result;
}

static PyObject *MpiView_comm_stats(MpiViewObject *self, PyObject *args)
{
    unsigned long long t0, t1;
    if (!PyArg_ParseTuple(args, "KK:comm_stats", &t0, &t1)) return NULL;
    size_t n = self->view->comms.count;
    tt_mpi_view_comm_stats *stats = PyMem_Malloc((n ? n : 1) * sizeof *stats);
    if (!stats) return PyErr_NoMemory();
    tt_mpi_view_comm_stats_in(self->view, t0, t1, stats);
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        const tt_mpi_view_comm_stats *s = &stats[i];
        PyObject *o = Py_BuildValue("{s:K,s:K,s:K,s:K,s:K}", "messages", (unsigned long long)s->messages, "bytes",
                                    (unsigned long long)s->bytes, "collectives", (unsigned long long)s->collectives,
                                    "collective_ns", (unsigned long long)s->collective_ns, "collective_bytes",
                                    (unsigned long long)s->collective_bytes);
        if (!o)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, o);
    }
    PyMem_Free(stats);
    return list;
}

static PyObject *MpiView_get_communicators(MpiViewObject *self, void *closure)
{
    (void)closure;
    const tt_mpi_view *v = self->view;
    PyObject *list = PyList_New((Py_ssize_t)v->comms.count);
    for (size_t i = 0; list && i < v->comms.count; i++) {
        const tt_mpi_comm *c = &v->comms.comms[i];
        PyObject *members = c->kind == TT_COMM_DERIVED && c->listed ? PyList_New((Py_ssize_t)c->listed)
                                                                    : Py_NewRef(Py_None);
        for (size_t k = 0; members && members != Py_None && k < c->listed; k++) {
            PyObject *rank = PyLong_FromUnsignedLong(c->members[k]);
            if (!rank)
                Py_CLEAR(members);
            else
                PyList_SET_ITEM(members, (Py_ssize_t)k, rank);
        }
        PyObject *parent = c->parent == TT_MPI_COMM_NONE ? Py_NewRef(Py_None) : PyLong_FromUnsignedLong(c->parent);
        PyObject *o = NULL;
        if (members && parent)
            o = Py_BuildValue("{s:s,s:K,s:N,s:K,s:N}", "kind", comm_kind_name(c->kind), "size",
                              (unsigned long long)c->size, "parent", parent, "seq", (unsigned long long)c->seq,
                              "members", members);
        else
            Py_XDECREF(members), Py_XDECREF(parent);
        if (!o)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, o);
    }
    return list;
}

static PyObject *MpiView_get_world_size(MpiViewObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromUnsignedLong(self->view->comms.world_size);
}

static PyObject *MpiView_get_ranks(MpiViewObject *self, void *closure)
{
    (void)closure;
    PyObject *list = PyList_New(0);
    for (size_t i = 0; list && i < tt_trace_process_count(self->trace); i++) {
        const tt_process *p = tt_trace_process(self->trace, i);
        if (!p->mpi_size) continue;
        PyObject *o = Py_BuildValue("(KK)", (unsigned long long)p->mpi_rank, (unsigned long long)p->pid);
        if (!o || PyList_Append(list, o) != 0) Py_CLEAR(list);
        Py_XDECREF(o);
    }
    return list;
}

static PyObject *MpiView_get_counts(MpiViewObject *self, void *closure)
{
    (void)closure;
    const tt_mpi_view *v = self->view;
    return Py_BuildValue("{s:n,s:n,s:K,s:K}", "messages", (Py_ssize_t)v->message_count, "collectives",
                         (Py_ssize_t)v->collective_count, "unmatched_sends", (unsigned long long)v->unmatched_sends,
                         "unmatched_receives", (unsigned long long)v->unmatched_receives);
}

static PyGetSetDef MpiView_getset[] = {
    {"world_size", (getter)MpiView_get_world_size, NULL, "ranks in MPI_COMM_WORLD; 0 when the trace has none", NULL},
    {"communicators", (getter)MpiView_get_communicators, NULL,
     "the job's communicators: dicts (kind, size, parent, seq, members as world ranks or None)", NULL},
    {"ranks", (getter)MpiView_get_ranks, NULL, "the processes that are ranks: (world rank, pid) in trace order", NULL},
    {"counts", (getter)MpiView_get_counts, NULL,
     "messages (sent, matched or not), collective operations, sends and receives left unmatched", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

#define MESSAGE_ROW \
    "(send_ns, recv_ns, sender, receiver, send_pid, send_stream, recv_pid, recv_stream, comm, tag, bytes, received)"

static PyMethodDef MpiView_methods[] = {
    {"lines", (PyCFunction)MpiView_lines, METH_VARARGS,
     "lines(t0, t1, limit)\n--\n\n"
     "The matched messages whose line meets [t0, t1): (total, rows), at most limit rows\n"
     "spread over them, each " MESSAGE_ROW "."},
    {"collectives", (PyCFunction)MpiView_collectives, METH_VARARGS,
     "collectives(t0, t1, limit)\n--\n\n"
     "The collective operations that meet [t0, t1): (total, rows), each (begin_ns, end_ns,\n"
     "comm, operation, root, [(rank, pid, stream, begin_ns, end_ns, sent, received), ...])."},
    {"matrix", (PyCFunction)MpiView_matrix, METH_VARARGS,
     "matrix(t0, t1)\n--\n\nMessages sent in [t0, t1) per rank pair: [(sender, receiver, messages, bytes), ...]."},
    {"pair", (PyCFunction)MpiView_pair, METH_VARARGS,
     "pair(sender, receiver, t0, t1, skip, limit)\n--\n\n"
     "The messages sender sent receiver in [t0, t1), from the skip-th: (total, rows)."},
    {"comm_stats", (PyCFunction)MpiView_comm_stats, METH_VARARGS,
     "comm_stats(t0, t1)\n--\n\nPer communicator, what it carried in [t0, t1): dicts."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject MpiViewType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tracetop._reader.MpiView",
    .tp_basicsize = sizeof(MpiViewObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "MpiView(experiment_dir)\n--\n\n"
              "The communication of the experiment's MPI ranks: messages matched from send\n"
              "to receive, collective operations across their ranks (mpi_view.h).",
    .tp_new = MpiView_new,
    .tp_dealloc = (destructor)MpiView_dealloc,
    .tp_methods = MpiView_methods,
    .tp_getset = MpiView_getset,
};

int tt_readext_add_mpi_view(PyObject *module)
{
    if (PyType_Ready(&MpiViewType) < 0) return -1;
    return tt_module_add(module, "MpiView", (PyObject *)&MpiViewType);
}

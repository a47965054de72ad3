/* lodobj.c -- the viewer's level-of-detail index for Python: Index.
 *
 * A thin layer over lod.h. Opening (which may build the index) and every
 * query run with the GIL released, so that a server answers several
 * requests at once; the answers are bytes in the layouts lod.h gives, which
 * the viewer reads as typed arrays without decoding.
 */
#include "readext.h"

#include <structmember.h>

#include "format.h"
#include "grow.h"
#include "lod.h"

typedef struct {
    PyObject_HEAD
    tt_lod *lod;
    PyObject *lanes, *regions, *tracks, *problems; /* made once */
    PyObject *cache_problem;                       /* str or None */
    int built;
} IndexObject;

/* A list of n items made by item(lod, i), or NULL. */
static PyObject *make_list(const tt_lod *lod, size_t n, PyObject *(*item)(const tt_lod *, size_t))
{
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        PyObject *o = item(lod, i);
        if (!o)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, o);
    }
    return list;
}

static PyObject *lane_item(const tt_lod *lod, size_t i)
{
    tt_lod_lane_info l = tt_lod_lane(lod, i);
    return Py_BuildValue("{s:N,s:N,s:K,s:K,s:I,s:I,s:K,s:K,s:K,s:I,s:I}", "name", tt_readext_text(l.name), "process",
                         tt_readext_text(l.process), "pid", (unsigned long long)l.pid, "native_tid",
                         (unsigned long long)l.native_tid, "stream", l.stream, "depths", l.depths, "begin_ns",
                         (unsigned long long)l.begin, "end_ns", (unsigned long long)l.end, "calls",
                         (unsigned long long)l.calls, "params", l.params, "marks", l.marks);
}

static PyObject *region_item(const tt_lod *lod, size_t i)
{
    tt_lod_region_info r = tt_lod_region(lod, i);
    return Py_BuildValue("{s:N,s:N,s:I,s:s}", "name", tt_readext_text(r.name), "file", tt_readext_text(r.file), "line",
                         r.line, "kind", tt_readext_region_kind(r.kind));
}

static PyObject *track_item(const tt_lod *lod, size_t i)
{
    tt_lod_track_info t = tt_lod_track(lod, i);
    const char *kind = t.kind == TT_LOD_TRACK_COUNTER ? "counter"
                       : t.kind == TT_LOD_TRACK_PARAM ? "parameter"
                                                      : "objects";
    return Py_BuildValue("{s:N,s:I,s:s,s:K,s:d,s:d,s:I}", "name", tt_readext_text(t.name), "lane", t.lane, "kind", kind,
                         "samples", (unsigned long long)t.samples, "min", t.min, "max", t.max, "size", t.size);
}

static PyObject *problem_item(const tt_lod *lod, size_t i) { return tt_readext_text(tt_lod_problem(lod, i)); }

/* An index's build as it goes: a phase's first report is said at once (past
 * the build's first `after` seconds), so that a new phase is told when it
 * begins, then a line a second. */
typedef struct indexing {
    tt_readext_progress line;
    tt_lod_phase phase;
} indexing;

static void say_progress(void *ctx, tt_lod_phase phase, uint64_t done)
{
    indexing *x = ctx;
    if (phase != x->phase) x->line.last = 0;
    x->phase = phase;
    if (phase == TT_LOD_READING)
        tt_readext_progress_say(&x->line, "%.1f M events read", (double)done / 1e6);
    else if (phase == TT_LOD_MERGING)
        tt_readext_progress_say(&x->line, "%.1f M spans merged into coarser levels", (double)done / 1e6);
    else
        tt_readext_progress_say(&x->line, "writing the index");
}

static PyObject *Index_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"experiment_dir", "progress", NULL};
    PyObject *path, *after = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&|O:Index", kwlist, PyUnicode_FSConverter, &path, &after))
        return NULL;
    double seconds = after == Py_None ? 0 : PyFloat_AsDouble(after);
    if (seconds == -1 && PyErr_Occurred()) {
        Py_DECREF(path);
        return NULL;
    }
    char what[300];
    snprintf(what, sizeof what, "indexing %s", PyBytes_AS_STRING(path));
    indexing said = {.phase = TT_LOD_READING};
    tt_readext_progress_start(&said.line, what, seconds);
    tt_lod_progress progress = {say_progress, &said};
    tt_lod *lod;
    tt_error err;
    int rc, built = 0;
    Py_BEGIN_ALLOW_THREADS
    rc = tt_lod_open(PyBytes_AS_STRING(path), &lod, &built, after == Py_None ? NULL : &progress, &err);
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    if (rc != 0) return tt_raise(&err);
    IndexObject *self = (IndexObject *)type->tp_alloc(type, 0);
    if (!self) {
        tt_lod_close(lod);
        return NULL;
    }
    self->lod = lod;
    self->built = built;
    self->lanes = make_list(lod, tt_lod_lane_count(lod), lane_item);
    self->regions = make_list(lod, tt_lod_region_count(lod), region_item);
    self->tracks = make_list(lod, tt_lod_track_count(lod), track_item);
    self->problems = make_list(lod, tt_lod_problem_count(lod), problem_item);
    const char *cache = tt_lod_cache_problem(lod);
    self->cache_problem = cache ? tt_readext_text(cache) : Py_NewRef(Py_None);
    if (!self->lanes || !self->regions || !self->tracks || !self->problems || !self->cache_problem) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static void Index_dealloc(IndexObject *self)
{
    Py_XDECREF(self->lanes);
    Py_XDECREF(self->regions);
    Py_XDECREF(self->tracks);
    Py_XDECREF(self->problems);
    Py_XDECREF(self->cache_problem);
    tt_lod_close(self->lod);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* A sequence of non-negative ints as a malloc'd uint32_t array (NULL with an
 * exception set). An int above the range is kept as UINT32_MAX, which the
 * queries skip as out of bounds. */
static uint32_t *index_array(PyObject *seq, size_t *count, const char *what)
{
    PyObject *fast = PySequence_Fast(seq, what);
    if (!fast) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    uint32_t *out = PyMem_RawMalloc((size_t)(n ? n : 1) * sizeof *out);
    if (!out) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned long long v = PyLong_AsUnsignedLongLong(PySequence_Fast_GET_ITEM(fast, i));
        if (v == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Format(PyExc_ValueError, "%s must be non-negative whole numbers", what);
            PyMem_RawFree(out);
            Py_DECREF(fast);
            return NULL;
        }
        out[i] = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
    }
    Py_DECREF(fast);
    *count = (size_t)n;
    return out;
}

static PyObject *buffer_bytes(tt_lod_buffer *b, int rc)
{
    PyObject *result = rc == 0 ? PyBytes_FromStringAndSize((const char *)b->data, (Py_ssize_t)b->size)
                               : PyErr_NoMemory();
    tt_lod_buffer_free(b);
    return result;
}

static int parse_view(unsigned long long t0, unsigned long long t1, unsigned long width, tt_lod_view *v)
{
    if (width == 0 || width > 1u << 16 || t1 <= t0) {
        PyErr_SetString(PyExc_ValueError, "a view needs t0 < t1 and a width of 1 to 65536 pixels");
        return -1;
    }
    *v = (tt_lod_view){t0, t1, (uint32_t)width};
    return 0;
}

static PyObject *Index_spans(IndexObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"t0", "t1", "width", "lanes", "only", "limit", NULL};
    unsigned long long t0, t1;
    unsigned long width;
    Py_ssize_t limit = 0;
    PyObject *lanes_seq, *only_seq = Py_None;
    tt_lod_view v;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "KKkO|On:spans", kwlist, &t0, &t1, &width, &lanes_seq, &only_seq,
                                     &limit) ||
        parse_view(t0, t1, width, &v) != 0)
        return NULL;
    size_t lane_count, only_count = 0;
    uint32_t *lanes = index_array(lanes_seq, &lane_count, "lanes"), *only_ids = NULL;
    if (!lanes) return NULL;
    uint8_t *only = NULL;
    if (only_seq != Py_None) {
        size_t regions = tt_lod_region_count(self->lod);
        only_ids = index_array(only_seq, &only_count, "only");
        only = only_ids ? PyMem_RawCalloc(regions ? regions : 1, 1) : NULL;
        if (!only) {
            PyMem_RawFree(lanes);
            PyMem_RawFree(only_ids);
            return only_ids ? PyErr_NoMemory() : NULL;
        }
        for (size_t i = 0; i < only_count; i++)
            if (only_ids[i] < regions) only[only_ids[i]] = 1;
    }
    tt_lod_buffer b = {0};
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tt_lod_query_spans(self->lod, v, lanes, lane_count, only, limit > 0 ? (size_t)limit : 0, &b);
    Py_END_ALLOW_THREADS
    PyMem_RawFree(lanes);
    PyMem_RawFree(only_ids);
    PyMem_RawFree(only);
    return buffer_bytes(&b, rc);
}

static PyObject *Index_samples(IndexObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"t0", "t1", "width", "tracks", NULL};
    unsigned long long t0, t1;
    unsigned long width;
    PyObject *tracks_seq;
    tt_lod_view v;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "KKkO:samples", kwlist, &t0, &t1, &width, &tracks_seq) ||
        parse_view(t0, t1, width, &v) != 0)
        return NULL;
    size_t count;
    uint32_t *tracks = index_array(tracks_seq, &count, "tracks");
    if (!tracks) return NULL;
    tt_lod_buffer b = {0};
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tt_lod_query_samples(self->lod, v, tracks, count, &b);
    Py_END_ALLOW_THREADS
    PyMem_RawFree(tracks);
    return buffer_bytes(&b, rc);
}

typedef int lane_range_query(const tt_lod *x, uint64_t t0, uint64_t t1, const uint32_t *lanes, size_t lane_count,
                             tt_lod_buffer *out);

/* A query of lanes over [t0, t1) (the call tree, the objects): its
 * arguments (t0, t1, lanes) parsed by `format`, run without the GIL. */
static PyObject *lane_range(IndexObject *self, PyObject *args, PyObject *kwds, const char *format,
                            lane_range_query *query)
{
    static char *kwlist[] = {"t0", "t1", "lanes", NULL};
    unsigned long long t0, t1;
    PyObject *lanes_seq;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, format, kwlist, &t0, &t1, &lanes_seq)) return NULL;
    size_t count;
    uint32_t *lanes = index_array(lanes_seq, &count, "lanes");
    if (!lanes) return NULL;
    tt_lod_buffer b = {0};
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = query(self->lod, t0, t1, lanes, count, &b);
    Py_END_ALLOW_THREADS
    PyMem_RawFree(lanes);
    return buffer_bytes(&b, rc);
}

static PyObject *Index_tree(IndexObject *self, PyObject *args, PyObject *kwds)
{
    return lane_range(self, args, kwds, "KKO:tree", tt_lod_query_tree);
}

static PyObject *Index_objects(IndexObject *self, PyObject *args, PyObject *kwds)
{
    return lane_range(self, args, kwds, "KKO:objects", tt_lod_query_objects);
}

static PyObject *Index_tree_objects(IndexObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"t0", "t1", "lanes", "type", NULL};
    unsigned long long t0, t1;
    PyObject *lanes_seq;
    const char *type = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "KKO|z:tree_objects", kwlist, &t0, &t1, &lanes_seq, &type))
        return NULL;
    size_t count;
    uint32_t *lanes = index_array(lanes_seq, &count, "lanes");
    if (!lanes) return NULL;
    tt_lod_buffer b = {0};
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tt_lod_query_tree_objects(self->lod, t0, t1, lanes, count, type, &b);
    Py_END_ALLOW_THREADS
    PyMem_RawFree(lanes);
    return buffer_bytes(&b, rc);
}

static PyObject *param_dict(const tt_lod *lod, const tt_lod_param *p)
{
    PyObject *value = p->kind == TT_LOD_PARAM_STRING ? tt_readext_text(tt_lod_string(lod, p->text))
                      : p->kind == TT_LOD_PARAM_INT  ? PyLong_FromLongLong(p->value)
                                                     : PyLong_FromUnsignedLongLong((uint64_t)p->value);
    return Py_BuildValue("{s:N,s:N,s:K}", "name", tt_readext_text(tt_lod_string(lod, p->name)), "value", value,
                         "time_ns", (unsigned long long)p->time);
}

static PyObject *Index_call_at(IndexObject *self, PyObject *args)
{
    Py_ssize_t lane;
    unsigned long depth;
    unsigned long long time;
    if (!PyArg_ParseTuple(args, "nkK:call_at", &lane, &depth, &time)) return NULL;
    tt_lod_span s;
    uint64_t self_ns;
    size_t first, count;
    if (lane < 0 || depth > UINT32_MAX ||
        !tt_lod_call_at(self->lod, (size_t)lane, (uint32_t)depth, time, &s, &self_ns, &first, &count))
        Py_RETURN_NONE;
    size_t n;
    const tt_lod_param *params = tt_lod_params(self->lod, (size_t)lane, &n);
    PyObject *list = PyList_New(0);
    for (size_t i = first; list && i < first + count; i++) {
        if (params[i].depth != depth + 1) continue;
        PyObject *item = param_dict(self->lod, &params[i]);
        if (!item || PyList_Append(list, item) < 0) Py_CLEAR(list);
        Py_XDECREF(item);
    }
    if (!list) return NULL;
    return Py_BuildValue("{s:K,s:K,s:I,s:K,s:N}", "start_ns", (unsigned long long)s.start, "end_ns",
                         (unsigned long long)s.end, "region", s.region, "self_ns", (unsigned long long)self_ns,
                         "params", list);
}

static PyObject *Index_marks(IndexObject *self, PyObject *args)
{
    Py_ssize_t lane;
    if (!PyArg_ParseTuple(args, "n:marks", &lane)) return NULL;
    size_t n = 0;
    const tt_lod_mark *m = lane >= 0 ? tt_lod_marks(self->lod, (size_t)lane, &n) : NULL;
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        PyObject *item = Py_BuildValue("(KN)", (unsigned long long)m[i].time,
                                       tt_readext_text(tt_lod_string(self->lod, m[i].name)));
        if (!item)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return list;
}

static PyObject *Index_raw_spans(IndexObject *self, PyObject *args)
{
    Py_ssize_t lane;
    unsigned long depth, level;
    if (!PyArg_ParseTuple(args, "nkk:raw_spans", &lane, &depth, &level)) return NULL;
    tt_lod_cursor c;
    if (lane >= 0 && depth <= UINT32_MAX && level <= UINT32_MAX)
        tt_lod_seek(self->lod, (size_t)lane, (uint32_t)depth, (unsigned)level, 0, UINT64_MAX, &c);
    else
        tt_lod_seek(self->lod, SIZE_MAX, 0, 0, 0, 0, &c); /* reads nothing */
    tt_lod_span *spans = NULL;
    size_t n = 0, cap = 0;
    const tt_lod_span *s;
    for (; (s = tt_lod_peek(&c)); tt_lod_advance(&c)) {
        if (TT_RESERVE(spans, cap, n + 1) != 0) {
            free(spans);
            return PyErr_NoMemory();
        }
        spans[n++] = *s;
    }
    PyObject *result = PyBytes_FromStringAndSize((const char *)spans, (Py_ssize_t)(n * sizeof *spans));
    free(spans);
    return result;
}

static PyObject *Index_level_for(IndexObject *self, PyObject *args)
{
    unsigned long long t0, t1;
    unsigned long width;
    tt_lod_view v;
    if (!PyArg_ParseTuple(args, "KKk:level_for", &t0, &t1, &width) || parse_view(t0, t1, width, &v) != 0) return NULL;
    return PyLong_FromUnsignedLong(tt_lod_level_for(self->lod, v));
}

static PyObject *Index_get_begin(IndexObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromUnsignedLongLong(tt_lod_begin(self->lod));
}

static PyObject *Index_get_end(IndexObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromUnsignedLongLong(tt_lod_end(self->lod));
}

static PyObject *Index_get_levels(IndexObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromUnsignedLong(tt_lod_levels(self->lod));
}

static PyObject *Index_get_built(IndexObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(self->built);
}

static PyObject *Index_get_read_problem(IndexObject *self, void *closure)
{
    (void)closure;
    const char *problem = tt_lod_read_problem(self->lod);
    return problem ? tt_readext_text(problem) : Py_NewRef(Py_None);
}

static PyGetSetDef Index_getset[] = {
    {"begin_ns", (getter)Index_get_begin, NULL, "the earliest event, ns since the experiment's epoch", NULL},
    {"end_ns", (getter)Index_get_end, NULL, "the latest event", NULL},
    {"levels", (getter)Index_get_levels, NULL, "levels of detail (0: every call)", NULL},
    {"built", (getter)Index_get_built, NULL, "True when the index was built now, False when loaded", NULL},
    {"read_problem", (getter)Index_get_read_problem, NULL,
     "None, or why calls a query needed could not be read from the trace (changed, cut or damaged since the index\n"
     "was made): the first such problem",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef Index_members[] = {
    {"lanes", T_OBJECT, offsetof(IndexObject, lanes), READONLY, "one dict per thread stream, in process order"},
    {"regions", T_OBJECT, offsetof(IndexObject, regions), READONLY, "regions merged by name: dicts"},
    {"tracks", T_OBJECT, offsetof(IndexObject, tracks), READONLY, "counter, parameter and objects tracks: dicts"},
    {"problems", T_OBJECT, offsetof(IndexObject, problems), READONLY, "what the reader found cut or damaged"},
    {"cache_problem", T_OBJECT, offsetof(IndexObject, cache_problem), READONLY,
     "None, or why the index is not cached in the experiment"},
    {NULL, 0, 0, 0, NULL},
};

static PyMethodDef Index_methods[] = {
    {"spans", (PyCFunction)(void (*)(void))Index_spans, METH_VARARGS | METH_KEYWORDS,
     "spans(t0, t1, width, lanes, only=None, limit=0)\n--\n\n"
     "What can be seen of the lanes in [t0, t1) over width pixels, as bytes\n"
     "(layout in lod.h); with `only` (region indices), their calls alone."},
    {"samples", (PyCFunction)(void (*)(void))Index_samples, METH_VARARGS | METH_KEYWORDS,
     "samples(t0, t1, width, tracks)\n--\n\nThe tracks' samples in view, as bytes (layout in lod.h)."},
    {"tree", (PyCFunction)(void (*)(void))Index_tree, METH_VARARGS | METH_KEYWORDS,
     "tree(t0, t1, lanes)\n--\n\nThe call-path tree of the lanes in [t0, t1), merged, as bytes (lod.h)."},
    {"objects", (PyCFunction)(void (*)(void))Index_objects, METH_VARARGS | METH_KEYWORDS,
     "objects(t0, t1, lanes)\n--\n\n"
     "The objects recorded in [t0, t1) by the processes of the lanes, per creating\n"
     "region and type, as bytes (lod.h)."},
    {"tree_objects", (PyCFunction)(void (*)(void))Index_tree_objects, METH_VARARGS | METH_KEYWORDS,
     "tree_objects(t0, t1, lanes, type=None)\n--\n\n"
     "The objects of those processes (of one type, or all) per node of tree(t0, t1,\n"
     "lanes), as bytes (lod.h)."},
    {"call_at", (PyCFunction)Index_call_at, METH_VARARGS,
     "call_at(lane, depth, time)\n--\n\nThe call at that depth and time: a dict, or None."},
    {"marks", (PyCFunction)Index_marks, METH_VARARGS, "marks(lane)\n--\n\nThe lane's marks: (time, name) tuples."},
    {"raw_spans", (PyCFunction)Index_raw_spans, METH_VARARGS,
     "raw_spans(lane, depth, level)\n--\n\n"
     "The spans the index holds for one depth of a lane at one level, as bytes:\n"
     "records of u64 start, u64 end, u32 region, u32 calls."},
    {"level_for", (PyCFunction)Index_level_for, METH_VARARGS,
     "level_for(t0, t1, width)\n--\n\nThe level of detail a view reads."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject IndexType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tracetop._reader.Index",
    .tp_basicsize = sizeof(IndexObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Index(experiment_dir, progress=None)\n--\n\n"
              "The viewer's level-of-detail index of an experiment, loaded from the\n"
              "experiment (" TT_LOD_FILE ") or built and cached there. progress: a build\n"
              "that takes longer than this many seconds says how it goes on stderr.",
    .tp_new = Index_new,
    .tp_dealloc = (destructor)Index_dealloc,
    .tp_methods = Index_methods,
    .tp_members = Index_members,
    .tp_getset = Index_getset,
};

int tt_readext_add_index(PyObject *module)
{
    if (PyType_Ready(&IndexType) < 0) return -1;
    return tt_module_add(module, "Index", (PyObject *)&IndexType);
}

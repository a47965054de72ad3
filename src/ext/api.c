/* api.c -- user regions, parameters, counters and marks.
 *
 * Each entry point first checks for a running measurement, so annotated
 * code costs a C call and a compare when nothing is measured.
 *
 * Region nesting: a user region begins and ends where the program says,
 * across calls and frames (stream.h: a call that a region's begin or end
 * crosses is split there). These functions are themselves C calls that the
 * profile hook sees (as TT_STACK_OWN entries, never recorded): a region
 * begun inside one is placed beneath it, so that the call's return does not
 * split the region. `with tracetop.region(...)` enters through the Region
 * type's __enter__, which CPython calls without a hook event, and leaves
 * through __exit__, which it calls like any C method.
 */
#include "ext.h"

#include <structmember.h>

#include "clock.h"
#include "format.h"
#include "measurement.h"
#include "pyregions.h"
#include "regionfilter.h"
#include "threadstream.h"

static PyObject *region_ids;      /* full region name (str) -> region id (int) */
static PyObject *user_region_ids; /* name given to region_begin -> id of user:<name> */
static PyObject *string_ids;      /* parameter, counter and mark names -> string id */

static uint32_t cached_id(PyObject *cache, PyObject *key)
{
    PyObject *id = PyDict_GetItemWithError(cache, key);
    return id ? (uint32_t)PyLong_AsUnsignedLong(id) : TT_NO_ID;
}

static int cache_id(PyObject *cache, PyObject *key, uint32_t value)
{
    PyObject *id = PyLong_FromUnsignedLong(value);
    int rc = id ? PyDict_SetItem(cache, key, id) : -1;
    Py_XDECREF(id);
    return rc;
}

static uint32_t utf8_string_id(PyObject *str)
{
    Py_ssize_t len;
    const char *s = PyUnicode_AsUTF8AndSize(str, &len);
    return s ? tt_registry_string(&tt_definitions, s, (size_t)len) : TT_NO_ID;
}

/* The string id of a name, interned once. TT_NO_ID with an exception set
 * when name is not a str. */
static uint32_t name_id(PyObject *name)
{
    if (!PyUnicode_Check(name)) {
        PyErr_Format(PyExc_TypeError, "name must be str, not %.100s", Py_TYPE(name)->tp_name);
        return TT_NO_ID;
    }
    uint32_t id = cached_id(string_ids, name);
    if (id != TT_NO_ID || PyErr_Occurred()) return id;
    id = utf8_string_id(name);
    if (id != TT_NO_ID && cache_id(string_ids, name, id) < 0) return TT_NO_ID;
    return id;
}

/* The region recorded under `name` in `cache`; defined on first use as
 * prefix + name, with the given file and line. */
static uint32_t named_region(PyObject *cache, const char *prefix, PyObject *name, PyObject *file, unsigned long line)
{
    if (!PyUnicode_Check(name)) {
        PyErr_Format(PyExc_TypeError, "region name must be str, not %.100s", Py_TYPE(name)->tp_name);
        return TT_NO_ID;
    }
    uint32_t id = cached_id(cache, name);
    if (id != TT_NO_ID || PyErr_Occurred()) return id;
    PyObject *full = PyUnicode_FromFormat("%s%U", prefix, name);
    uint32_t name_string = full ? utf8_string_id(full) : TT_NO_ID;
    Py_XDECREF(full);
    uint32_t file_string = file && PyUnicode_Check(file) ? utf8_string_id(file)
                                                         : tt_registry_string(&tt_definitions, "", 0);
    if (name_string == TT_NO_ID || file_string == TT_NO_ID) return TT_NO_ID;
    id = tt_registry_named_region(&tt_definitions, name_string, file_string, (uint32_t)line, TT_REGION_USER);
    if (id != TT_NO_ID && (tt_region_filter_defined(id) == TT_STACK_SKIP || cache_id(cache, name, id) < 0))
        return TT_NO_ID;
    return id;
}

static void enter_user_region(tt_stream *s, uint32_t region)
{
    int inside_own_call = tt_stream_top(s) == TT_STACK_OWN;
    if (inside_own_call) tt_stream_unskip(s);
    if (tt_measurement.recording && !tt_region_is_filtered(region))
        tt_stream_enter(s, tt_clock_now(), region);
    else
        tt_stream_skip(s, TT_STACK_SKIP);
    tt_stream_skip(s, TT_STACK_REGION);
    if (inside_own_call) tt_stream_skip(s, TT_STACK_OWN);
}

/* Ends the user region, wherever it is open (stream.h); one that is not
 * open is said once per process, on stderr, and ignored. */
static void leave_user_region(tt_stream *s, uint32_t region, PyObject *name)
{
    int ended = tt_stream_end_region(s, tt_clock_now(), region);
    if (ended == 0) {
        static int warned;
        if (!warned++)
            PySys_FormatStderr("tracetop: warning: region_end(%R) ends no open region; ignored (further "
                               "unmatched ends are ignored silently)\n",
                               name);
    }
}

static PyObject *region_begin(PyObject *self, PyObject *name)
{
    (void)self;
    if (!tt_measurement.session) Py_RETURN_NONE;
    tt_stream *s = tt_thread_stream();
    if (!s) Py_RETURN_NONE;
    uint32_t region = named_region(user_region_ids, "user:", name, NULL, 0);
    if (region == TT_NO_ID) return PyErr_Occurred() ? NULL : PyErr_NoMemory();
    enter_user_region(s, region);
    Py_RETURN_NONE;
}

static PyObject *region_end(PyObject *self, PyObject *name)
{
    (void)self;
    if (!tt_measurement.session) Py_RETURN_NONE;
    tt_stream *s = tt_thread_stream();
    if (!s) Py_RETURN_NONE;
    uint32_t region = named_region(user_region_ids, "user:", name, NULL, 0);
    if (region == TT_NO_ID) return PyErr_Occurred() ? NULL : PyErr_NoMemory();
    leave_user_region(s, region, name);
    Py_RETURN_NONE;
}

/* A stream and a name id for a record, or NULL (nothing to record, or an
 * exception set). */
static tt_stream *named_record(PyObject *name, uint32_t *id)
{
    if (!tt_measurement.session || !tt_measurement.recording) return NULL;
    tt_stream *s = tt_thread_stream();
    if (!s) return NULL;
    *id = name_id(name);
    return *id == TT_NO_ID ? NULL : s;
}

#define DONE() return PyErr_Occurred() ? NULL : Py_NewRef(Py_None)

static int two_arguments(const char *function, Py_ssize_t nargs)
{
    if (nargs == 2) return 1;
    PyErr_Format(PyExc_TypeError, "%s() takes 2 arguments (%zd given)", function, nargs);
    return 0;
}

static PyObject *parameter_int(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    uint32_t id;
    tt_stream *s;
    if (!two_arguments("parameter_int", nargs)) return NULL;
    if ((s = named_record(args[0], &id))) {
        long long v = PyLong_AsLongLong(args[1]);
        if (!(v == -1 && PyErr_Occurred())) tt_stream_param_int(s, tt_clock_now(), id, v);
    }
    DONE();
}

static PyObject *parameter_uint(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    uint32_t id;
    tt_stream *s;
    if (!two_arguments("parameter_uint", nargs)) return NULL;
    if ((s = named_record(args[0], &id))) {
        unsigned long long v = PyLong_AsUnsignedLongLong(args[1]);
        if (!(v == (unsigned long long)-1 && PyErr_Occurred())) tt_stream_param_uint(s, tt_clock_now(), id, v);
    }
    DONE();
}

static PyObject *parameter_string(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    uint32_t id;
    tt_stream *s;
    if (!two_arguments("parameter_string", nargs)) return NULL;
    if ((s = named_record(args[0], &id))) {
        PyObject *text = PyObject_Str(args[1]);
        Py_ssize_t len;
        const char *utf8 = text ? PyUnicode_AsUTF8AndSize(text, &len) : NULL;
        if (utf8) tt_stream_param_string(s, tt_clock_now(), id, utf8, (size_t)len);
        Py_XDECREF(text);
    }
    DONE();
}

static PyObject *counter(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    uint32_t id;
    tt_stream *s;
    if (!two_arguments("counter", nargs)) return NULL;
    if ((s = named_record(args[0], &id))) {
        double v = PyFloat_AsDouble(args[1]);
        if (!(v == -1.0 && PyErr_Occurred())) tt_stream_counter(s, tt_clock_now(), id, v);
    }
    DONE();
}

static PyObject *mark(PyObject *self, PyObject *name)
{
    (void)self;
    uint32_t id;
    tt_stream *s = named_record(name, &id);
    if (s) tt_stream_mark(s, tt_clock_now(), TT_EV_MARK, id);
    DONE();
}

/* ---- Region: the context manager behind tracetop.region ---- */

/* A Region with `switch` (scorep.instrumenter.enable("name") and
 * disable("name")) switches the instrumenter to it in __enter__ and back in
 * __exit__, and is a region only where that switches: the switch comes
 * first and the region inside it, so that it ends before the switch back,
 * within the same C call (a Python __exit__ would be a call the switch
 * back leaves open above the region). */
typedef struct {
    PyObject_HEAD
    PyObject *name;
    PyObject *file;
    unsigned long line;
    int switch_to; /* -1: none; else the instrumenter's state inside */
    int switched;  /* __enter__ switched: __exit__ switches back */
} Region;

static int Region_init(Region *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"name", "file", "line", "switch", NULL};
    PyObject *name, *file = NULL, *switch_to = Py_None;
    unsigned long line = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "U|UkO", kwlist, &name, &file, &line, &switch_to)) return -1;
    Py_XSETREF(self->name, Py_NewRef(name));
    Py_XSETREF(self->file, Py_XNewRef(file));
    self->line = line;
    self->switch_to = switch_to == Py_None ? -1 : PyObject_IsTrue(switch_to);
    if (self->switch_to == -1 && switch_to != Py_None) return -1;
    self->switched = 0;
    return 0;
}

static void Region_dealloc(Region *self)
{
    PyObject_GC_UnTrack(self);
    Py_XDECREF(self->name);
    Py_XDECREF(self->file);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Region_traverse(Region *self, visitproc visit, void *arg)
{
    Py_VISIT(self->name);
    Py_VISIT(self->file);
    return 0;
}

static PyObject *Region_enter(Region *self, PyObject *unused)
{
    (void)unused;
    if (self->switch_to >= 0) {
        if (tt_measurement.instrumenter_enabled == self->switch_to) return Py_NewRef(self);
        if (tt_instrumenter_switch(self->switch_to) < 0) return NULL;
        self->switched = 1;
    }
    if (tt_measurement.session) {
        tt_stream *s = tt_thread_stream();
        uint32_t region = s ? named_region(region_ids, "", self->name, self->file, self->line) : TT_NO_ID;
        if (region != TT_NO_ID) {
            enter_user_region(s, region);
        } else if (PyErr_Occurred()) {
            if (self->switched) { /* no __exit__ follows a failed __enter__ */
                self->switched = 0;
                PyObject *type, *value, *traceback;
                PyErr_Fetch(&type, &value, &traceback);
                if (tt_instrumenter_switch(!self->switch_to) < 0) PyErr_Clear();
                PyErr_Restore(type, value, traceback);
            }
            return NULL;
        }
    }
    return Py_NewRef(self);
}

static PyObject *Region_exit(Region *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)args, (void)nargs;
    if (self->switch_to >= 0 && !self->switched) Py_RETURN_FALSE;
    if (tt_measurement.session) {
        tt_stream *s = tt_thread_stream();
        uint32_t region = s ? named_region(region_ids, "", self->name, self->file, self->line) : TT_NO_ID;
        if (region != TT_NO_ID)
            leave_user_region(s, region, self->name);
        else if (PyErr_Occurred())
            return NULL;
    }
    if (self->switch_to >= 0) {
        self->switched = 0;
        if (tt_instrumenter_switch(!self->switch_to) < 0) return NULL;
    }
    Py_RETURN_FALSE;
}

static PyMethodDef Region_methods[] = {
    {"__enter__", (PyCFunction)Region_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)(void (*)(void))Region_exit, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef Region_members[] = {
    {"name", T_OBJECT, offsetof(Region, name), READONLY, "the region's name as recorded"},
    {"file", T_OBJECT, offsetof(Region, file), READONLY, NULL},
    {"line", T_ULONG, offsetof(Region, line), READONLY, NULL},
    {"switch", T_INT, offsetof(Region, switch_to), READONLY, "the instrumenter's state inside, -1 for none"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject RegionType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tracetop._tracetop.Region",
    .tp_basicsize = sizeof(Region),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Region(name, file=None, line=0, switch=None): a region recorded as `name`, as a context manager; "
              "with `switch`, also the instrumenter switched to it, and a region only where that switches.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Region_init,
    .tp_dealloc = (destructor)Region_dealloc,
    .tp_traverse = (traverseproc)Region_traverse,
    .tp_methods = Region_methods,
    .tp_members = Region_members,
};

static PyMethodDef api_methods[] = {
    {"region_begin", region_begin, METH_O, "region_begin(name)\n--\n\nOpen the user region user:<name>."},
    {"region_end", region_end, METH_O, "region_end(name)\n--\n\nClose the user region user:<name>."},
    {"parameter_int", (PyCFunction)(void (*)(void))parameter_int, METH_FASTCALL, "parameter_int(name, value)"},
    {"parameter_uint", (PyCFunction)(void (*)(void))parameter_uint, METH_FASTCALL, "parameter_uint(name, value)"},
    {"parameter_string", (PyCFunction)(void (*)(void))parameter_string, METH_FASTCALL, "parameter_string(name, value)"},
    {"counter", (PyCFunction)(void (*)(void))counter, METH_FASTCALL, "counter(name, value): a metric sample"},
    {"mark", mark, METH_O, "mark(name): an instant event"},
    {NULL, NULL, 0, NULL},
};

int tt_ext_add_api(PyObject *module)
{
    region_ids = PyDict_New();
    user_region_ids = PyDict_New();
    string_ids = PyDict_New();
    if (!region_ids || !user_region_ids || !string_ids) return -1;
    if (PyType_Ready(&RegionType) < 0 || tt_module_add(module, "Region", (PyObject *)&RegionType) < 0) return -1;
    if (tt_pyregions_own_methods(Region_methods) < 0) return -1;
    return PyModule_AddFunctions(module, api_methods);
}

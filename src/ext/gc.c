/* gc.c -- garbage collections recorded as regions (format.h: GC).
 *
 * CPython calls the functions in gc.callbacks at the start and at the stop
 * of every collection, in the thread that runs it, with the GIL held; it
 * has done so since 3.3, so every supported Python can say what a
 * collection was (generation, collected, uncollectable). While the hook
 * is in place (not with --instrumenter=none), one C function of ours is in
 * that list; a collection is part of the calls' timeline, so it is
 * recorded while calls are (recording on, the instrumenter enabled): at the start it enters
 * the region "gc:collection(gen<N>)" in the calling thread's stream, at the
 * stop it records the result and leaves it. Only in a thread that has its
 * stream: a collection in a new thread's bootstrap, before its first call,
 * would make it before threading knows the thread's name, and is left out.
 * The collection thus nests in the call it interrupted, which is charged
 * its own time only (its exclusive time leaves the collection out), and
 * finalizers that the collection runs nest inside it.
 *
 * The collector never runs two collections at once, so one collection is
 * open at a time, process-wide; the stop closes the region only when it is
 * still the innermost one of the stream it was opened in (a measurement
 * switched off and on in between, or a finalizer that left a region open,
 * leaves it to the stream's own bookkeeping).
 *
 * Nothing here is on the path of a traced call: the cost is two calls of a
 * C function per collection, and the info dict CPython makes for them.
 * That dict, its keys and values and the phase's string exist only because
 * our function is in gc.callbacks: while objects are counted, and ours is
 * the only entry (else CPython would make them anyway), they are not the
 * program's objects and are not counted (tt_objects_disown).
 */
#include "gc.h"

#include "measurement.h"
#include "objects.h"
#include "regionfilter.h"
#include "threadstream.h"

#define GENERATIONS 3

static PyObject *callback;  /* our entry of gc.callbacks, made once */
static PyObject *callbacks; /* gc.callbacks while ours is in it */
static PyObject *key_generation, *key_collected, *key_uncollectable;
static uint32_t regions[GENERATIONS] = {TT_NO_ID, TT_NO_ID, TT_NO_ID};
static int registered;

/* The collection open now. */
static tt_stream *open_stream;
static uint32_t open_node; /* its node's offset in the stream's call tree */
static uint64_t open_ticks;

static uint32_t region_of(unsigned generation)
{
    if (regions[generation] != TT_NO_ID) return regions[generation];
    char name[32];
    int len = snprintf(name, sizeof name, "gc:collection(gen%u)", generation);
    uint32_t name_string = tt_registry_string(&tt_definitions, name, (size_t)len);
    uint32_t file_string = tt_registry_string(&tt_definitions, "", 0);
    if (name_string == TT_NO_ID || file_string == TT_NO_ID) return TT_NO_ID;
    uint32_t id = tt_registry_named_region(&tt_definitions, name_string, file_string, 0, TT_REGION_GC);
    if (id == TT_NO_ID || tt_region_filter_defined(id) == TT_STACK_SKIP) return TT_NO_ID;
    return regions[generation] = id;
}

/* info[key] as an unsigned number; 0 when absent or not a number. */
static uint64_t info_number(PyObject *info, PyObject *key)
{
    PyObject *value = PyDict_Check(info) ? PyDict_GetItemWithError(info, key) : NULL;
    unsigned long long n = value && PyLong_Check(value) ? PyLong_AsUnsignedLongLong(value) : 0;
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return n;
}

static void collection_start(PyObject *info)
{
    open_stream = NULL;
    uint64_t generation = info_number(info, key_generation);
    if (!tt_measurement.record_calls || generation >= GENERATIONS) return;
    tt_stream *s = tt_thread_stream_if_made();
    uint32_t region = s ? region_of((unsigned)generation) : TT_NO_ID;
    if (region == TT_NO_ID || tt_region_is_filtered(region)) return;
    open_ticks = tt_clock_now();
    tt_stream_enter(s, open_ticks, region);
    if (tt_stream_top(s) != region) return; /* not recorded: its tree lost */
    open_stream = s;
    open_node = tt_calltree_offset(&s->tree, s->tree.cur);
}

static void collection_stop(PyObject *info)
{
    tt_stream *s = open_stream;
    open_stream = NULL;
    if (!s || s != tt_tls_stream || s->session != tt_measurement.session ||
        tt_calltree_offset(&s->tree, s->tree.cur) != open_node)
        return;
    uint64_t generation = info_number(info, key_generation);
    if (generation >= GENERATIONS || tt_stream_top(s) != regions[generation]) return;
    uint64_t now = tt_clock_now();
    tt_stream_gc(s, now, open_ticks, (uint8_t)generation, info_number(info, key_collected),
                 info_number(info, key_uncollectable));
    tt_stream_leave(s, now);
}

/* The phase and info made for our call alone are not the program's. */
static void disown_arguments(PyObject *phase, PyObject *info)
{
    if (!tt_objects_counting() || !callbacks || PyList_GET_SIZE(callbacks) != 1) return;
    tt_objects_disown(phase);
    if (!PyDict_Check(info)) return;
    Py_ssize_t i = 0;
    PyObject *key, *value;
    while (PyDict_Next(info, &i, &key, &value)) {
        tt_objects_disown(key);
        tt_objects_disown(value);
    }
    tt_objects_disown(info);
}

/* _gc_callback(phase, info), as gc.callbacks calls it. */
static PyObject *on_collection(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (!tt_measurement.session || nargs != 2 || !PyUnicode_Check(args[0])) Py_RETURN_NONE;
    disown_arguments(args[0], args[1]);
    if (PyUnicode_CompareWithASCIIString(args[0], "start") == 0)
        collection_start(args[1]);
    else
        collection_stop(args[1]);
    Py_RETURN_NONE;
}

static PyObject *gc_callbacks(void)
{
    PyObject *gc = PyImport_ImportModule("gc");
    PyObject *list = gc ? PyObject_GetAttrString(gc, "callbacks") : NULL;
    Py_XDECREF(gc);
    if (list && !PyList_Check(list)) {
        Py_DECREF(list);
        PyErr_SetString(PyExc_TypeError, "gc.callbacks is not a list");
        return NULL;
    }
    return list;
}

int tt_gc_start(void)
{
    if (registered) return 0;
    PyObject *list = gc_callbacks();
    int rc = list ? PyList_Append(list, callback) : -1;
    if (rc < 0) {
        Py_XDECREF(list);
        return -1;
    }
    callbacks = list;
    registered = 1;
    return 0;
}

void tt_gc_stop(void)
{
    if (!registered) return;
    registered = 0;
    open_stream = NULL;
    Py_CLEAR(callbacks);
    PyObject *list = gc_callbacks();
    Py_ssize_t n = list ? PyList_GET_SIZE(list) : 0;
    /* The last entry that is ours: the program may have added its own since. */
    for (Py_ssize_t i = n - 1; i >= 0; i--)
        if (PyList_GET_ITEM(list, i) == callback) {
            PySequence_DelItem(list, i);
            break;
        }
    Py_XDECREF(list);
    PyErr_Clear();
}

static PyMethodDef callback_def = {"_gc_callback", (PyCFunction)(void (*)(void))on_collection, METH_FASTCALL,
                                   "Records a garbage collection (in gc.callbacks while measuring)."};

int tt_ext_add_gc(PyObject *module)
{
    key_generation = PyUnicode_InternFromString("generation");
    key_collected = PyUnicode_InternFromString("collected");
    key_uncollectable = PyUnicode_InternFromString("uncollectable");
    callback = PyCFunction_NewEx(&callback_def, module, NULL);
    if (!key_generation || !key_collected || !key_uncollectable || !callback) return -1;
    return tt_module_add(module, "_gc_callback", callback);
}

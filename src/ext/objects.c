/* objects.c -- the objects a program creates and destroys, counted by type
 * and by the region that created them (`--objects`, format.h: OBJECTS).
 *
 * CPython 3.13 calls a reference tracer (PyRefTracer_SetTracer) as it
 * makes every object, those it takes from a free list included, and as it
 * destroys one. Before 3.13 there is none, but every object passes
 * through _Py_NewReference as it is made (free lists included) and
 * _Py_Dealloc as it is destroyed, which libpython calls through its offset
 * table: wedged there (relink.h) while counting. Counting is exact, not
 * sampled:
 *
 *  - created: the object's type is named (cached per type), the creating
 *    region is the innermost recorded one on the thread's stack (a call
 *    left out by --filter or tracetop's own counts for its caller), and
 *    the pair's place (a cell) counts it. The object's address is kept in
 *    a map, with its cell, for as long as it lives.
 *  - destroyed: the address leaves the map and its cell counts it, so an
 *    object counts against the region that made it, whichever thread frees
 *    it. An object made before counting started is in no map and counted
 *    neither way.
 *  - an address made again while still in the map belonged to an object
 *    whose destruction CPython did not report (before 3.13.3 the
 *    interpreter loop calls some destructors itself: CPython gh-130382);
 *    it counts as destroyed then.
 *  - objects CPython makes only because tracetop measures (the arguments
 *    of its gc callback, gc.c; of its sys.monitoring callbacks, monitoring.c)
 *    are disowned: out of the map and their making uncounted (when a
 *    record showed it already, the next made in its place is not counted).
 *
 * The cells are written as OBJECTS records, each the change since its
 * last, by the thread that counts: when enough objects were counted and
 * some time passed, and when counting stops. Inside the tracer nothing
 * waits for the writer (the GIL cannot be let go in the middle of making
 * an object): a record that finds no room waits for the next batch.
 *
 * Everything here runs with the GIL held: it serialises the tables. On
 * free-threaded builds, and where libpython cannot be wedged, counting
 * objects is refused.
 */
#include "objects.h"

#include <stdlib.h>
#include <string.h>

#include "measurement.h"
#include "monitoring.h"
#include "pyregions.h"
#include "relink.h"
#include "threadstream.h"

#if !defined(Py_GIL_DISABLED)
#define OBJECTS_SUPPORTED 1
#endif

static int counting;

#ifdef OBJECTS_SUPPORTED

/* Counted between looks at the clock, and the time between batches. */
#define CHECK_EVERY 1024u
#define BATCH_MS 100u

typedef struct cell {
    uint32_t region; /* + 1; 0: none */
    uint32_t type;   /* its name, a string id */
    uint64_t size;
    uint64_t created, destroyed;
    uint64_t shown_created, shown_destroyed; /* as of its last record */
    uint64_t owed;                           /* disowned once recorded: the next made here are not counted */
    int dirty;
} cell;

static tt_ptrmap alive;  /* object -> cell */
static tt_ptrmap places; /* (region + 1) << 32 | type + 1 -> cell */
static tt_ptrmap types;  /* type object -> its name's string id */
static cell *cells;
static uint32_t cell_count, cell_cap;
static uint32_t *dirty;
static uint32_t dirty_count; /* dirty has room for every cell */
static uint32_t since_check;
static uint64_t last_batch, batch_ticks;
/* The tracer, or tracetop's own code for the program, is running: what
 * it makes is tracetop's. */
static __thread int inside __attribute__((tls_model("initial-exec")));
/* The cell of the last object made: the next is mostly of the same type,
 * made in the same place. */
static PyTypeObject *last_type;
static uint32_t last_region, last_cell;

/* ---- names ---- */

/* "list", "collections.deque" as "collections:deque", a class as
 * module:qualname. TT_NO_ID when out of memory. */
static uint32_t type_name_slow(PyTypeObject *tp)
{
    char buf[512];
    const char *name = tp->tp_name;
    if (tp->tp_flags & Py_TPFLAGS_HEAPTYPE) {
        PyObject *module = PyDict_GetItemString(tp->tp_dict, "__module__");
        PyObject *qualname = ((PyHeapTypeObject *)tp)->ht_qualname;
        const char *m = module && PyUnicode_Check(module) ? PyUnicode_AsUTF8(module) : NULL;
        const char *q = qualname && PyUnicode_Check(qualname) ? PyUnicode_AsUTF8(qualname) : NULL;
        PyErr_Clear();
        if (m && q) {
            snprintf(buf, sizeof buf, "%s:%s", m, q);
            name = buf;
        }
    } else {
        const char *dot = strrchr(name, '.');
        if (dot) {
            snprintf(buf, sizeof buf, "%.*s:%s", (int)(dot - name), name, dot + 1);
            name = buf;
        }
    }
    uint32_t id = tt_registry_string(&tt_definitions, name, strlen(name));
    if (id != TT_NO_ID && tt_ptrmap_put(&types, tp, id) < 0) return TT_NO_ID;
    return id;
}

static inline uint32_t type_name(PyTypeObject *tp)
{
    uint32_t id;
    return tt_ptrmap_get(&types, tp, &id) ? id : type_name_slow(tp);
}

/* The innermost recorded region of the calling thread, + 1; 0 for none. */
static inline uint32_t creating_region(void)
{
    tt_stream *s = tt_thread_stream_if_made();
    if (!s) return 0;
    const tt_calltree_node *cur = s->tree.cur; /* the innermost recorded call's (stream.h) */
    return cur->region != TT_CALLTREE_ROOT ? tt_calltree_region(&s->tree, cur) + 1 : 0;
}

/* ---- cells ---- */

static uint32_t __attribute__((noinline)) new_cell(const void *key, uint32_t region, uint32_t type, uint64_t size)
{
    if (cell_count == cell_cap) {
        uint32_t cap = cell_cap ? cell_cap * 2 : 256;
        cell *grown = realloc(cells, cap * sizeof *grown);
        uint32_t *grown_dirty = grown ? realloc(dirty, cap * sizeof *grown_dirty) : NULL;
        if (grown) cells = grown;
        if (!grown_dirty) return TT_NO_ID;
        dirty = grown_dirty;
        cell_cap = cap;
    }
    if (tt_ptrmap_put(&places, key, cell_count) < 0) return TT_NO_ID;
    cells[cell_count] = (cell){.region = region, .type = type, .size = size};
    return cell_count++;
}

static inline uint32_t cell_of(uint32_t region, uint32_t type, uint64_t size)
{
    const void *key = (const void *)(uintptr_t)((uint64_t)region << 32 | ((uint64_t)type + 1));
    uint32_t c;
    return tt_ptrmap_get(&places, key, &c) ? c : new_cell(key, region, type, size);
}

static inline void touch(uint32_t c)
{
    if (!cells[c].dirty) {
        cells[c].dirty = 1;
        dirty[dirty_count++] = c;
    }
}

/* Records the changed cells in stream `s` (NULL: none); without may_wait
 * those that find no room stay for the next batch. */
static void write_batch_into(tt_stream *s, int may_wait)
{
    if (!dirty_count || !s) return;
    uint64_t now = tt_clock_now();
    last_batch = now;
    while (dirty_count) {
        cell *c = &cells[dirty[dirty_count - 1]];
        tt_stream_objects_counts n = {.region = c->region,
                                      .type = c->type,
                                      .size = c->size,
                                      .created = c->created - c->shown_created,
                                      .destroyed = c->destroyed - c->shown_destroyed};
        /* Taken off the list first: with may_wait, the GIL is let go. */
        dirty_count--;
        c->dirty = 0;
        c->shown_created = c->created;
        c->shown_destroyed = c->destroyed;
        if (tt_stream_objects(s, now, &n, may_wait) < 0) {
            c = &cells[dirty[dirty_count]];
            c->shown_created -= n.created;
            c->shown_destroyed -= n.destroyed;
            touch(dirty[dirty_count]);
            return;
        }
    }
}

/* The same, in the calling thread's stream. */
static void write_batch(int may_wait)
{
    if (!dirty_count) return;
    write_batch_into(may_wait && tt_measurement.session ? tt_thread_stream() : tt_thread_stream_if_made(), may_wait);
}

/* ---- the tracer ---- */

static void destroyed(uint32_t c)
{
    cells[c].destroyed++;
    touch(c);
}

static void created(PyObject *op)
{
    PyTypeObject *tp = Py_TYPE(op);
    uint32_t region = creating_region(), c = last_cell, before;
    if (tp != last_type || region != last_region) {
        uint32_t type = type_name(tp);
        if (type == TT_NO_ID || (c = cell_of(region, type, (uint64_t)tp->tp_basicsize)) == TT_NO_ID) return;
        last_type = tp;
        last_region = region;
        last_cell = c;
    }
    int was = tt_ptrmap_replace(&alive, op, c, &before);
    if (was < 0) return;
    if (was) destroyed(before);
    if (cells[c].owed) {
        cells[c].owed--;
        return;
    }
    cells[c].created++;
    touch(c);
}

static void gone(PyObject *op)
{
    uint32_t c;
    if (tt_ptrmap_remove(&alive, op, &c)) destroyed(c);
    /* A class's address may serve another class next. */
    if (PyType_Check(op)) {
        tt_ptrmap_remove(&types, op, &c);
        last_type = NULL;
    }
}

/* Counts one event of CPython's: an object made (1) or destroyed (0). */
static inline void count(PyObject *op, int create)
{
    /* Not measured (a forked child that is not followed): nothing kept. */
    if (inside || tt_unlikely(!tt_measurement.session)) return;
    inside = 1;
    if (create)
        created(op);
    else
        gone(op);
    if (tt_unlikely(++since_check >= CHECK_EVERY)) {
        since_check = 0;
        if (tt_clock_now() - last_batch >= batch_ticks) write_batch(0);
    }
    inside = 0;
}

#if TT_PYTHON_HAS_REF_TRACER
static PyRefTracer previous_tracer;
static void *previous_data;

static int tracer(PyObject *op, PyRefTracerEvent event, void *data)
{
    (void)data;
    if (previous_tracer) previous_tracer(op, event, previous_data);
    count(op, event == PyRefTracer_CREATE);
    return 0;
}

static int hook_in(void)
{
    previous_tracer = PyRefTracer_GetTracer(&previous_data);
    return PyRefTracer_SetTracer(tracer, NULL);
}

static void hook_out(void)
{
    /* Another tracer put in place since (tracemalloc.start()) stays. */
    void *data;
    if (PyRefTracer_GetTracer(&data) == tracer) PyRefTracer_SetTracer(previous_tracer, previous_data);
}
#else
/* Before 3.13: wedges on the two functions every object passes through
 * as CPython makes it (free lists included) and as it destroys it,
 * _Py_NewReference and _Py_Dealloc (relink.h). */
static void (*new_reference)(PyObject *);
static void (*dealloc)(PyObject *);

static void counted_new_reference(PyObject *op)
{
    new_reference(op);
    count(op, 1);
}

static void counted_dealloc(PyObject *op)
{
    count(op, 0);
    dealloc(op);
}

static int hook_in(void)
{
    if (tt_relink("_Py_NewReference", (void *)counted_new_reference, (void **)&new_reference) < 0) goto refused;
    if (tt_relink("_Py_Dealloc", (void *)counted_dealloc, (void **)&dealloc) < 0) {
        tt_relink("_Py_NewReference", (void *)new_reference, NULL);
        goto refused;
    }
    return 0;
refused:
    /* The version running, which may be another release than the headers'. */
    char version[32];
    snprintf(version, sizeof version, "%.*s", (int)strcspn(Py_GetVersion(), " "), Py_GetVersion());
    PyErr_Format(tt_TraceError,
                 "objects cannot be counted on this Python %s: its libpython is not a shared library whose own "
                 "calls can be wedged (Python 3.13 and later need no wedge)",
                 version);
    return -1;
}

static void hook_out(void)
{
    tt_relink("_Py_Dealloc", (void *)dealloc, NULL);
    tt_relink("_Py_NewReference", (void *)new_reference, NULL);
}
#endif

static void reset(void)
{
    if (alive.slots) tt_ptrmap_clear(&alive);
    if (places.slots) tt_ptrmap_clear(&places);
    cell_count = 0;
    dirty_count = 0;
    last_type = NULL;
}

#endif /* OBJECTS_SUPPORTED */

void tt_objects_disown(PyObject *op)
{
#ifdef OBJECTS_SUPPORTED
    uint32_t c;
    if (!counting || !tt_ptrmap_remove(&alive, op, &c)) return;
    /* Its making recorded already (a batch written as it was made): one
     * made here next is left uncounted instead. */
    if (cells[c].created == cells[c].shown_created)
        cells[c].owed++;
    else
        cells[c].created--;
#else
    (void)op;
#endif
}

int tt_objects_own_begin(void)
{
#ifdef OBJECTS_SUPPORTED
    int was = inside;
    inside = 1;
    return was;
#else
    return 0;
#endif
}

void tt_objects_own_end(int was)
{
#ifdef OBJECTS_SUPPORTED
    inside = was;
#else
    (void)was;
#endif
}

/* ---- on and off ---- */

int tt_objects_counting(void) { return counting; }

static void show(void)
{
    tt_session *session = tt_measurement.session;
    if (session && session->live) tt_live_show_objects(session->live, counting);
}

#ifdef OBJECTS_SUPPORTED
/* What depends on counting follows it. */
static void switched(void) { tt_monitoring_objects_switched(); }
#endif

int tt_objects_start(void)
{
    if (counting || !tt_measurement.session) return 0;
#ifdef OBJECTS_SUPPORTED
    if ((!alive.slots && tt_ptrmap_init(&alive) < 0) || (!places.slots && tt_ptrmap_init(&places) < 0) ||
        (!types.slots && tt_ptrmap_init(&types) < 0)) {
        PyErr_NoMemory();
        return -1;
    }
    batch_ticks = tt_clock_ticks_per_second() / 1000u * BATCH_MS;
    last_batch = tt_clock_now();
    if (hook_in() < 0) return -1;
    counting = 1;
    switched();
    show();
    return 0;
#else
    PyErr_SetString(tt_TraceError, "objects cannot be counted on a free-threaded Python build");
    return -1;
#endif
}

/* The objects alive stay known while counting is off: one freed then
 * leaves an address that, made again once counting is on, counts it as
 * destroyed. */
void tt_objects_stop(void)
{
#ifdef OBJECTS_SUPPORTED
    if (counting) {
        hook_out();
        counting = 0;
        switched();
        show();
    }
    inside = 1;
    write_batch(1);
    inside = 0;
#endif
}

void tt_objects_forked(void)
{
#ifdef OBJECTS_SUPPORTED
    for (uint32_t i = 0; i < dirty_count; i++) {
        cell *c = &cells[dirty[i]];
        c->shown_created = c->created;
        c->shown_destroyed = c->destroyed;
        c->dirty = 0;
    }
    dirty_count = 0;
#endif
}

void tt_objects_end(void)
{
#ifdef OBJECTS_SUPPORTED
    tt_objects_stop();
    /* What is left when the measurement ends on a thread of tracetop's own,
     * which has no stream (tracetop attach): recorded in one made for it. */
    if (dirty_count) {
        inside = 1;
        write_batch_into(tt_own_thread_stream(), 1);
        inside = 0;
    }
    reset();
#endif
}

/* ---- Python ---- */

static PyObject *objects_enable(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    if (tt_objects_start() < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *objects_disable(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    tt_objects_stop();
    Py_RETURN_NONE;
}

static PyObject *objects_enabled(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    return PyBool_FromLong(counting);
}

static PyMethodDef object_methods[] = {
    {"objects_enable", objects_enable, METH_NOARGS,
     "Count the objects created and destroyed, by type and creating region (a no-op outside a measurement);\n"
     "TraceError where this Python cannot."},
    {"objects_disable", objects_disable, METH_NOARGS, "Stop counting objects; what was counted is recorded."},
    {"objects_enabled", objects_enabled, METH_NOARGS, "Whether objects are counted."},
    {NULL, NULL, 0, NULL},
};

int tt_ext_add_objects(PyObject *module)
{
    if (tt_pyregions_own_methods(object_methods) < 0) return -1;
    return PyModule_AddFunctions(module, object_methods);
}

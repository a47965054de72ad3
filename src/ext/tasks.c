/* tasks.c -- which asyncio task each resume of a coroutine belongs to.
 *
 * asyncio runs a task in steps: the event loop resumes the task's
 * coroutine, which runs until it awaits something not ready, and the chain
 * of coroutines it awaits down to there resumes with it. So a step is a
 * resume of a coroutine by something that is not a coroutine, and the hook
 * sees it as the entry of a coroutine's code whose caller (the innermost
 * call open in its stream) is not a coroutine. Only then is asyncio asked
 * which task runs, as asyncio.current_task() tells it: the running loop's
 * entry in _asyncio's table, C calls only, no object made. Plain calls
 * pay the test of one bit cached with their region (pyregions.h:
 * TT_CODE_COROUTINE); a coroutine resumed by another pays the look-up of
 * one flag, on the tt_fast_* paths (fastpath.h: tt_tasks_awaited).
 *
 * A task is known by its object's address while it lives: a weak reference
 * to it, made at its first step, forgets the address when it dies, so that
 * a new task at the same address is a new task. Its name is the one
 * Task.get_name() gives at that first step, written in its TASK_NAMED
 * definition and kept nowhere else: what is kept of a task is kept while it
 * lives, so that a program making tasks for days uses no more memory for
 * them than for the ones alive at once.
 */
#include "tasks.h"

#include "fastpath.h"
#include "format.h"
#include "hash.h"
#include "measurement.h"
#include "regionfilter.h"

/* By region id (tasks.h), grown as regions are marked. */
uint8_t *tt_tasks_awaiting;
uint32_t tt_tasks_awaiting_cap;

/* A task alive: its id, its name's hash, and whether the name was looked at
 * again at a later step (the name a task is created with may be set after
 * its first step: asyncio's eager tasks run one before create_task names
 * them). A free entry's `id` is the next free entry's index. */
typedef struct live_task {
    uint32_t id;
    uint8_t named;
    uint64_t name_hash;
} live_task;

static tt_ptrmap known;      /* task object -> its entry in `live`, this session */
static PyObject *references; /* {address: weak reference}: keeps the references alive */
static uint32_t task_count;  /* ids given this session */
static live_task *live;      /* as many as were alive at once */
static uint32_t live_count, live_cap;
static uint32_t free_entry = TT_NO_ID; /* the first free entry of `live`, TT_NO_ID: none */
static PyObject *running_loop;         /* _asyncio._get_running_loop ... */
static PyCFunction running_loop_c; /* ... its C function, called as the interpreter would, when it takes no argument */
static PyObject *current_tasks;    /* ... and _current_tasks {loop: task}, once asyncio is imported */
static PyObject *asyncio_name;     /* "_asyncio" */
static PyObject *get_name_name;    /* "get_name" */

/* format.h: COROUTINE. */
static void define_coroutine(tt_session *session, uint32_t region)
{
    uint8_t rec[TT_RECORD_MAX_FIXED], *p = rec;
    *p++ = TT_DEF_COROUTINE;
    p = tt_put_varint(p, region);
    tt_session_define(session, rec, (size_t)(p - rec));
}

int tt_tasks_mark_coroutine(uint32_t region)
{
    if (region >= tt_tasks_awaiting_cap) {
        uint32_t cap = tt_tasks_awaiting_cap ? tt_tasks_awaiting_cap : 256;
        while (cap <= region) cap *= 2;
        uint8_t *grown = realloc(tt_tasks_awaiting, cap);
        if (!grown) return -1;
        memset(grown + tt_tasks_awaiting_cap, 0, cap - tt_tasks_awaiting_cap);
        tt_tasks_awaiting = grown;
        tt_tasks_awaiting_cap = cap;
    }
    tt_tasks_awaiting[region] = 1;
    if (tt_measurement.session) define_coroutine(tt_measurement.session, region);
    return 0;
}

void tt_tasks_reset(tt_session *session)
{
    /* The regions are defined again in each session (registry.h), and so
     * what they are. */
    for (uint32_t region = 0; region < tt_tasks_awaiting_cap; region++)
        if (tt_tasks_awaiting[region]) define_coroutine(session, region);
    if (known.slots) tt_ptrmap_clear(&known);
    Py_CLEAR(references); /* their callbacks die with them */
    task_count = 0;
    live_count = 0;
    free_entry = TT_NO_ID;
}

/* The task running now (a new reference), or NULL when none: asyncio not
 * imported, no running loop, or a coroutine outside any task. asyncio's
 * own table (3.11 to 3.13), read as asyncio.current_task() reads it. */
static PyObject *running_task(void)
{
    if (!current_tasks) {
        if (!asyncio_name && !(asyncio_name = PyUnicode_InternFromString("_asyncio"))) return NULL;
        PyObject *module = PyImport_GetModule(asyncio_name);
        if (!module) return NULL;
        running_loop = PyObject_GetAttrString(module, "_get_running_loop");
        current_tasks = running_loop ? PyObject_GetAttrString(module, "_current_tasks") : NULL;
        Py_DECREF(module);
        if (!current_tasks || !PyDict_Check(current_tasks)) {
            Py_CLEAR(running_loop);
            Py_CLEAR(current_tasks);
            return NULL;
        }
        /* Called at each step as CPython calls a METH_NOARGS function,
         * less the dispatch and the recursion check around it: it runs
         * no Python code. */
        if (PyCFunction_Check(running_loop) && PyCFunction_GET_FLAGS(running_loop) == METH_NOARGS)
            running_loop_c = PyCFunction_GET_FUNCTION(running_loop);
    }
    PyObject *loop = running_loop_c ? running_loop_c(PyCFunction_GET_SELF(running_loop), NULL)
                                    : PyObject_CallNoArgs(running_loop);
    PyObject *task = loop && loop != Py_None ? PyDict_GetItemWithError(current_tasks, loop) : NULL;
    Py_XDECREF(loop);
    return Py_XNewRef(task);
}

/* The weak reference's callback, its self the task's address: the task
 * died, its address may serve a new one. */
static PyObject *forget(PyObject *address, PyObject *reference)
{
    (void)reference;
    uint32_t entry;
    if (tt_ptrmap_remove(&known, PyLong_AsVoidPtr(address), &entry)) {
        live[entry].id = free_entry;
        free_entry = entry;
    }
    if (references && PyDict_DelItem(references, address) < 0) PyErr_Clear();
    Py_RETURN_NONE;
}

static PyMethodDef forget_def = {"_task_died", forget, METH_O, NULL};

/* format.h: TASK_NAMED, again for a task renamed. */
static void name_task(uint32_t id, const char *name, size_t len)
{
    if (len > TT_STRING_MAX) len = TT_STRING_MAX;
    uint8_t rec[TT_RECORD_MAX_FIXED + TT_STRING_MAX], *p = rec;
    *p++ = TT_DEF_TASK_NAMED;
    p = tt_put_varint(p, id);
    p = tt_put_varint(p, len);
    memcpy(p, name, len);
    tt_session_define(tt_measurement.session, rec, (size_t)(p - rec) + len);
}

/* Defines task l->id (again, unless `first`, when its get_name() is not
 * the name whose hash l->name_hash holds), named by its get_name(): none
 * when it has none. */
static void task_name(PyObject *task, live_task *l, int first)
{
    if (!get_name_name) get_name_name = PyUnicode_InternFromString("get_name");
    PyObject *name = get_name_name ? PyObject_CallMethodNoArgs(task, get_name_name) : NULL;
    Py_ssize_t len = 0;
    const char *utf8 = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8AndSize(name, &len) : NULL;
    if (utf8 || first) {
        if (!utf8) utf8 = "", len = 0;
        uint64_t hash = XXH3_64bits(utf8, (size_t)len);
        if (first || hash != l->name_hash) name_task(l->id, utf8, (size_t)len);
        l->name_hash = hash;
    }
    Py_XDECREF(name);
}

/* A free entry of `live`, TT_NO_ID when memory runs out. */
static uint32_t live_entry(void)
{
    if (free_entry != TT_NO_ID) {
        uint32_t entry = free_entry;
        free_entry = live[entry].id;
        return entry;
    }
    if (live_count == live_cap) {
        uint32_t cap = live_cap ? 2 * live_cap : 64;
        live_task *grown = realloc(live, cap * sizeof *grown);
        if (!grown) return TT_NO_ID;
        live = grown;
        live_cap = cap;
    }
    return live_count++;
}

/* Remembers `task` under a new id while it lives, and defines it;
 * TT_NO_ID when it cannot be. */
static uint32_t define_task(PyObject *task)
{
    if (!known.slots && tt_ptrmap_init(&known) < 0) return TT_NO_ID;
    if (!references && !(references = PyDict_New())) return TT_NO_ID;
    uint32_t entry = live_entry();
    if (entry == TT_NO_ID) return TT_NO_ID;
    PyObject *address = PyLong_FromVoidPtr(task);
    PyObject *callback = address ? PyCFunction_New(&forget_def, address) : NULL;
    PyObject *reference = callback ? PyWeakref_NewRef(task, callback) : NULL;
    int kept = reference && PyDict_SetItem(references, address, reference) == 0;
    if (kept && tt_ptrmap_put(&known, task, entry) < 0) {
        kept = 0;
        if (PyDict_DelItem(references, address) < 0) PyErr_Clear();
    }
    Py_XDECREF(reference);
    Py_XDECREF(callback);
    Py_XDECREF(address);
    if (!kept) {
        live[entry].id = free_entry;
        free_entry = entry;
        return TT_NO_ID;
    }
    live[entry] = (live_task){.id = task_count};
    task_name(task, &live[entry], 1);
    return task_count++;
}

uint32_t tt_task_resume(tt_stream *s, uint32_t region)
{
    if (region >= TT_STACK_OWN || tt_region_is_filtered(region)) return TT_NO_ID;
    uint32_t caller = tt_stream_top(s);
    if (caller < tt_tasks_awaiting_cap && tt_tasks_awaiting[caller]) return TT_NO_ID; /* awaited inside a step */
    /* The hooks are called with no exception set (CPython saves one
     * around a profile function, and sys.monitoring has none then), so
     * that one is saved only where it would be lost. */
    PyObject *type = NULL, *value = NULL, *tb = NULL;
    int saved = PyErr_Occurred() != NULL;
    if (saved) PyErr_Fetch(&type, &value, &tb);
    PyObject *task = running_task();
    uint32_t id = TT_NO_ID, entry;
    if (task && known.slots && tt_ptrmap_get(&known, task, &entry)) {
        live_task *l = &live[entry];
        id = l->id;
        if (!l->named) { /* a later step, the first: renamed since its first? */
            l->named = 1;
            task_name(task, l, 0);
        }
    } else if (task) {
        id = define_task(task);
    }
    Py_XDECREF(task);
    if (PyErr_Occurred()) PyErr_Clear();
    if (saved) PyErr_Restore(type, value, tb);
    if (id != TT_NO_ID) tt_stream_mark(s, tt_clock_now(), TT_EV_TASK_RESUME, id);
    return id;
}

/* Where this Python keeps asyncio's running tasks elsewhere than the table
 * read above (3.14: in each thread's state), tasks are not recorded. */
static PyObject *tasks_unavailable(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    if (TT_PYTHON_TASKS_PER_THREAD)
        return PyUnicode_FromString("asyncio tasks are not recorded: this Python keeps the running task in each "
                                    "thread's state, which tracetop does not read yet");
    Py_RETURN_NONE;
}

static PyMethodDef task_methods[] = {
    {"tasks_unavailable", tasks_unavailable, METH_NOARGS,
     "None when asyncio tasks are recorded on this Python, else one line why not."},
    {NULL, NULL, 0, NULL},
};

int tt_ext_add_task_recording(PyObject *module) { return PyModule_AddFunctions(module, task_methods); }

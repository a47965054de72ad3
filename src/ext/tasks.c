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
 * Task.get_name() gives at that first step.
 */
#include "tasks.h"

#include "fastpath.h"
#include "format.h"
#include "measurement.h"
#include "regionfilter.h"

/* By region id (tasks.h), grown as regions are marked. */
uint8_t *tt_tasks_awaiting;
uint32_t tt_tasks_awaiting_cap;

static tt_ptrmap known;      /* task object -> task id, this session */
static PyObject *references; /* {address: weak reference}: keeps the references alive */
static uint32_t task_count;  /* ids given this session */
/* By task id: its name's string id, and whether it was looked at again at
 * a later step (the name a task is created with may be set after its
 * first step: asyncio's eager tasks run one before create_task names them). */
static uint32_t *task_names;
static uint8_t *task_named;
static uint32_t task_cap;
static PyObject *running_loop;     /* _asyncio._get_running_loop ... */
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
    uint32_t id;
    tt_ptrmap_remove(&known, PyLong_AsVoidPtr(address), &id);
    if (references && PyDict_DelItem(references, address) < 0) PyErr_Clear();
    Py_RETURN_NONE;
}

static PyMethodDef forget_def = {"_task_died", forget, METH_O, NULL};

/* The string id of the task's get_name(), TT_NO_ID when it has none;
 * `known` without a look-up when that is the name's (a task seen before
 * keeps its name: the look-up of a new one would cost more). */
static uint32_t task_name(PyObject *task, uint32_t known)
{
    if (!get_name_name && !(get_name_name = PyUnicode_InternFromString("get_name"))) return TT_NO_ID;
    PyObject *name = PyObject_CallMethodNoArgs(task, get_name_name);
    Py_ssize_t len = 0;
    const char *utf8 = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8AndSize(name, &len) : NULL;
    uint32_t name_id = TT_NO_ID;
    if (utf8 && known != TT_NO_ID && tt_definitions.string_lens[known] == (size_t)len &&
        memcmp(tt_definitions.strings[known], utf8, (size_t)len) == 0)
        name_id = known;
    else if (utf8)
        name_id = tt_registry_string(&tt_definitions, utf8, (size_t)len);
    Py_XDECREF(name);
    return name_id;
}

/* format.h: TASK, again for a task renamed. */
static void name_task(uint32_t id, uint32_t name_id)
{
    uint8_t rec[TT_RECORD_MAX_FIXED], *p = rec;
    *p++ = TT_DEF_TASK;
    p = tt_put_varint(p, id);
    p = tt_put_varint(p, name_id);
    tt_session_define(tt_measurement.session, rec, (size_t)(p - rec));
    task_names[id] = name_id;
}

/* Remembers `task` under a new id and defines it, named by its
 * get_name(); TT_NO_ID when it cannot be. */
static uint32_t define_task(PyObject *task)
{
    if (!known.slots && tt_ptrmap_init(&known) < 0) return TT_NO_ID;
    if (!references && !(references = PyDict_New())) return TT_NO_ID;
    if (task_count == task_cap) {
        uint32_t cap = task_cap ? 2 * task_cap : 64;
        uint32_t *names = realloc(task_names, cap * sizeof *names);
        if (names) task_names = names;
        uint8_t *named = realloc(task_named, cap);
        if (named) task_named = named;
        if (!names || !named) return TT_NO_ID;
        task_cap = cap;
    }
    uint32_t name_id = task_name(task, TT_NO_ID);
    PyObject *address = PyLong_FromVoidPtr(task);
    PyObject *callback = address ? PyCFunction_New(&forget_def, address) : NULL;
    PyObject *reference = callback ? PyWeakref_NewRef(task, callback) : NULL;
    int kept = reference && PyDict_SetItem(references, address, reference) == 0;
    Py_XDECREF(reference);
    Py_XDECREF(callback);
    Py_XDECREF(address);
    if (name_id == TT_NO_ID || !kept || tt_ptrmap_put(&known, task, task_count) < 0) return TT_NO_ID;
    name_task(task_count, name_id);
    task_named[task_count] = 0;
    return task_count++;
}

/* At a known task's later step, once: renamed since its first? */
static void check_name(PyObject *task, uint32_t id)
{
    task_named[id] = 1;
    uint32_t name_id = task_name(task, task_names[id]);
    if (name_id != TT_NO_ID && name_id != task_names[id]) name_task(id, name_id);
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
    uint32_t id = TT_NO_ID;
    if (task && !(known.slots && tt_ptrmap_get(&known, task, &id)))
        id = define_task(task);
    else if (task && !task_named[id])
        check_name(task, id);
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

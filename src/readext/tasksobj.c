/* tasksobj.c -- asyncio task lanes for Python: TaskLanes, the viewer's
 * tasks (tasklanes.h). Built with the GIL released; the windows it answers
 * are computed in C, Python only passes them on as JSON.
 */
#include "readext.h"

#include "tasklanes.h"

typedef struct {
    PyObject_HEAD
    tt_trace *trace;
    tt_tasks *tasks;
    PyObject *lanes, *awaits; /* made once */
} TaskLanesObject;

static const char *region_name(const tt_process *p, uint32_t region)
{
    return region == UINT32_MAX ? "" : p->regions[region < p->region_count ? region : p->region_count].name;
}

static PyObject *lane_list(const tt_tasks *tasks)
{
    PyObject *list = PyList_New((Py_ssize_t)tasks->lane_count);
    for (size_t i = 0; list && i < tasks->lane_count; i++) {
        const tt_task_lane *l = &tasks->lanes[i];
        const tt_process *p = tt_trace_process(tasks->trace, l->process);
        PyObject *item = Py_BuildValue(
            "{s:K,s:I,s:N,s:N,s:n,s:K,s:K,s:K,s:K,s:N,s:N}", "pid", (unsigned long long)p->pid, "task", l->task, "name",
            tt_readext_text(tt_task_lane_name(tasks, l)), "thread", tt_readext_text(p->threads[l->stream].name),
            "steps", (Py_ssize_t)l->step_count, "running_ns", (unsigned long long)l->running_ns, "suspended_ns",
            (unsigned long long)l->suspended_ns, "begin_ns", (unsigned long long)l->steps[0].begin, "end_ns",
            (unsigned long long)l->steps[l->step_count - 1].end, "coroutine",
            tt_readext_text(region_name(p, l->steps[0].region)), "top", tt_readext_text(region_name(p, l->top_region)));
        if (!item)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return list;
}

static PyObject *await_list(const tt_tasks *tasks)
{
    PyObject *list = PyList_New((Py_ssize_t)tasks->await_count);
    for (size_t i = 0; list && i < tasks->await_count; i++) {
        const tt_task_await *a = &tasks->awaits[i];
        const tt_process *p = tt_trace_process(tasks->trace, a->process);
        PyObject *item = Py_BuildValue("{s:K,s:N,s:K,s:K}", "pid", (unsigned long long)p->pid, "coroutine",
                                       tt_readext_text(region_name(p, a->region)), "suspended_ns",
                                       (unsigned long long)a->suspended_ns, "suspensions",
                                       (unsigned long long)a->suspensions);
        if (!item)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return list;
}

static PyObject *TaskLanes_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"experiment_dir", NULL};
    PyObject *path;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&:TaskLanes", kwlist, PyUnicode_FSConverter, &path)) return NULL;
    tt_trace *trace = NULL;
    tt_tasks *tasks = NULL;
    tt_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tt_trace_open(PyBytes_AS_STRING(path), &trace, &err);
    if (rc == 0) rc = tt_tasks_build(trace, &tasks, &err);
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    if (rc != 0) {
        if (trace) tt_trace_close(trace);
        return tt_raise(&err);
    }
    TaskLanesObject *self = (TaskLanesObject *)type->tp_alloc(type, 0);
    if (self) {
        self->trace = trace;
        self->tasks = tasks;
        self->lanes = lane_list(tasks);
        self->awaits = await_list(tasks);
        if (!self->lanes || !self->awaits) Py_CLEAR(self);
        return (PyObject *)self;
    }
    tt_tasks_free(tasks);
    tt_trace_close(trace);
    return NULL;
}

static void TaskLanes_dealloc(TaskLanesObject *self)
{
    Py_XDECREF(self->lanes);
    Py_XDECREF(self->awaits);
    tt_tasks_free(self->tasks);
    if (self->trace) tt_trace_close(self->trace);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* window(t0, t1, gap, limit): per lane, [begin, end, begin, end, ...] of its steps in [t0, t1], those
 * less than gap ns apart joined; at most `limit` steps a lane (then the lane's list ends with None). */
static PyObject *TaskLanes_window(TaskLanesObject *self, PyObject *args)
{
    unsigned long long t0, t1, gap;
    Py_ssize_t limit;
    if (!PyArg_ParseTuple(args, "KKKn:window", &t0, &t1, &gap, &limit)) return NULL;
    if (limit <= 0 || limit > 1000000) return PyErr_Format(PyExc_ValueError, "limit must be 1 to 1000000");
    uint64_t *pairs = PyMem_Malloc((size_t)limit * 2 * sizeof *pairs);
    if (!pairs) return PyErr_NoMemory();
    PyObject *result = PyList_New((Py_ssize_t)self->tasks->lane_count);
    for (size_t i = 0; result && i < self->tasks->lane_count; i++) {
        size_t n = tt_task_lane_window(&self->tasks->lanes[i], t0, t1, gap, pairs, (size_t)limit);
        size_t shown = n < (size_t)limit ? n : (size_t)limit;
        PyObject *list = PyList_New((Py_ssize_t)(2 * shown + (n > shown)));
        for (size_t k = 0; list && k < 2 * shown; k++) {
            PyObject *v = PyLong_FromUnsignedLongLong(pairs[k]);
            if (!v)
                Py_CLEAR(list);
            else
                PyList_SET_ITEM(list, (Py_ssize_t)k, v);
        }
        if (list && n > shown) PyList_SET_ITEM(list, (Py_ssize_t)(2 * shown), Py_NewRef(Py_None));
        if (!list)
            Py_CLEAR(result);
        else
            PyList_SET_ITEM(result, (Py_ssize_t)i, list);
    }
    PyMem_Free(pairs);
    return result;
}

static PyObject *TaskLanes_lanes(TaskLanesObject *self, void *closure)
{
    (void)closure;
    return Py_NewRef(self->lanes);
}

static PyObject *TaskLanes_awaits(TaskLanesObject *self, void *closure)
{
    (void)closure;
    return Py_NewRef(self->awaits);
}

static PyMethodDef TaskLanes_methods[] = {
    {"window", (PyCFunction)TaskLanes_window, METH_VARARGS,
     "window(t0, t1, gap, limit)\n--\n\nPer lane, its steps in [t0, t1] as [begin, end, ...], steps less than gap\n"
     "ns apart joined, at most limit (a lane cut there ends with None)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef TaskLanes_getset[] = {
    {"lanes", (getter)TaskLanes_lanes, NULL,
     "The tasks: pid, task, name, thread, steps, running_ns, suspended_ns, begin_ns, end_ns, coroutine (its first "
     "step's), top (the region it spent most in).",
     NULL},
    {"awaits", (getter)TaskLanes_awaits, NULL,
     "Await time per coroutine, most first: pid, coroutine, suspended_ns, suspensions.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject TaskLanesType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tracetop._reader.TaskLanes",
    .tp_basicsize = sizeof(TaskLanesObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "TaskLanes(experiment_dir)\n--\n\nThe asyncio tasks of an experiment as lanes: their steps stitched "
              "together, their suspended time, await time per coroutine.",
    .tp_new = TaskLanes_new,
    .tp_dealloc = (destructor)TaskLanes_dealloc,
    .tp_methods = TaskLanes_methods,
    .tp_getset = TaskLanes_getset,
};

int tt_readext_add_tasks(PyObject *module)
{
    if (PyType_Ready(&TaskLanesType) < 0) return -1;
    return tt_module_add(module, "TaskLanes", (PyObject *)&TaskLanesType);
}

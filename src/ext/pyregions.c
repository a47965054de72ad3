/* pyregions.c -- naming Python and C functions as regions, once each.
 *
 * A code object carries its region id in a co_extra slot (id + 1, so NULL
 * means "not seen yet"); a C function is known by its PyMethodDef, whose
 * region id sits in a pointer map. Either way a call after the first costs
 * a load and a compare, never a name lookup. Names follow PRODUCT.md:
 * `module:qualname` for Python, `module:name` or `Type.name` for C.
 */
#include "pyregions.h"

#include "format.h"
#include "measurement.h"
#include "objects.h"
#include "regionfilter.h"
#include "requicken.h"
#include "tasks.h"

Py_ssize_t tt_code_extra_index = -1;
tt_ptrmap tt_cfunction_regions;
tt_cfunction_cached tt_cfunction_cache[TT_CFUNCTION_CACHE_SETS][2];

static PyObject *own_module;    /* tracetop._tracetop */
static PyObject *exclude_paths; /* tuple of str */
static PyObject *main_name;     /* "__main__" */

int tt_pyregions_init(PyObject *module)
{
    tt_code_extra_index = tt_code_extra_request_index();
    if (tt_code_extra_index < 0) {
        PyErr_SetString(PyExc_RuntimeError, "tracetop: no free co_extra slot");
        return -1;
    }
    if (tt_ptrmap_init(&tt_cfunction_regions) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    own_module = module; /* borrowed: the module lives as long as the process */
    exclude_paths = PyTuple_New(0);
    main_name = PyUnicode_InternFromString("__main__");
    return exclude_paths && main_name ? 0 : -1;
}

int tt_pyregions_exclude(PyObject *paths)
{
    PyObject *tuple = PySequence_Tuple(paths);
    if (!tuple) return -1;
    Py_SETREF(exclude_paths, tuple);
    return 0;
}

int tt_pyregions_own_methods(PyMethodDef *methods)
{
    for (PyMethodDef *m = methods; m->ml_name; m++)
        if (tt_ptrmap_put(&tt_cfunction_regions, m, TT_STACK_OWN) < 0) {
            PyErr_NoMemory();
            return -1;
        }
    return 0;
}

static uint32_t intern_utf8(PyObject *str)
{
    Py_ssize_t len;
    const char *s = str && PyUnicode_Check(str) ? PyUnicode_AsUTF8AndSize(str, &len) : NULL;
    if (!s) {
        PyErr_Clear();
        s = "";
        len = 0;
    }
    return tt_registry_string(&tt_definitions, s, (size_t)len);
}

static int is_excluded(PyObject *filename)
{
    if (!PyUnicode_Check(filename)) return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(exclude_paths); i++)
        if (PyUnicode_Tailmatch(filename, PyTuple_GET_ITEM(exclude_paths, i), 0, PY_SSIZE_T_MAX, -1) == 1) return 1;
    return 0;
}

/* A region for a name built from parts; TT_STACK_SKIP when out of memory,
 * so the call is simply not recorded. */
static uint32_t define_region(PyObject *name, PyObject *file, long line, uint8_t kind)
{
    uint32_t name_id = intern_utf8(name);
    uint32_t file_id = intern_utf8(file);
    if (name_id == TT_NO_ID || file_id == TT_NO_ID) return TT_STACK_SKIP;
    uint32_t region = tt_registry_region(&tt_definitions, name_id, file_id, line > 0 ? (uint32_t)line : 0, kind);
    return region == TT_NO_ID ? TT_STACK_SKIP : tt_region_filter_defined(region);
}

/* Code whose resumes are awaits: a task's step begins with a coroutine's
 * (TT_CODE_COROUTINE); one resumed from any of these is inside a step. */
#define TASK_STEP_FLAGS (CO_COROUTINE | CO_ITERABLE_COROUTINE)
#define AWAITING_FLAGS (TASK_STEP_FLAGS | CO_ASYNC_GENERATOR)

/* The entry (pyregions.h) of `code`, whose module is globals' __name__. At a
 * code object's first sight, which a hook has (instrumented by then on
 * 3.12), its superinstructions are given back too (requicken.h). */
static uint64_t code_entry_in(PyObject *code, PyObject *globals)
{
    /* Naming may run Python code (attribute lookups); the exception state
     * of the traced program must come out as it went in. */
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    int own = tt_objects_own_begin();
    tt_requicken(code); /* its co_code, made for it, is tracetop's object */
    uint32_t region = TT_STACK_SKIP;
    PyObject *filename = PyObject_GetAttrString(code, "co_filename");
    if (filename && !is_excluded(filename)) {
        PyObject *qualname = PyObject_GetAttrString(code, "co_qualname");
        if (!qualname) {
            PyErr_Clear();
            qualname = PyObject_GetAttrString(code, "co_name");
        }
        PyObject *module = globals ? PyDict_GetItemString(globals, "__name__") : NULL;
        /* multiprocessing's spawned children run the main script as __mp_main__: it is __main__ of the
         * program, in them as in its first process, so that a merged profile adds their calls up. */
        if (module && PyUnicode_Check(module) && PyUnicode_CompareWithASCIIString(module, "__mp_main__") == 0)
            module = main_name;
        PyObject *line = PyObject_GetAttrString(code, "co_firstlineno");
        PyObject *name = PyUnicode_FromFormat("%S:%S", module && PyUnicode_Check(module) ? module : Py_None,
                                              qualname ? qualname : Py_None);
        if (name) region = define_region(name, filename, line ? PyLong_AsLong(line) : 0, TT_REGION_PYTHON);
        Py_XDECREF(name);
        Py_XDECREF(line);
        Py_XDECREF(qualname);
    }
    Py_XDECREF(filename);
    PyErr_Clear();
    uint64_t entry = region;
    int flags = ((PyCodeObject *)code)->co_flags;
    if (region < TT_STACK_OWN && (flags & AWAITING_FLAGS) && tt_tasks_mark_coroutine(region) == 0 &&
        (flags & TASK_STEP_FLAGS))
        entry |= TT_CODE_COROUTINE;
    void *extra = (void *)(uintptr_t)(entry + 1);
    if (tt_code_set_extra(code, tt_code_extra_index, extra) < 0) PyErr_Clear();
    tt_objects_own_end(own);
    PyErr_Restore(type, value, tb);
    return entry;
}

uint64_t tt_code_entry_slow(PyObject *code)
{
    return code_entry_in(code, PyEval_GetGlobals()); /* the starting frame's */
}

uint32_t tt_frame_region(PyFrameObject *frame)
{
    PyCodeObject *code = PyFrame_GetCode(frame);
    uint64_t entry;
    if (!tt_code_entry_cached((PyObject *)code, &entry)) {
        PyObject *globals = PyFrame_GetGlobals(frame);
        entry = code_entry_in((PyObject *)code, globals);
        Py_XDECREF(globals);
    }
    Py_DECREF(code);
    return (uint32_t)entry;
}

/* `Type.name` for a method: the qualified name of the descriptor found on
 * the instance's type, which names the class that defines it. */
/* A method's name, as its descriptor's __qualname__ gives it ("lock.acquire"),
 * whether the call came as a bound method or (sys.monitoring) as the
 * descriptor itself, so that both name it alike. */
static PyObject *descriptor_name(PyObject *descr, PyTypeObject *type, const char *ml_name)
{
    PyObject *qualname = descr ? PyObject_GetAttrString(descr, "__qualname__") : NULL;
    if (qualname && PyUnicode_Check(qualname)) return qualname;
    Py_XDECREF(qualname);
    PyErr_Clear();
    return PyUnicode_FromFormat("%s.%s", type->tp_name, ml_name);
}

static PyObject *method_name(PyObject *self, const char *ml_name)
{
    PyObject *descr = PyObject_GetAttrString((PyObject *)Py_TYPE(self), ml_name);
    PyObject *name = descriptor_name(descr, Py_TYPE(self), ml_name);
    Py_XDECREF(descr);
    return name;
}

static PyObject *cfunction_name(PyCFunctionObject *f)
{
    const char *ml_name = f->m_ml->ml_name;
    PyObject *self = PyCFunction_GET_SELF((PyObject *)f);
    if (self && PyType_Check(self)) return PyUnicode_FromFormat("%s.%s", ((PyTypeObject *)self)->tp_name, ml_name);
    if (self && !PyModule_Check(self)) return method_name(self, ml_name);
    PyObject *module = f->m_module;
    if (module && PyUnicode_Check(module)) return PyUnicode_FromFormat("%U:%s", module, ml_name);
    if (self) {
        const char *modname = PyModule_GetName(self);
        if (modname) return PyUnicode_FromFormat("%s:%s", modname, ml_name);
        PyErr_Clear();
    }
    return PyUnicode_FromFormat("builtins:%s", ml_name);
}

/* Puts def's region first in its set (pyregions.h): the entry there before goes
 * second, the second goes. */
static uint32_t cache_region(const PyMethodDef *def, uint32_t region)
{
    tt_cfunction_cached *set = tt_cfunction_cache_set(def);
    set[1] = set[0];
    set[0] = (tt_cfunction_cached){.def = def, .region = region};
    return region;
}

uint32_t tt_cfunction_region_slow(PyObject *func, PyMethodDef *def)
{
    if (!def) return TT_STACK_SKIP;
    uint32_t region;
    if (tt_ptrmap_get(&tt_cfunction_regions, def, &region)) return cache_region(def, region);
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    int own = tt_objects_own_begin();
    region = TT_STACK_SKIP;
    PyObject *name;
    if (PyCFunction_Check(func) && PyCFunction_GET_SELF(func) == own_module)
        region = TT_STACK_OWN;
    else if ((name = PyCFunction_Check(func) ? cfunction_name((PyCFunctionObject *)func)
                                             : descriptor_name(func, PyDescr_TYPE(func), def->ml_name))) {
        region = define_region(name, NULL, 0, TT_REGION_C);
        Py_DECREF(name);
    }
    PyErr_Clear();
    if (tt_ptrmap_put(&tt_cfunction_regions, def, region) < 0)
        region = TT_STACK_SKIP; /* and not cached: the next call tries again */
    else
        cache_region(def, region);
    tt_objects_own_end(own);
    PyErr_Restore(type, value, tb);
    return region;
}

/* pyregions.h -- the regions of Python and C functions (pyregions.c): a
 * code object's entry and a C function's region, found without a call
 * once known, as the hooks find them on every event.
 */
#ifndef TRACETOP_PYREGIONS_H
#define TRACETOP_PYREGIONS_H

#include "ext.h"

#pragma GCC visibility push(hidden)

/* Code objects whose file starts with one of these are tracetop's own and
 * never recorded. Replaces the previous list. */
int tt_pyregions_exclude(PyObject *paths);

/* The entry of a code object that is starting to run (the current
 * frame's): its region in the low 32 bits (TT_STACK_SKIP when it is not
 * recorded), TT_CODE_COROUTINE set when it is a coroutine's code (tasks.c).
 * Cached in the code object as entry + 1, so only the first call pays. */
#define TT_CODE_COROUTINE (UINT64_C(1) << 32)
uint64_t tt_code_entry_slow(PyObject *code);
extern Py_ssize_t tt_code_extra_index;

/* The code object's entry when it is known already, else UINT64_MAX, which
 * no entry is (tt_fast_enter declines it as it does any that is not a
 * recorded region's). */
static inline uint64_t tt_code_entry_known(PyObject *code)
{
    const tt_code_extra *e = (const tt_code_extra *)((PyCodeObject *)code)->co_extra;
    if (tt_likely(e != NULL && tt_code_extra_index < e->ce_size))
        return (uint64_t)((uintptr_t)e->ce_extras[tt_code_extra_index] - 1); /* cached as entry + 1; 0: none */
    return UINT64_MAX;
}

/* The same for the tt_fast_* paths, which run only where tracetop's slot is
 * the first (tt_fast_update): a code object with extras has that slot, as
 * CPython sizes them for every index handed out before (_PyCode_SetExtra,
 * 3.11 to 3.13), so there is nothing to test but that. */
static inline uint64_t tt_code_entry_first(PyObject *code)
{
    const tt_code_extra *e = (const tt_code_extra *)((PyCodeObject *)code)->co_extra;
    if (tt_likely(e != NULL)) return (uint64_t)((uintptr_t)e->ce_extras[0] - 1);
    return UINT64_MAX;
}

/* 1 with *entry set when the code object's entry is known already. */
static inline int tt_code_entry_cached(PyObject *code, uint64_t *entry)
{
    *entry = tt_code_entry_known(code);
    return *entry != UINT64_MAX;
}

static inline uint64_t tt_code_entry(PyObject *code)
{
    uint64_t entry;
    return tt_code_entry_cached(code, &entry) ? entry : tt_code_entry_slow(code);
}

static inline uint32_t tt_code_region(PyObject *code) { return (uint32_t)tt_code_entry(code); }

/* 1 with *region set when the code object's region is known already. */
static inline int tt_code_region_cached(PyObject *code, uint32_t *region)
{
    uint64_t entry;
    if (!tt_code_entry_cached(code, &entry)) return 0;
    *region = (uint32_t)entry;
    return 1;
}

/* The region of the code a frame runs, any thread's frame: its module is
 * named from the frame's globals, not from the current frame's. */
uint32_t tt_frame_region(PyFrameObject *frame);

/* The region of a C function called from Python: a builtin function or
 * bound method (PyCFunctionObject) or, from sys.monitoring, a method
 * descriptor; TT_STACK_OWN for tracetop's own functions, TT_STACK_SKIP for
 * other callables. Known by the PyMethodDef, whichever way it is called:
 * tt_cfunction_regions has them all, and a cache in front of it the ones
 * called lately, found with no load but the entry's (a map's probe loads
 * the map's fields, and multiplies). */
extern tt_ptrmap tt_cfunction_regions;
uint32_t tt_cfunction_region_slow(PyObject *func, PyMethodDef *def);

/* The cache: 2 ways a set, the one filled last first, so that two
 * functions called in turn that fall in one set are both found. A set is
 * chosen by the PyMethodDef's address over its size: the methods of one
 * table, one after the other in memory, take sets one after the other. */
typedef struct tt_cfunction_cached {
    const PyMethodDef *def; /* NULL: empty */
    uint32_t region;
} tt_cfunction_cached;

#define TT_CFUNCTION_CACHE_SETS 512

extern tt_cfunction_cached tt_cfunction_cache[TT_CFUNCTION_CACHE_SETS][2];

static inline tt_cfunction_cached *tt_cfunction_cache_set(const PyMethodDef *def)
{
    return tt_cfunction_cache[(uintptr_t)def / sizeof *def % TT_CFUNCTION_CACHE_SETS];
}

/* The cached entry of def, or NULL. */
static inline const tt_cfunction_cached *tt_cfunction_cached_entry(const PyMethodDef *def)
{
    const tt_cfunction_cached *set = tt_cfunction_cache_set(def);
    if (tt_likely(set[0].def == def)) return &set[0];
    return set[1].def == def ? &set[1] : NULL;
}

/* tt_method_def for the two exact types that nearly all are, without a
 * call: NULL for any other. Neither type's object is ever without its
 * PyMethodDef (CPython makes them from one), which the compiler is told:
 * the hook tests the type alone. */
static inline PyMethodDef *tt_method_def_exact(PyObject *func)
{
    PyMethodDef *def;
    if (tt_likely(Py_IS_TYPE(func, &PyCFunction_Type)))
        def = ((PyCFunctionObject *)func)->m_ml;
    else if (Py_IS_TYPE(func, &PyMethodDescr_Type))
        def = ((PyMethodDescrObject *)func)->d_method;
    else
        return NULL;
    if (!def) __builtin_unreachable();
    return def;
}

static inline PyMethodDef *tt_method_def(PyObject *func)
{
    PyMethodDef *def = tt_method_def_exact(func);
    if (tt_likely(def != NULL)) return def;
    return PyCFunction_Check(func) ? ((PyCFunctionObject *)func)->m_ml : NULL;
}

static inline uint32_t tt_cfunction_region(PyObject *func)
{
    PyMethodDef *def = tt_method_def(func);
    const tt_cfunction_cached *cached = def ? tt_cfunction_cached_entry(def) : NULL;
    return tt_likely(cached != NULL) ? cached->region : tt_cfunction_region_slow(func, def);
}

/* Marks the methods of one of tracetop's own types as TT_STACK_OWN. */
int tt_pyregions_own_methods(PyMethodDef *methods);

#pragma GCC visibility pop

#endif

/* ext.h -- what the parts of the CPython extension `tracetop._tracetop`
 * share. module.c owns the module; each other file adds its functions or
 * types through one tt_ext_add_* call made from the module's init.
 *
 * Everything here runs with the GIL held unless it says otherwise; the GIL
 * is what serialises the registry and stream creation.
 */
#ifndef TRACETOP_EXT_H
#define TRACETOP_EXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

#include "error.h"
#include "ptrmap.h"
#include "registry.h"
#include "session.h"
#include "stream.h"

/* tracetop._tracetop.TraceError: every failure the core reports reaches
 * Python as this exception, carrying the core's one-line message. */
extern PyObject *tt_TraceError;

/* Raises TraceError with the message in err; returns NULL for `return`. */
PyObject *tt_raise(const tt_error *err);

int tt_ext_add_hooks(PyObject *module);  /* hooks.c: start, stop, instrumenter */
int tt_ext_add_api(PyObject *module);    /* api.c: regions, parameters, counters */
int tt_ext_add_reader(PyObject *module); /* readerobj.c: Trace, profile, summary */

/* ---- the running measurement (hooks.c) ---- */

/* The session being recorded, NULL when none: every entry point checks it
 * first, so outside a measurement each is a no-op. */
extern tt_session *tt_active;

/* The user's switch (enable_recording / disable_recording). */
extern int tt_recording;

/* Strings and regions of this process; they outlive sessions. */
extern tt_registry tt_definitions;

extern __thread tt_stream *tt_tls_stream __attribute__((tls_model("initial-exec")));
tt_stream *tt_thread_stream_slow(void);

/* The calling thread's stream in the active session, created on its first
 * event; NULL when out of memory. */
static inline tt_stream *tt_thread_stream(void)
{
    tt_stream *s = tt_tls_stream;
    if (tt_likely(s && s->session == tt_active)) return s;
    return tt_thread_stream_slow();
}

/* ---- regions of Python and C functions (pyregions.c) ---- */

int tt_pyregions_init(PyObject *module);

/* Code objects whose file starts with one of these are tracetop's own and
 * never recorded. Replaces the previous list. */
int tt_pyregions_exclude(PyObject *paths);

/* The region of the code running in `frame`: TT_STACK_SKIP when it is not
 * recorded; cached in the code object, so only the first call pays. */
uint32_t tt_code_region_slow(PyFrameObject *frame, PyCodeObject *code);
extern Py_ssize_t tt_code_extra_index;

static inline uint32_t tt_code_region(PyFrameObject *frame)
{
    PyCodeObject *code = PyFrame_GetCode(frame);
    void *extra = NULL;
#if PY_VERSION_HEX >= 0x030C0000
    PyUnstable_Code_GetExtra((PyObject *)code, tt_code_extra_index, &extra);
#else
    _PyCode_GetExtra((PyObject *)code, tt_code_extra_index, &extra);
#endif
    uint32_t region = extra ? (uint32_t)((uintptr_t)extra - 1) : tt_code_region_slow(frame, code);
    Py_DECREF(code);
    return region;
}

/* The region of a C function called from Python (a PyCFunctionObject):
 * TT_STACK_OWN for tracetop's own functions. */
extern tt_ptrmap tt_cfunction_regions;
uint32_t tt_cfunction_region_slow(PyObject *func);

static inline uint32_t tt_cfunction_region(PyObject *func)
{
    uint32_t region;
    if (tt_likely(PyCFunction_Check(func)) &&
        tt_ptrmap_get(&tt_cfunction_regions, ((PyCFunctionObject *)func)->m_ml, &region))
        return region;
    return tt_cfunction_region_slow(func);
}

/* Marks the methods of one of tracetop's own types as TT_STACK_OWN. */
int tt_pyregions_own_methods(PyMethodDef *methods);

#endif

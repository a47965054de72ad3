/* pyshared.h -- what tracetop's two CPython extensions share: the measured
 * process's `tracetop._tracetop` (src/ext) and the trace reader's
 * `tracetop._reader` (src/readext).
 *
 * Both report a failure of the C subsystems the same way: TraceError with
 * the subsystem's one-line message (error.h). The class is made once, by
 * _tracetop; _reader takes the same object at its init, so that one
 * `except TraceError` catches both.
 */
#ifndef TRACETOP_PYSHARED_H
#define TRACETOP_PYSHARED_H

#ifndef PY_SSIZE_T_CLEAN
#define PY_SSIZE_T_CLEAN
#endif
#include <Python.h>

#include "error.h"

#pragma GCC visibility push(hidden)

/* tracetop._tracetop.TraceError, in whichever extension this is linked. */
extern PyObject *tt_TraceError;

/* Raises TraceError with the message in err; returns NULL for `return`. */
PyObject *tt_raise(const tt_error *err);

/* Adds value to module under name, taking a new reference; 0 or -1. */
static inline int tt_module_add(PyObject *module, const char *name, PyObject *value)
{
    return PyModule_AddObjectRef(module, name, value);
}

#pragma GCC visibility pop

#endif

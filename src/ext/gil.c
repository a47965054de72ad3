/* gil.c -- the GIL's holder from CPython's internal GIL state (see gil.h).
 *
 * The only file of the extension built with CPython's internal headers
 * (Py_BUILD_CORE): they define struct _gil_runtime_state, which lives in
 * the runtime (_PyRuntime.ceval.gil) up to 3.11 and in each interpreter
 * (interp->ceval.gil) from 3.12 on. Both fields are read with relaxed
 * atomic loads, as CPython's own ceval.c reads `locked` without a lock; a
 * stale answer is one sample's worth off, which sampling absorbs.
 */
#define Py_BUILD_CORE
#include <Python.h>

#if PY_VERSION_HEX >= 0x03090000 && PY_VERSION_HEX < 0x030E0000
#define TT_KNOWN_GIL 1
#if PY_VERSION_HEX >= 0x030C0000
#include <internal/pycore_interp.h>
#else
#include <internal/pycore_runtime.h>
#endif
#endif

#include "gil.h"

#ifdef TT_KNOWN_GIL
static struct _gil_runtime_state *gil;
#endif

const char *tt_gil_init(void)
{
#if !defined(TT_KNOWN_GIL)
    return "this Python's GIL state is unknown to tracetop: GIL shares are not recorded";
#elif defined(Py_GIL_DISABLED)
    return "this Python has no GIL (free-threaded build): GIL shares are not recorded";
#elif PY_VERSION_HEX >= 0x030C0000
    gil = PyInterpreterState_Get()->ceval.gil;
    return gil ? NULL : "this interpreter has no GIL state: GIL shares are not recorded";
#else
    gil = &_PyRuntime.ceval.gil;
    return NULL;
#endif
}

const void *tt_gil_holder(void)
{
#if !defined(TT_KNOWN_GIL) || defined(Py_GIL_DISABLED)
    return NULL;
#elif PY_VERSION_HEX >= 0x030D0000
    if (!gil || __atomic_load_n(&gil->locked, __ATOMIC_RELAXED) <= 0) return NULL;
    return __atomic_load_n(&gil->last_holder, __ATOMIC_RELAXED);
#else
    if (!gil || _Py_atomic_load_relaxed(&gil->locked) <= 0) return NULL;
    return (const void *)_Py_atomic_load_relaxed(&gil->last_holder);
#endif
}

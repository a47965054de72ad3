/* gil.c -- the GIL's holder from CPython's internal GIL state (see gil.h).
 *
 * The only file of the extension built with CPython's internal headers
 * (Py_BUILD_CORE): they define struct _gil_runtime_state, which lives in
 * the runtime up to 3.11 and in each interpreter from 3.12 on
 * (pycompat.h: tt_gil_state). Both fields are read with relaxed atomic
 * loads, as CPython's own ceval.c reads `locked` without a lock; a stale
 * answer is one sample's worth off, which sampling absorbs.
 */
#define Py_BUILD_CORE
#include "pycompat.h"

#include "gil.h"

static struct _gil_runtime_state *gil;

const char *tt_gil_init(void)
{
#if defined(Py_GIL_DISABLED)
    return "this Python has no GIL (free-threaded build): GIL shares are not recorded";
#else
    gil = tt_gil_state();
    return gil ? NULL : "this interpreter has no GIL state: GIL shares are not recorded";
#endif
}

const void *tt_gil_holder(void)
{
#if defined(Py_GIL_DISABLED)
    return NULL;
#else
    if (!gil || !tt_gil_locked(gil)) return NULL;
    return tt_gil_last_holder(gil);
#endif
}

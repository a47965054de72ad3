/* profilehook.h -- the profile and trace hooks (profilehook.c): the C
 * function a session records calls with through PyEval_SetProfile or
 * PyEval_SetTrace, and putting it in place.
 */
#ifndef TRACETOP_PROFILEHOOK_H
#define TRACETOP_PROFILEHOOK_H

#include "ext.h"

#pragma GCC visibility push(hidden)

/* The hook for the session starting (tt_measurement.hook): C calls
 * recorded or not (tt_measurement.record_c_calls), a filter in force or
 * not (tt_region_filter_in_force); each pair has its own, so that an event
 * pays no test of either. */
Py_tracefunc tt_profile_hook_choose(void);

/* Sets func (NULL: none) as the profile function, or the trace function
 * when tt_measurement.hook_kind is TT_HOOK_TRACE: of every thread, or of
 * the calling one alone. */
void tt_profile_hook_set(Py_tracefunc func, int every_thread);

/* Whether the C_RETURN of the C call running now reaches tracetop's hook. */
int tt_hook_sees_c_return(void);

#pragma GCC visibility pop

#endif

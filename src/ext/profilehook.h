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

/* Whether func is one of the hooks. */
int tt_profile_hook_is_ours(Py_tracefunc func);

/* Puts tt_measurement.hook in place as the profile function, or the trace
 * function when tt_measurement.hook_kind is TT_HOOK_TRACE: on every thread,
 * or on the calling one alone; the program's own function stays, called by
 * the hook. A thread an audit hook refuses it for (3.12+) is not measured. */
void tt_profile_hook_install(int every_thread);
/* The same on the calling thread: 0, or -1 with an exception. */
int tt_profile_hook_install_here(void);
/* Takes the hook away from every thread, the program's function back in
 * its place. */
void tt_profile_hook_remove(void);

/* Whether the C_RETURN of the C call running now reaches tracetop's hook. */
int tt_hook_sees_c_return(void);

#pragma GCC visibility pop

#endif

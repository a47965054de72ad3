/* ownprofile.h -- the program's own profile and trace functions see what
 * they see without tracetop, and tracetop goes on recording (ownprofile.c).
 */
#ifndef TRACETOP_OWNPROFILE_H
#define TRACETOP_OWNPROFILE_H

#include "ext.h"

#pragma GCC visibility push(hidden)

/* Set while a sys.setprofile call of the program waits for tracetop's next
 * event on this thread, its C_RETURN; tt_own_profile_apply then makes the
 * setting (0, or -1 with the setter's exception). */
extern __thread PyObject *tt_pending_setter __attribute__((tls_model("initial-exec")));
int tt_own_profile_apply(void);

/* Around tracetop's own setting of a slot. */
void tt_own_setting_begin(void);
void tt_own_setting_end(void);

/* sys.setprofile and sys.settrace stood in for while the hook is in place;
 * unwrap puts them back. */
int tt_own_profile_wrap(void);
void tt_own_profile_unwrap(void);

/* The function tracetop's hook calls, in thread t's profile slot (trace 0)
 * or trace slot (trace 1), with the slot's object: CPython's trampoline,
 * which calls a function set by sys.setprofile (settrace), or another
 * tool's C function. NULL until the program has set one while tracetop's
 * hook held the slot. */
Py_tracefunc tt_own_function(PyThreadState *t, int trace);

/* Once per process, with the hook's first start: tracetop's audit hook,
 * which sees other tools' C functions take the hook's slot (none where an
 * audit hook of the program refuses it). */
void tt_own_profile_watch(void);

/* A profile (trace) event where the program's function is in the slot of
 * tracetop's hook `hook` (obj, the slot's object): hook records it, then
 * the program's function gets it as without tracetop. */
int tt_own_forward(Py_tracefunc hook, PyObject *obj, PyFrameObject *frame, int what, PyObject *arg);

#pragma GCC visibility pop

#endif

/* ownprofile.h -- the program's own profile function sees what it sees
 * without tracetop (ownprofile.c): a sys.setprofile made while tracetop's
 * hook is in place waits for that call's C_RETURN.
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

/* sys.setprofile stood in for while the hook is in place; unwrap puts it
 * back. */
int tt_own_profile_wrap(void);
void tt_own_profile_unwrap(void);

#pragma GCC visibility pop

#endif

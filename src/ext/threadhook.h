/* threadhook.h -- the hook for threads threading starts (threadhook.c):
 * threading's bootstrap calls _thread_hook as a new thread's first profile
 * or trace event, which puts the session's C hook in its place.
 */
#ifndef TRACETOP_THREADHOOK_H
#define TRACETOP_THREADHOOK_H

#include "ext.h"

#pragma GCC visibility push(hidden)

/* _thread_hook, which threading's bootstrap hands sys.setprofile (settrace):
 * ownprofile.c's wrapper puts the hook in place for it at once. */
extern PyObject *tt_thread_hook;

/* Once, as the module is made: _thread_hook, a function of `module`.
 * 0, or -1 with an exception. */
int tt_threadhook_init(PyObject *module);

/* Gives threading _thread_hook for the threads it starts from now on, once
 * the program has imported it (tt_hooks_threading_imported, until then);
 * 0, or -1 with an exception. */
int tt_threadhook_on(void);
/* Gives threading back the hook it had before tt_threadhook_on. */
void tt_threadhook_off(void);

/* The program has just imported threading (threadwatch.c): the threads it
 * starts are measured as if it had been there when the hook was put in
 * place. May leave an exception set. */
void tt_hooks_threading_imported(void);

#pragma GCC visibility pop

#endif

/* gil.h -- who holds the GIL, read from another thread without taking it.
 *
 * As py-spy does from outside the process, the GIL's holder is read from
 * the interpreter's own GIL state: `locked` and `last_holder`, which
 * CPython updates as threads take and drop the GIL. The state's layout is
 * CPython's internal business, so gil.c knows it per version, from the
 * internal headers each Python installs, and a Python it does not know
 * (or one without a GIL) is said to be unable to tell, never guessed at.
 */
#ifndef TRACETOP_GIL_H
#define TRACETOP_GIL_H

/* With the GIL held, in the main interpreter: finds its GIL state. NULL
 * when it was found, else one line saying why this Python cannot tell. */
const char *tt_gil_init(void);

/* The PyThreadState holding the GIL now, as an address; NULL when none
 * does or tt_gil_init did not find the state. Any thread may call it. */
const void *tt_gil_holder(void);

#endif

/* objects.h -- the objects a program creates and destroys, counted by type
 * and by the region that created them (objects.c, `--objects`).
 */
#ifndef TRACETOP_OBJECTS_H
#define TRACETOP_OBJECTS_H

#include "ext.h"

#pragma GCC visibility push(hidden)

/* Counting objects in the active session: start is a no-op when counting
 * already or not measuring, -1 with TraceError where this Python cannot
 * count them; stop records what was counted when the calling thread has a
 * stream (else it is recorded later); end, as the session stops, records
 * everything and forgets it. */
int tt_objects_start(void);
void tt_objects_stop(void);
void tt_objects_end(void);
/* In a forked child: what the parent counted and had not recorded yet is
 * the parent's to record. */
void tt_objects_forked(void);
int tt_objects_counting(void);
/* An object CPython made only because tracetop measures (the arguments of
 * tracetop's gc and sys.monitoring callbacks): counted neither as made nor,
 * later, as destroyed. */
void tt_objects_disown(PyObject *op);
/* Between own_begin and own_end the calling thread runs tracetop's own
 * code for the program (naming a function at its first call, a thread at
 * its first event): what it makes is not counted. own_begin returns what
 * own_end takes back. */
int tt_objects_own_begin(void);
void tt_objects_own_end(int was);

#pragma GCC visibility pop

#endif

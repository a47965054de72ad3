/* gc.h -- garbage collections recorded (gc.c), through gc.callbacks. */
#ifndef TRACETOP_GC_H
#define TRACETOP_GC_H

#include "ext.h"

#pragma GCC visibility push(hidden)

/* Garbage collections are recorded from tt_gc_start (-1 with an exception
 * when gc.callbacks cannot take ours) to tt_gc_stop: while calls are. */
int tt_gc_start(void);
void tt_gc_stop(void);

#pragma GCC visibility pop

#endif

/* terminate.h -- SIGTERM completes the trace (terminate.c): a watcher
 * thread stops the measurement before the default action ends the process.
 */
#ifndef TRACETOP_TERMINATE_H
#define TRACETOP_TERMINATE_H

#include "ext.h"

#pragma GCC visibility push(hidden)

/* In a forked child: SIGTERM's default action back. */
void tt_terminate_forked(void);
/* Around a fork: the watcher thread ended (1: there was one), and started
 * again. */
int tt_terminate_pause(void);
void tt_terminate_resume(void);

#pragma GCC visibility pop

#endif

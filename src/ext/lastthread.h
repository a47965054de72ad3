/* lastthread.h -- a forked child whose forking thread was not its parent's
 * main thread ends when its last thread does, as without tracetop, and its
 * recording is finished first (lastthread.c).
 */
#ifndef TRACETOP_LASTTHREAD_H
#define TRACETOP_LASTTHREAD_H

#include "ext.h"

#pragma GCC visibility push(hidden)

/* pthread_atfork's, in the forking thread and then in the child: the child
 * notes whether its only thread will end as a thread rather than through
 * exit(). */
void tt_last_thread_before_fork(void);
void tt_last_thread_forked(void);

#pragma GCC visibility pop

#endif

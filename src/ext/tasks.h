/* tasks.h -- which asyncio task each resume of a coroutine belongs to
 * (tasks.c): a task's steps recorded as lanes of their own.
 */
#ifndef TRACETOP_TASKS_H
#define TRACETOP_TASKS_H

#include "ext.h"

#pragma GCC visibility push(hidden)

/* By region id, 1 for the code of a coroutine or an async generator,
 * tt_tasks_awaiting_cap of them: read by the tt_fast_* paths
 * (fastpath.h: tt_tasks_awaited). */
extern uint8_t *tt_tasks_awaiting;
extern uint32_t tt_tasks_awaiting_cap;

/* Marks `region` as the code of a coroutine, or an async generator, whose
 * resumes by another one are not a task's steps; 0, or -1 out of memory. */
int tt_tasks_mark_coroutine(uint32_t region);
/* A coroutine's code (entry has TT_CODE_COROUTINE) is about to be entered
 * in stream s: when no coroutine resumes it (the innermost open call is
 * none) and asyncio runs a task now, records TASK_RESUME and returns the
 * task's id, whose step the caller then enters (tt_stream_enter_step);
 * else TT_NO_ID. Only ever called for coroutines: plain calls pay the test
 * of the bit. */
uint32_t tt_task_resume(tt_stream *s, uint32_t region);
/* Forgets the tasks of the previous session (ids are per session) and
 * defines in `session` the coroutines known so far. */
void tt_tasks_reset(tt_session *session);

#pragma GCC visibility pop

#endif

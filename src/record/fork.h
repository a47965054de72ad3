/* fork.h -- a measured process that forks.
 *
 * fork() copies the whole process but only the calling thread. The child
 * thus holds a copy of the parent's session without its writer thread,
 * whose buffers hold events the parent is still writing, and whose files
 * are the parent's. The child never writes, frees or flushes any of it:
 * the buffers are the parent's pages, shared copy-on-write until written.
 * It either stops measuring, or starts a session of its own in the same
 * experiment (trace/<childpid>/, its PROCESS naming the parent as ppid)
 * and continues there the forking thread's stream: the regions that were
 * open when it forked (the call of fork itself among them) are entered
 * again at the start of the child's stream and stay open until they return
 * in the child.
 *
 * tt_fork_prepare, tt_fork_parent and tt_fork_child bracket fork(), as
 * pthread_atfork handlers: they hold the sessions' stream lists still
 * across it, so the child never finds one half changed.
 */
#ifndef TRACETOP_FORK_H
#define TRACETOP_FORK_H

#include <stdint.h>

#include "session.h"
#include "stream.h"

void tt_fork_prepare(void);
void tt_fork_parent(void);
void tt_fork_child(void);

/* In the child: closes the parent's trace files, which the child inherited
 * open, and leaves the rest of `parent` (the copy) alone for good. */
void tt_fork_abandon(tt_session *parent);

/* Enters in s, at `now`, the regions that are open in `from` (the forking
 * thread's stream of the abandoned session), innermost last; entries that
 * are not recorded (tt_stream_skip) are pushed as such, so that every
 * return in the child still finds its own entry. */
void tt_fork_continue_stream(tt_stream *s, const tt_stream *from, uint64_t now);

#endif

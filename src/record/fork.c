/* fork.c -- a measured process that forks (see fork.h). */
#include "fork.h"

#include <stdlib.h>
#include <unistd.h>

/* The writer snapshots the stream list and threads add to it or close their
 * streams under one lock; holding it across fork() means the child's copy
 * of the list is whole. Whoever holds it never waits for the forking
 * thread, so this cannot deadlock. */
void tt_fork_prepare(void) { tt_session_lock_streams(); }
void tt_fork_parent(void) { tt_session_unlock_streams(); }
void tt_fork_child(void) { tt_session_unlock_streams(); }

static void close_inherited(tt_stream *s)
{
    if (s->fd >= 0) close(s->fd);
    s->fd = -1;
}

void tt_fork_abandon(tt_session *parent)
{
    close_inherited(&parent->defs);
    for (tt_stream *s = parent->streams; s; s = s->next) close_inherited(s);
}

void tt_fork_continue_stream(tt_stream *s, const tt_stream *from, uint64_t now)
{
    uint32_t count;
    uint32_t *entries = tt_stream_entries(from, &count);
    if (!entries) return;
    for (uint32_t i = 0; i < count; i++) {
        if (entries[i] < TT_STACK_REGION)
            tt_stream_enter(s, now, entries[i]);
        else
            tt_stream_skip(s, entries[i]);
    }
    free(entries);
}

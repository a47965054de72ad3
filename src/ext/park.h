/* park.h -- measuring on with the hook away (park.c): each thread's open
 * calls kept across a switch off and on, so that what is still running when
 * the hook comes back closes at its true end, and what returned meanwhile
 * closes at the switch on. All with the GIL held, the active session set.
 */
#ifndef TRACETOP_PARK_H
#define TRACETOP_PARK_H

#include "ext.h"

/* The hook has just left every thread: notes each thread's frames and
 * what its stream's entries are. */
void tt_park(void);

/* The hook is back on every thread at `now`: plans, for each stream, what
 * to close and which frames entered meanwhile to skip, and has every
 * stream resynchronise (tt_session_suspend). off_since: when the
 * measurement went off (recording, `tracetop ctl`), 0 when only the
 * instrumenter was: from then to `now` is a gap the calls open leave out
 * (park.c). filtered_have_entries: the hook pushes an entry for a filtered
 * call (the profile and trace hooks; sys.monitoring switches filtered code
 * off instead). -1 when out of memory: then the streams close what they
 * had open. */
int tt_unpark(uint64_t now, uint64_t off_since, int filtered_have_entries);

/* For a stream behind its session's epoch, by its own thread: carries out
 * its plan, or closes everything open (tt_session_resync) when it has none. */
void tt_park_resync(tt_stream *s);

/* Everything noted and planned, dropped (a measurement starts or ends). */
void tt_park_forget(void);

#endif

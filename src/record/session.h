/* session.h -- one measurement of one process, from start to stop.
 *
 * A session owns the process's trace folder (EXP/trace/<pid>), the memory
 * budget (pool), the writer thread, the definitions stream and one event
 * stream per measured thread. Definitions come from a registry that lives
 * as long as the process; a session replays them first, so each session's
 * trace stands on its own.
 *
 * Threading: streams are created, and definitions made, by measured threads
 * serialised by the caller (the GIL); the definitions stream has its own
 * lock because the writer thread adds clock readings to it. A stream is
 * closed either by its thread's exit or by tt_session_stop, whichever comes
 * first. A stream its thread's exit closed is freed by the writer once all
 * its chunks are on disk (it leaves the list then, under the streams' lock),
 * so that a program starting a thread per request for days keeps the
 * streams of the threads alive alone; one the session's end closed is never
 * freed, so a thread that exits after its session ended never touches freed
 * memory.
 */
#ifndef TRACETOP_SESSION_H
#define TRACETOP_SESSION_H

#include <pthread.h>
#include <stdint.h>

#include "error.h"
#include "live.h"
#include "pool.h"
#include "registry.h"
#include "sampler.h"
#include "stream.h"
#include "writer.h"

typedef struct tt_session_config {
    const char *directory;         /* the experiment directory; must exist */
    uint64_t memory;               /* the budget for event buffers, in bytes */
    int compress;                  /* zstd per chunk, when built with it */
    const char *name;              /* what ran: script, module or "-c" */
    const char *const *attributes; /* key, value, key, value, ... */
    size_t attribute_count;        /* pairs */
    /* Called around a wait for the writer (budget used up), so the
     * extension can let other threads run meanwhile. May be NULL. */
    void (*blocking_begin)(void);
    void (*blocking_end)(void);
    /* Also hand every chunk to a live channel (live.h) for `tracetop top`. */
    int live;
    /* A ring (format.h): the bytes of event files on disk the writer keeps
     * to, dropping the oldest chunks of records (writer.h); 0: all kept. */
    uint64_t keep;
    /* With live: switches the measurement on or off, or counting objects
     * (a request of live.h: TT_LIVE_ON, TT_LIVE_OBJECTS) when a reader
     * asks, and shows the state it leaves (tt_live_answer with ticket 0,
     * tt_live_show_objects); or, asked TT_LIVE_DETACH, has the measurement
     * ended by a thread that may (never the writer). Called on the writer
     * thread, which answers `ticket` after it returns; it may answer it
     * itself first (tt_live_answer with ticket), as soon as what was asked
     * is true. NULL: requests are answered, the state unchanged. */
    void (*control)(int request, uint64_t ticket);
    /* Who holds the GIL now, read without taking it, as the gil_key of
     * the holder's stream (sampler.h); NULL when nobody does. Called on the
     * writer thread. NULL: the Python cannot tell. */
    const void *(*gil_holder)(void);
} tt_session_config;

typedef struct tt_session_stats {
    uint64_t events, bytes, chunks, waits, wait_ns;
    uint32_t streams;
    /* Times writing failed for a while and went on (writer.h), how long
     * it failed in all, and why the first time. */
    uint64_t stalls, stalled_ns;
    tt_error stall;
    int error_errno; /* tt_session_stop failed: the errno of its error, 0 when none */
    /* With keep: the chunks of events dropped (ring.h), and the errno of
     * the hole the file system could not punch, 0 when none. */
    uint64_t dropped;
    int keep_errno;
} tt_session_stats;

typedef struct tt_session {
    tt_session_config config;      /* strings owned by the caller during start only */
    char *trace_dir;               /* EXP/trace/<pid> */
    uint64_t trace_dev, trace_ino; /* of trace_dir as made: the writer opens no other */
    tt_registry *registry;
    tt_pool pool;
    tt_writer writer;
    tt_live *live; /* NULL without config.live */
    pthread_mutex_t defs_lock;
    tt_stream defs;
    tt_stream *streams; /* every event stream of this session, but those freed */
    uint32_t stream_count;
    uint64_t freed_events; /* the events of the streams freed, ... */
    uint32_t freed;        /* ... and how many (under the streams' lock) */
    /* Unique over all sessions and new at each tt_session_suspend: a stream
     * whose epoch is its session's has seen every call since it was last
     * resynchronised. */
    _Atomic uint64_t epoch;
    _Atomic uint64_t suspended_at; /* ticks the calls open at the last suspension close at */
    tt_sampler sampler;            /* the writer's */
} tt_session;

/* Creates EXP/trace/<pid> (and the live channel), starts the writer, writes
 * the process and clock definitions and replays the registry into the new
 * trace. */
int tt_session_start(const tt_session_config *config, tt_registry *registry, tt_session **out, tt_error *err);

/* A new event stream for the calling thread, named `name`. NULL when out of
 * memory. */
tt_stream *tt_session_new_stream(tt_session *s, uint64_t native_tid, const char *name, size_t name_len);

/* The calls a thread had open when the measurement began (tracetop attach),
 * outermost first: region ids, or TT_STACK_SKIP / TT_STACK_OWN for calls
 * not recorded. */
typedef struct tt_open_calls {
    uint64_t since; /* when the measurement began: the stream starts there */
    const uint32_t *stack;
    uint32_t depth;
} tt_open_calls;

/* The same, for a thread that was in the calls `open` (NULL: none) when the
 * measurement began: they are entered at open->since and defined as
 * OPEN_AT_START (format.h), so that their returns close them. */
tt_stream *tt_session_new_stream_open(tt_session *s, uint64_t native_tid, const char *name, size_t name_len,
                                      const tt_open_calls *open);

/* Calls stop being seen: the caller took its hook away. The regions each
 * thread has open are closed at `at` (the switch, or when the measurement
 * went off before it: park.h), lazily, when the thread records again
 * (tt_session_resync) or its stream is closed, so no thread is touched but
 * the caller's. Serialised with recording (the GIL). */
void tt_session_suspend(tt_session *s, uint64_t at);

/* For a stream whose epoch is behind its session's, by its own thread:
 * closes its open regions at the last suspension and brings it up to date,
 * so that returns of frames entered before are dropped, not mismatched. */
void tt_session_resync(tt_stream *stream);

/* Closes a stream at its thread's exit (no-op when already closed), and
 * hands it to the writer to free (see above) while its session runs: the
 * thread does not touch it again. */
void tt_session_thread_ended(tt_stream *stream);

/* For the writer's snapshots: the stream list and each stream's open or
 * closed state hold still while this lock is held. The writer only tries,
 * so it never waits on a thread that waits on the writer. */
int tt_session_trylock_streams(void);
void tt_session_unlock_streams(void);
/* The same lock, waited for: held across fork() (fork.h). */
void tt_session_lock_streams(void);

/* The measurement of the process was off from `from` to `to` (ticks): the
 * MEASUREMENT_OFF definition (format.h). */
void tt_session_define_gap(tt_session *s, uint64_t from, uint64_t to);

/* The registry's sink: appends one definition record to defs.tts. */
void tt_session_define(void *session, const uint8_t *record, size_t len);

/* Appends definition records for the writer, which must not wait: 0, or -1
 * (nothing appended) when the lock is taken or no chunk is free. */
int tt_session_try_define(tt_session *s, const uint8_t *records, size_t len);

/* The writer's periodic clock reading; skipped when it would have to wait. */
void tt_session_clock_sync(tt_session *s);

/* An ATTRIBUTE of the process (format.h), defined now: those of the config
 * at the start, and how the process ended (key "ended") as it stops. */
void tt_session_attribute(tt_session *s, const char *key, const char *value);

/* Closes every stream at the stop time (open regions are closed there),
 * records the process's end, writes everything, removes the live channel
 * and frees the session. -1 with err when writing ended early (writer.h):
 * stats are filled either way. */
int tt_session_stop(tt_session *s, tt_session_stats *stats, tt_error *err);

#endif

/* live.h -- the live channel: a measured process hands its events to
 * `tracetop top`, in another process, through shared memory.
 *
 * A process measured with --live owns one channel, the POSIX shared-memory
 * object /dev/shm/tracetop-<uid>-<pid>, created with mode 0600 so that only
 * its user can open it, and removed when the measurement stops. Readers find
 * channels by that name (tt_live_list), which also removes those whose
 * process is gone (a crash, SIGKILL, os._exit without tracetop).
 *
 * The producer is the process's writer thread: each pass it hands over what
 * it puts on disk, the same chunk bytes (format.h), and never waits on the
 * reader:
 *  - the definitions log: every definition record of the process, in order,
 *    as defs.tts holds them. Never dropped, so a reader that attaches late
 *    still knows every id. It grows within a fixed mapping (ftruncate).
 *  - the ring: slices of thread streams, one producer, any number of
 *    readers, each at its own position. A slice is the bytes
 *    [offset, offset + len) of chunk `seq` of stream `stream`; TT_LIVE_END
 *    marks the last slice of a chunk. The slices of a stream come in order:
 *    chunk by chunk, each from where the previous slice of it ended. The
 *    producer writes over what a slow reader has not read yet; that reader
 *    notices it was overrun, goes on at the newest slice and counts the
 *    bytes it skipped as its own drops (tt_live_dropped_bytes). Without a
 *    reader (none has shown a sign of life for TT_LIVE_READER_TIMEOUT_NS),
 *    nothing is sent: a full chunk is then lost to the channel (counted by
 *    the producer, seen by readers as a gap in seq). When a reader attaches
 *    or is overrun, every stream starts again at the beginning of its
 *    current chunk (offset 0), where its time is known (the chunk's
 *    base_ticks); the other readers see again what they had read of it.
 *  - control: a reader or `tracetop ctl` asks for measurement on or off, or
 *    (a process tracetop attached to) for the end of the measurement
 *    (tt_live_request); the producer polls each pass, has it done and
 *    answers with the state (tt_live_answer), which readers see.
 *
 * Events of a slice are decoded with records.h, times in the process's
 * ticks (its PROCESS definition gives the clock and the rate).
 *
 * Threads: the producer side (tt_live_create ... tt_live_close) is used by
 * one thread, the writer (and tt_live_answer by the program's threads,
 * serialised). A tt_live_view is used by one thread of a reader; a
 * process may hold several views of one channel. Shared
 * words are lock-free atomics, which work across processes. A child forked
 * from the producer's process leaves the channel alone: tt_live_answer
 * does nothing there, and tt_live_close only frees.
 */
#ifndef TRACETOP_LIVE_H
#define TRACETOP_LIVE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"

#define TT_LIVE_RING_SIZE (16u << 20) /* power of two */
#define TT_LIVE_DEFS_MAX (256u << 20) /* definitions beyond this end the channel */
/* A reader that has not shown a sign of life for this long is gone. */
#define TT_LIVE_READER_TIMEOUT_NS 1000000000ull

enum { TT_LIVE_END = 1 }; /* the last slice of its chunk */

/* What a reader asks for: measurement on (TT_LIVE_ON) or off (0); with
 * TT_LIVE_OBJECTS, counting objects on or off instead; or TT_LIVE_DETACH,
 * alone: end the measurement and leave the process (tracetop attach), the
 * channel then ends. */
enum { TT_LIVE_ON = 1, TT_LIVE_OBJECTS = 2, TT_LIVE_DETACH = 4 };
#define TT_LIVE_REQUEST_BITS 3u
#define TT_LIVE_REQUEST_MASK ((1u << TT_LIVE_REQUEST_BITS) - 1u)

/* What the process reports in its channel. */
typedef enum tt_live_state {
    TT_LIVE_RUNNING = 0,
    TT_LIVE_ENDED = 1,  /* the measurement stopped normally */
    TT_LIVE_BROKEN = 2, /* the definitions outgrew the channel: nothing more is sent */
} tt_live_state;

/* ---- the producer: the measured process ---- */

typedef struct tt_live tt_live;

/* Creates the channel of this process. `name` is what runs, `experiment`
 * its experiment directory (both shown by readers, cut if long). Fails when
 * shared memory cannot be had, or a channel of this pid exists. */
int tt_live_create(const char *name, const char *experiment, tt_live **out, tt_error *err);

/* Says the measurement ended and removes the channel (readers that have it
 * open keep their view of it). */
void tt_live_close(tt_live *l);

/* Called at the start of each writer pass: notes whether a reader is
 * attached, and starts every stream over when one attached or was overrun. */
void tt_live_begin_pass(tt_live *l);

/* The first `used` bytes of definitions chunk `seq`; full: the chunk is
 * complete. Called with each full chunk and with the chunk still being
 * filled, in seq order; what was sent already is not sent again. */
void tt_live_defs(tt_live *l, uint32_t seq, const uint8_t *data, uint32_t used, int full);

/* The same for chunk `seq` of event stream `stream`. Returns 1 when its
 * bytes are in the ring (or there was nothing to send), 0 when not: without
 * a reader, or its turn has not come. */
int tt_live_events(tt_live *l, uint32_t stream, uint32_t seq, uint64_t base_ticks, const uint8_t *data, uint32_t used,
                   int full);

/* 1 when a request came that tt_live_poll_request has not handed out:
 * a load, cheap enough to look often. */
int tt_live_requested(const tt_live *l);

/* A request not yet answered (TT_LIVE_ON, TT_LIVE_OBJECTS or TT_LIVE_DETACH
 * bits), with *ticket to answer; -1 when there is none. */
int tt_live_poll_request(tt_live *l, uint64_t *ticket);

/* The measurement is now on (1) or off (0), or as it was (-1), after
 * request `ticket` (0: a change made by the program itself). */
void tt_live_answer(tt_live *l, uint64_t ticket, int measuring);

/* Objects are now counted (1) or not (0), for readers to see. */
void tt_live_show_objects(tt_live *l, int counting);

/* ---- readers: `tracetop top`, `tracetop ctl` ---- */

typedef struct tt_live_view tt_live_view;

typedef struct tt_live_slice {
    uint32_t stream, seq, offset, len, flags;
    uint64_t base_ticks;
    const uint8_t *data; /* the view's copy: valid until its next tt_live_next */
} tt_live_slice;

/* The channel of process `pid`, when it is this user's and intact. */
int tt_live_open(pid_t pid, tt_live_view **out, tt_error *err);
void tt_live_view_close(tt_live_view *v); /* detaches first when attached */

/* 1 while the channel named for its pid is this one: not removed, nor
 * replaced by a later measurement of the process (or of a process that got
 * its pid). */
int tt_live_current(const tt_live_view *v);

pid_t tt_live_pid(const tt_live_view *v);
const char *tt_live_name(const tt_live_view *v);
const char *tt_live_experiment(const tt_live_view *v);
tt_live_state tt_live_process_state(const tt_live_view *v);
/* 1 when the process still runs (it may have died without ending). */
int tt_live_alive(const tt_live_view *v);
int tt_live_measuring(const tt_live_view *v);
int tt_live_objects(const tt_live_view *v); /* objects counted */
/* Bytes of events this reader did not get, exactly (slices' bytes, not the
 * ring's): those the producer could not send (since the channel was made)
 * and those written over before this reader read them. Bytes of a chunk
 * that was started over (after an attach or overrun) come again and may be
 * both dropped and read. */
uint64_t tt_live_dropped_bytes(const tt_live_view *v);

/* The definitions log so far: `*len` bytes of definition records. NULL
 * when the channel says it holds more than its file does (damaged). */
const uint8_t *tt_live_defs_log(const tt_live_view *v, size_t *len);

/* Becomes one of the channel's readers, reading from the newest slice on;
 * other readers go on as they were. */
void tt_live_attach(tt_live_view *v);
void tt_live_detach(tt_live_view *v);

/* Tells the producer a reader is alive; at least every
 * TT_LIVE_READER_TIMEOUT_NS / 2, or it stops sending. */
void tt_live_beat(tt_live_view *v);

/* The next slice: 1 with *s set, 0 when there is none for now, -1 when the
 * ring holds something that is not a slice (the channel is then unusable;
 * *why says so). Slices the producer wrote over before they were read are
 * skipped and counted. */
int tt_live_next(tt_live_view *v, tt_live_slice *s, const char **why);

/* Asks for measurement on (TT_LIVE_ON) or off (0), counting objects on or
 * off (TT_LIVE_OBJECTS added), or TT_LIVE_DETACH; returns the ticket that
 * tt_live_answered waits for. */
uint64_t tt_live_request(tt_live_view *v, int request);
int tt_live_answered(const tt_live_view *v, uint64_t ticket);

/* The pids of this user's live channels that are ready, stale ones removed
 * first (their count in *removed when not NULL). *pids is malloc'd. */
int tt_live_list(pid_t **pids, size_t *count, size_t *removed, tt_error *err);

#endif

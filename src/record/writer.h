/* writer.h -- the thread that puts a process's chunks on disk.
 *
 * Streams hand full chunks to the writer and go on at once (double
 * buffering); the writer compresses some (zstd: writer.c's compressor says
 * which) and appends each to its stream's file, then returns the buffer to
 * the pool.
 *
 * So that a process that dies (SIGKILL, a crash) loses at most the last
 * TT_WRITER_PERIOD_MS of each thread, the writer also puts the filled part of
 * every chunk still being filled on disk, as a PARTIAL chunk at the end of
 * its file; the full chunk later overwrites it. Within one pass it writes
 * the definitions after noting how far each event stream is, and before
 * writing those events, so every id the events on disk use is defined on
 * disk too.
 *
 * Between passes it samples the measured threads (sampler.h), every
 * TT_SAMPLE_PERIOD_MS.
 *
 * Files are opened relative to the trace directory the session made, never
 * through a link, and created where nothing lay (writer.c: open_file); a
 * pass keeps the files it writes open, TT_WRITER_OPEN_MAX at most, and
 * closes them all at its end, so that between passes tracetop holds no
 * descriptor of the program's.
 *
 * A write error stops the writing, never the program. One that may pass (no
 * descriptor free, a full disk, an I/O error: writer.c's transient) is tried
 * again with a back-off while chunks wait in the memory budget (the program
 * waits once that is used up, as for a slow disk); one that lasts
 * TT_WRITER_GIVE_UP_MS, or any other, ends the writing: chunks are then
 * returned unwritten, the trace ends at its last complete chunk, and the
 * error is reported at the end, with the pauses writing made (stalls).
 *
 * With a size to keep (session.h: keep), it drops the oldest chunks of
 * events to make room for each it writes (ring.h).
 *
 * A pass can be asked for and waited on (tt_writer_flush): at a session's
 * start, so that its definitions and file headers are on disk before the
 * program runs, and from a fatal signal's handler (crash.h), so that what
 * the threads recorded up to the crash is.
 */
#ifndef TRACETOP_WRITER_H
#define TRACETOP_WRITER_H

#include <pthread.h>
#include <stdint.h>

#include "error.h"
#include "pool.h"
#include "ring.h"

#define TT_WRITER_PERIOD_MS 50
/* How long a crashing process waits for the writer's last pass: the
 * crash may have left a lock the writer needs held. */
#define TT_WRITER_CRASH_WAIT_MS 2000
#define TT_WRITER_LIVE_POLL_MS 5 /* with --live: how often a reader's on/off request is looked for */
#define TT_WRITER_OPEN_MAX 16    /* trace files open at once during a pass */
#define TT_WRITER_BACKOFF_MAX_MS 1000
#define TT_WRITER_GIVE_UP_MS 10000
#define TT_WRITER_STOP_GIVE_UP_MS 1000

struct tt_session;

typedef struct tt_writer {
    struct tt_session *session;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    tt_chunk *queue_head, *queue_tail; /* full chunks, in submission order */
    int stopping;
    int pausing;
    int running; /* the thread is; not between pause and resume */

    uint8_t *scratch; /* one chunk header + a compressed payload */
    size_t scratch_cap;
    void *zctx;
    void *defs_zctx;       /* the definitions' and trees' compressor when zctx is NULL, made at first use */
    void *events_zctx;     /* the events' when zctx is NULL, made at first use (writer.c: compressor) */
    uint64_t records;      /* in the event chunks written so far */
    uint64_t besides;      /* bytes written besides their records: definitions, trees, headers */
    uint64_t foretold;     /* bytes of the trees still to come, as their nodes so far foretell */
    uint64_t defs_pending; /* bytes the definitions not yet written will take, as foretold */
    uint64_t saved;        /* bytes the events' compression saved */
    uint64_t last_sync_ns;

    uint64_t bytes, chunks;
    tt_error error;                             /* why the last write failed */
    int error_errno;                            /* its errno */
    int failed;                                 /* writing has ended for good (error says why) */
    int dirfd;                                  /* the trace directory, open during a pass, else -1 */
    struct tt_stream *open[TT_WRITER_OPEN_MAX]; /* whose files are open, least recently used first */
    unsigned open_count;
    tt_chunk *pending_head, *pending_tail; /* full chunks taken from the queue, not yet on disk */
    uint64_t stuck_since_ns;               /* when writing began to fail; 0 while it works */
    uint64_t retry_at_ns, backoff_ns;
    uint64_t stalls, stalled_ns; /* times writing failed and went on later, and for how long */
    tt_error stall;              /* why it failed the first of those times */
    tt_ring ring;                /* with keep (ring.size not 0): the chunks of events on disk */
    uint64_t defs_block;         /* with keep: defs.tts's st_blksize */
} tt_writer;

int tt_writer_start(tt_writer *w, struct tt_session *session, tt_error *err);

/* Queues a full chunk for writing. Thread-safe, never waits on the disk. */
void tt_writer_submit(tt_writer *w, tt_chunk *c);

/* Writes everything queued and everything streams hold, closes the files
 * and joins the thread. Returns -1 with the message when writing failed. */
int tt_writer_stop(tt_writer *w, tt_error *err);

/* Ends the thread after its current pass, and starts it again: around a
 * fork(), so that the process has no thread of tracetop's then (Python
 * 3.12 warns of fork() in a process with threads). Chunks submitted
 * meanwhile wait in the queue. Resume fails only when no thread can be
 * started; tt_writer_stop then does the writing itself, so the caller
 * should stop the session at once. */
void tt_writer_pause(tt_writer *w);
int tt_writer_resume(tt_writer *w, tt_error *err);

/* Wakes the writer for a pass and waits until one that began after the
 * call has ended. */
void tt_writer_flush(tt_writer *w);

/* The same from a signal handler, with async-signal-safe calls only, for
 * the process's running writer if any, TT_WRITER_CRASH_WAIT_MS at most. A
 * no-op on the writer's own thread. */
void tt_writer_flush_on_crash(void);

#endif

/* writer.c -- the writer thread: compress, append, snapshot, recycle. */
#include "writer.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "file.h"
#include "hash.h"
#include "session.h"
#include "thread.h"

#define TT_CLOCK_SYNC_PERIOD_NS 1000000000u

/* The pass the process's writer was last asked for and the last it ended
 * (numbered; wrapping), and the writer thread while one runs. Globals, not
 * in tt_writer: a signal handler reads them, and a process has one running
 * writer at a time. */
static atomic_uint flush_asked, flush_done;
static atomic_int writer_running;
static pthread_t writer_thread;

/* Notes why writing failed, with errno's words, and the errno itself,
 * which says whether to try again (transient). Returns -1. */
static int problem(tt_writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int problem(tt_writer *w, const char *fmt, ...)
{
    int cause = errno;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(w->error.message, sizeof w->error.message, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof w->error.message)
        snprintf(w->error.message + n, sizeof w->error.message - (size_t)n, ": %s", strerror(cause));
    w->error_errno = errno = cause;
    return -1;
}

/* Whether a failure may pass if the same call is made again a little later:
 * descriptors the program is short of for a moment (a server at its limit),
 * space that is freed again, an I/O error a network file system recovers
 * from. Anything else (a file replaced, a permission taken) does not. */
static int transient(int e)
{
    return e == EMFILE || e == ENFILE || e == ENOSPC || e == EDQUOT || e == EIO || e == ENOMEM || e == EAGAIN ||
           e == EINTR;
}

/* Whether `fd` is still the file of `dev` and `ino`. A program that closes
 * every descriptor (closerange) while the writer has one open, and then
 * opens a file of its own, gets the same number: the writer must neither
 * write into that file nor close it. Checked right before each use, which
 * leaves the window between the check and the call. */
static int same_file(int fd, uint64_t dev, uint64_t ino)
{
    struct stat st;
    return fd >= 0 && fstat(fd, &st) == 0 && (uint64_t)st.st_dev == dev && (uint64_t)st.st_ino == ino;
}

static int held(const tt_stream *s) { return same_file(s->fd, s->file_dev, s->file_ino); }

static int dir_held(const tt_writer *w) { return same_file(w->dirfd, w->session->trace_dev, w->session->trace_ino); }

/* The file's name in trace/<pid>/. */
static void file_name(const tt_stream *s, char *name, size_t cap)
{
    if (s->kind == TT_FILE_DEFS)
        snprintf(name, cap, "defs.tts");
    else
        snprintf(name, cap, "%u.tts", s->index);
}

/* Takes s out of the files open (its descriptor closed only when still
 * its own). */
static void close_fd(tt_writer *w, tt_stream *s)
{
    for (unsigned i = 0; i < w->open_count; i++)
        if (w->open[i] == s) {
            memmove(&w->open[i], &w->open[i + 1], (w->open_count - i - 1) * sizeof *w->open);
            w->open_count--;
            break;
        }
    if (held(s)) close(s->fd);
    s->fd = -1;
}

/* Ends a pass's use of the files: the writer holds no descriptor while it
 * sleeps, so a program that counts or closes its descriptors (closerange,
 * a daemon's start, a child's list of inherited ones) finds only its own
 * between passes. */
static void close_files(tt_writer *w)
{
    while (w->open_count) close_fd(w, w->open[0]);
    if (dir_held(w)) close(w->dirfd);
    w->dirfd = -1;
}

/* How often a call on a trace file is made again after the program took
 * its descriptor away: a program closes all its descriptors once in a while,
 * not in a loop. */
#define RETAKES 3

/* trace/<pid>/ for this pass, as the session made it: never a directory
 * put in its place, nor one reached through a link. */
static int open_dir(tt_writer *w)
{
    const char *path = w->session->trace_dir;
    for (int tries = 0; !dir_held(w); tries++) {
        w->dirfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (w->dirfd < 0) return problem(w, "cannot open %s", path);
        struct stat st;
        if (fstat(w->dirfd, &st) == 0 &&
            ((uint64_t)st.st_dev != w->session->trace_dev || (uint64_t)st.st_ino != w->session->trace_ino)) {
            close(w->dirfd);
            w->dirfd = -1;
            errno = ESTALE;
            return problem(w, "%s is no longer the directory the measurement made", path);
        }
        if (tries == RETAKES) return errno = EBADF, problem(w, "cannot open %s", path);
    }
    return 0;
}

/* Writes all of p at `at`: a short write is followed by one that fails and
 * says why (ENOSPC, EDQUOT, EFBIG), so errno always names the cause. */
static int pwrite_all(int fd, const uint8_t *p, size_t len, uint64_t at)
{
    while (len) {
        ssize_t n = pwrite(fd, p, len, (off_t)at);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            if (n == 0) errno = ENOSPC;
            return -1;
        }
        p += n;
        len -= (size_t)n;
        at += (uint64_t)n;
    }
    return 0;
}

static int retake(tt_writer *w, tt_stream *s, int *tries);

/* With a size to keep, what s's file takes now, for the ring: defs.tts
 * whole (and a block), an event file's partial chunk (ring.h). */
static void note_size(tt_writer *w, const tt_stream *s)
{
    if (!w->ring.size) return;
    if (s == &w->session->defs)
        tt_ring_defs(&w->ring, s->file_size + w->defs_block);
    else
        tt_ring_partial(&w->ring, s->index, s->file_size - s->file_end);
}

/* A chunk still being filled, as seen at the start of a pass. */
typedef struct snapshot {
    tt_stream *stream;
    tt_chunk *chunk;
    uint32_t used;
} snapshot;

/* Has s's file open for this pass (open_dir, then the file relative to it):
 * one of the TT_WRITER_OPEN_MAX open, the least recently used closed to
 * make room. The first open creates the file, owner-only, where nothing
 * lay (O_EXCL: never a file or link put there before), and puts its header;
 * a later one opens the same file again or fails (O_NOFOLLOW, and its
 * device and inode are the ones created: s->file_ino, 0 until then). */
static int open_file(tt_writer *w, tt_stream *s)
{
    if (held(s)) {
        for (unsigned i = 0; i < w->open_count; i++)
            if (w->open[i] == s) {
                memmove(&w->open[i], &w->open[i + 1], (w->open_count - i - 1) * sizeof *w->open);
                w->open[w->open_count - 1] = s;
                break;
            }
        return 0;
    }
    close_fd(w, s);
    if (open_dir(w) < 0) return -1;
    if (w->open_count == TT_WRITER_OPEN_MAX) close_fd(w, w->open[0]);
    char name[32];
    file_name(s, name, sizeof name);
    int made = s->file_ino != 0; /* inode numbers start at 1 */
    struct stat st;
    for (int tries = 0;; tries++) {
        int flags = O_WRONLY | O_CLOEXEC | O_NOFOLLOW | (made ? 0 : O_CREAT | O_EXCL);
        s->fd = dir_held(w) ? openat(w->dirfd, name, flags, TT_FILE_MODE) : (errno = EBADF, -1);
        if (s->fd >= 0 && fstat(s->fd, &st) == 0) break;
        /* EBADF: the directory's or the file's descriptor closed by the program. */
        if (errno != EBADF || tries == RETAKES || (s->fd < 0 && open_dir(w) < 0)) {
            problem(w, made ? "cannot open %s/%s" : "cannot create %s/%s", w->session->trace_dir, name);
            if (s->fd >= 0 && errno != EBADF) close(s->fd);
            s->fd = -1;
            return -1;
        }
        s->fd = -1;
    }
    if (made && ((uint64_t)st.st_dev != s->file_dev || (uint64_t)st.st_ino != s->file_ino)) {
        close(s->fd);
        s->fd = -1;
        errno = ESTALE;
        return problem(w, "%s/%s is no longer the file the measurement made", w->session->trace_dir, name);
    }
    s->file_dev = (uint64_t)st.st_dev;
    s->file_ino = (uint64_t)st.st_ino;
    w->open[w->open_count++] = s;
    if (s->file_size) return 0;
    uint8_t header[TT_FILE_HEADER_SIZE];
    tt_file_header_encode(header, s->kind, w->ring.size ? TT_FORMAT_VERSION_RING : TT_FORMAT_VERSION_PLAIN);
    int rc, tries = 0;
    do rc = held(s) ? pwrite_all(s->fd, header, sizeof header, 0) : (errno = EBADF, -1);
    while (rc < 0 && retake(w, s, &tries));
    if (rc < 0) {
        problem(w, "cannot write %s/%s", w->session->trace_dir, name);
        close_fd(w, s);
        /* Made again at the next try: the file is ours, and holds nothing. */
        if (dir_held(w)) unlinkat(w->dirfd, name, 0);
        s->file_dev = s->file_ino = 0;
        errno = w->error_errno;
        return -1;
    }
    s->file_end = s->file_size = TT_FILE_HEADER_SIZE;
    w->besides += TT_FILE_HEADER_SIZE;
    /* Out of memory, the ring keeps this file whole. */
    if (w->ring.size && s->kind == TT_FILE_EVENTS)
        tt_ring_file_made(&w->ring, s->index, s->file_dev, s->file_ino, (uint64_t)st.st_blksize);
    else if (w->ring.size)
        w->defs_block = (uint64_t)st.st_blksize;
    note_size(w, s);
    return 0;
}

/* After a call on s->fd failed: whether to make it again, on the file opened
 * anew, because the program closed the descriptor or took its number (EBADF,
 * as held() says it too); *tries counts the retakes. */
static int retake(tt_writer *w, tt_stream *s, int *tries)
{
    if (errno != EBADF || ++*tries > RETAKES) return 0;
    close_fd(w, s);
    return open_file(w, s) == 0;
}

/* Writes a at a_at, then b at b_at, in s's file while it is still its own
 * (held; EBADF when not). */
static int put_two(const tt_stream *s, const uint8_t *a, size_t a_len, uint64_t a_at, const uint8_t *b, size_t b_len,
                   uint64_t b_at)
{
    if (!held(s)) return errno = EBADF, -1;
    return pwrite_all(s->fd, a, a_len, a_at) < 0 ? -1 : pwrite_all(s->fd, b, b_len, b_at);
}

static int write_at(tt_writer *w, tt_stream *s, const uint8_t *header, const uint8_t *payload, uint32_t len)
{
    int rc, tries = 0;
    do rc = put_two(s, header, TT_CHUNK_HEADER_SIZE, s->file_end, payload, len, s->file_end + TT_CHUNK_HEADER_SIZE);
    while (rc < 0 && retake(w, s, &tries));
    if (rc < 0) {
        char name[32];
        file_name(s, name, sizeof name);
        return problem(w, "cannot write %s/%s", w->session->trace_dir, name);
    }
    return 0;
}

static int truncate_at_end(tt_writer *w, tt_stream *s)
{
    int rc, tries = 0;
    do rc = held(s) ? ftruncate(s->fd, (off_t)s->file_end) : (errno = EBADF, -1);
    while (rc < 0 && retake(w, s, &tries));
    if (rc < 0) {
        char name[32];
        file_name(s, name, sizeof name);
        return problem(w, "cannot truncate %s/%s", w->session->trace_dir, name);
    }
    return 0;
}

/* The hash of a full chunk's first `used` bytes: what its partial copies
 * hashed already (put_partial) is not hashed again. */
static uint64_t payload_hash(tt_chunk *c, uint32_t used)
{
    tt_stream *s = c->stream;
    if (!s->partial_used || c->seq != s->written_seq) return XXH3_64bits(c->data, used);
    XXH3_64bits_update(s->partial_hash, c->data + s->partial_used, used - s->partial_used);
    s->partial_used = used;
    return XXH3_64bits_digest(s->partial_hash);
}

/* What the trace may hold besides its events' records, per record, before
 * the writer pays the rest back by compressing events: BESIDES_HUNDREDTHS
 * hundredths of a byte. What it foretells of what is still to come: a node
 * of a call tree as it will be written, compressed (format.h: TREE_NODES;
 * 3.2 bytes on bench's workloads and pip's), and the definitions still
 * being filled as zstd will take them (to 0.4 of them). A trace less than
 * PAYBACK_MIN over (before any payback) is left as it is: a chunk compressed
 * for it would save many times what it is over, in a trace of a few KiB. */
#define BESIDES_HUNDREDTHS 5u
#define PAYBACK_MIN 3072u
#define TREE_NODE_BYTES 3u
#define DEFS_SHRINK 2u

/* Notes what the stream of chunk c has recorded up to it (its records, and
 * its tree's nodes until the tree itself comes), before c is written. */
static void account(tt_writer *w, const tt_chunk *c)
{
    tt_stream *s = c->stream;
    if (s == &w->session->defs || s->tree_seen) return;
    if (c->flags & TT_CHUNK_TREE) {
        w->foretold -= (uint64_t)s->tree_nodes_seen * TREE_NODE_BYTES;
        s->tree_seen = 1;
        return;
    }
    w->records += c->records - s->records_seen;
    s->records_seen = c->records;
    if (c->tree_nodes > s->tree_nodes_seen) {
        w->foretold += (uint64_t)(c->tree_nodes - s->tree_nodes_seen) * TREE_NODE_BYTES;
        s->tree_nodes_seen = c->tree_nodes;
    }
}

/* What compresses chunk c (NULL: none): the session's compressor
 * (compress) for every chunk; else the definitions and the call trees
 * (TREE chunks) always, and events only to pay back what else the trace
 * holds beyond BESIDES_HUNDREDTHS per record.
 *
 * Definitions are names and paths, a few dozen bytes per region written
 * once, which zstd takes to less than half in one pass; a tree is written
 * once per thread, at its end, a node per call path, whose parents, regions
 * and counts repeat. Events' own short forms take 2.0 to 2.4 bytes each,
 * and compressing them costs the writer some 65 to 90 instructions per byte
 * saved (bench/README.md: "Trace bytes per event: events compressed to pay
 * back"): most programs' definitions, trees and headers stay within the
 * allowance, and nothing of theirs is compressed. A program that imports
 * much (thousands of regions' names), has many call paths (a tree's node
 * each) or starts many threads (a file each) in few events goes past it;
 * then event chunks are compressed, as many as save what it is over (the
 * last may save more: a chunk is compressed whole). What is over is the same whatever the events' own size: a program
 * slowed down (valgrind, a loaded machine) writes longer forms and is not
 * compressed for them. */
static void *compressor(tt_writer *w, const tt_chunk *c)
{
    if (w->zctx) return w->zctx;
    if (c->stream == &w->session->defs || (c->flags & TT_CHUNK_TREE)) {
        if (!w->defs_zctx) w->defs_zctx = tt_compress_ctx_new(TT_ZSTD_DEFS_LEVEL);
        return w->defs_zctx;
    }
    uint64_t besides = w->besides + w->foretold + w->defs_pending + TT_CHUNK_HEADER_SIZE;
    uint64_t allowance = w->records * BESIDES_HUNDREDTHS / 100;
    if (besides < allowance + PAYBACK_MIN || besides <= allowance + w->saved) return NULL;
    if (!w->events_zctx) w->events_zctx = tt_compress_ctx_new(TT_ZSTD_EVENTS_LEVEL);
    return w->events_zctx;
}

/* A full chunk as it goes on disk: its header in w->scratch, the payload
 * (compressed after the header there, or the chunk's own data) in *payload,
 * what compressing events saved in *saved; the payload's size. Made again
 * for a chunk that could not be written the first time: what it notes of
 * the stream (account, payload_hash) is the same the second time. */
static uint32_t encode_chunk(tt_writer *w, tt_chunk *c, const uint8_t **payload, uint32_t *saved)
{
    uint32_t used = atomic_load_explicit(&c->used, memory_order_acquire);
    struct tt_chunk_header h = {.seq = c->seq, .base_ticks = c->base_ticks, .raw_size = used, .flags = c->flags};
    uint8_t *stored = w->scratch + TT_CHUNK_HEADER_SIZE;
    account(w, c);
    void *zctx = compressor(w, c);
    size_t n = zctx ? tt_compress(zctx, stored, w->scratch_cap - TT_CHUNK_HEADER_SIZE, c->data, used) : 0;
    *saved = n && zctx == w->events_zctx ? used - (uint32_t)n : 0;
    if (n) {
        h.codec = TT_CODEC_ZSTD;
        h.stored_size = (uint32_t)n;
        *payload = stored;
        tt_chunk_header_encode(w->scratch, &h, *payload);
    } else {
        h.codec = TT_CODEC_NONE;
        h.stored_size = used;
        *payload = c->data;
        tt_chunk_header_encode_hashed(w->scratch, &h, payload_hash(c, used));
    }
    return h.stored_size;
}

/* Appends a full chunk, encoded (encode_chunk), to its stream's file, open
 * (open_file). */
static int append_chunk(tt_writer *w, tt_chunk *c, const uint8_t *payload, uint32_t stored_size)
{
    tt_stream *s = c->stream;
    if (write_at(w, s, w->scratch, payload, stored_size) < 0) return -1;
    uint64_t end = s->file_end + TT_CHUNK_HEADER_SIZE + stored_size;
    /* A longer partial copy of this chunk may lie beyond: cut it off so a
     * reader after a crash never mistakes it for data. */
    if (s->file_size > end) {
        uint64_t was = s->file_end;
        s->file_end = end;
        if (truncate_at_end(w, s) < 0) {
            s->file_end = was;
            return -1;
        }
    }
    if (w->ring.size && s != &w->session->defs)
        tt_ring_chunk_written(&w->ring, s->index, s->file_end, end, c->base_ticks, (c->flags & TT_CHUNK_TREE) != 0);
    s->file_end = s->file_size = end;
    note_size(w, s);
    s->written_seq = c->seq + 1;
    s->partial_used = 0;
    w->bytes += TT_CHUNK_HEADER_SIZE + stored_size;
    w->besides += s == &w->session->defs || (c->flags & TT_CHUNK_TREE) ? TT_CHUNK_HEADER_SIZE + stored_size
                                                                       : TT_CHUNK_HEADER_SIZE;
    w->chunks++;
    return 0;
}

/* With a size to keep, makes room for `bytes` more of a file first
 * (ring.h), so that the files never take more than it, not even between
 * two passes. */
static void make_room(tt_writer *w, uint64_t bytes)
{
    if (w->ring.size && dir_held(w)) tt_ring_trim(&w->ring, w->dirfd, bytes);
}

static int write_chunk(tt_writer *w, tt_chunk *c)
{
    const uint8_t *payload;
    uint32_t saved;
    uint32_t stored_size = encode_chunk(w, c, &payload, &saved);
    if (open_file(w, c->stream) < 0) return -1;
    make_room(w, TT_CHUNK_HEADER_SIZE + stored_size);
    if (append_chunk(w, c, payload, stored_size) < 0) return -1;
    w->saved += saved;
    return 0;
}

/* Puts the filled part of a chunk still being filled after the end of its
 * file, without moving the end: the full chunk will overwrite it. Only the
 * bytes added since the last pass are hashed and written, so a slow thread
 * costs the writer nothing per pass. */
static int put_partial(tt_writer *w, const snapshot *snap)
{
    tt_stream *s = snap->stream;
    if (!s->partial_hash && !(s->partial_hash = XXH3_createState())) {
        errno = ENOMEM;
        return problem(w, "cannot hash the trace of stream %u", s->index);
    }
    if (s->partial_used == 0) XXH3_64bits_reset(s->partial_hash);
    const uint8_t *added = snap->chunk->data + s->partial_used;
    uint32_t added_len = snap->used - s->partial_used;
    XXH3_64bits_update(s->partial_hash, added, added_len);
    struct tt_chunk_header h = {.seq = snap->chunk->seq,
                                .base_ticks = snap->chunk->base_ticks,
                                .stored_size = snap->used,
                                .raw_size = snap->used,
                                .codec = TT_CODEC_NONE,
                                .flags = (uint8_t)(TT_CHUNK_PARTIAL | snap->chunk->flags)};
    uint8_t header[TT_CHUNK_HEADER_SIZE];
    tt_chunk_header_encode_hashed(header, &h, XXH3_64bits_digest(s->partial_hash));
    /* The new bytes first, then the header that covers them: a crash in
     * between leaves the previous header, which still matches its bytes. */
    uint64_t data_at = s->file_end + TT_CHUNK_HEADER_SIZE + s->partial_used;
    int rc, tries = 0;
    do rc = put_two(s, added, added_len, data_at, header, sizeof header, s->file_end);
    while (rc < 0 && retake(w, s, &tries));
    if (rc < 0) {
        /* The hash now covers bytes not on disk: the next try puts the
         * whole chunk so far, hashed anew. */
        s->partial_used = 0;
        char name[32];
        file_name(s, name, sizeof name);
        return problem(w, "cannot write %s/%s", w->session->trace_dir, name);
    }
    if (data_at + added_len > s->file_size) s->file_size = data_at + added_len;
    s->partial_used = snap->used;
    note_size(w, s);
    return 0;
}

static int write_partial(tt_writer *w, const snapshot *snap)
{
    tt_stream *s = snap->stream;
    if (snap->chunk->seq != s->written_seq || snap->used <= s->partial_used) return 0;
    if (open_file(w, s) < 0) return -1;
    uint64_t reach = TT_CHUNK_HEADER_SIZE + snap->used, now = s->file_size - s->file_end;
    make_room(w, reach > now ? reach - now : 0);
    return put_partial(w, snap);
}

/* Returns every pending chunk to the pool unwritten. */
static void drop_pending(tt_writer *w)
{
    while (w->pending_head) {
        tt_chunk *c = w->pending_head;
        w->pending_head = c->next;
        tt_pool_put(&w->session->pool, c);
    }
    w->pending_tail = NULL;
}

/* Stops writing for good: from here on chunks are only recycled, the
 * program goes on, and the trace ends at its last complete chunk;
 * w->error says why. */
static void give_up(tt_writer *w)
{
    w->failed = 1;
    w->stuck_since_ns = 0;
    drop_pending(w);
}

/* After a write failed, with w->error and w->error_errno saying why: the
 * pass ends there, what it had still to write stays pending, and it is
 * tried again after a back-off (from TT_WRITER_PERIOD_MS, doubled up to
 * TT_WRITER_BACKOFF_MAX_MS) while the cause may pass; meanwhile the program
 * goes on into its memory budget, and waits when that is used up, as for a
 * slow disk. Gives up when the cause is not transient, or has lasted
 * TT_WRITER_GIVE_UP_MS (TT_WRITER_STOP_GIVE_UP_MS once the program has
 * ended: its exit waits for it). */
static void stuck(tt_writer *w, uint64_t now, int stopping)
{
    uint64_t limit_ms = stopping ? TT_WRITER_STOP_GIVE_UP_MS : TT_WRITER_GIVE_UP_MS;
    if (!w->stuck_since_ns) {
        w->stuck_since_ns = now;
        w->backoff_ns = TT_WRITER_PERIOD_MS * 1000000u;
        if (!w->stalls++) w->stall = w->error;
    } else if (w->backoff_ns < TT_WRITER_BACKOFF_MAX_MS * 1000000u) {
        w->backoff_ns *= 2;
    }
    w->retry_at_ns = now + w->backoff_ns;
    if (!transient(w->error_errno) || now - w->stuck_since_ns >= limit_ms * 1000000u) give_up(w);
}

/* Writes the pending chunks of the definitions (defs) or of the events
 * (!defs), in order, each returned to the pool once on disk; -1 at the
 * first that cannot be: it and those after it stay pending. */
static int write_pending(tt_writer *w, int defs)
{
    tt_chunk **link = &w->pending_head, *prev = NULL;
    while (*link) {
        tt_chunk *c = *link;
        if ((c->stream == &w->session->defs) != defs) {
            prev = c;
            link = &c->next;
            continue;
        }
        if (write_chunk(w, c) < 0) return -1;
        *link = c->next;
        if (w->pending_tail == c) w->pending_tail = prev;
        tt_pool_put(&w->session->pool, c);
    }
    return 0;
}

/* Hands what this pass puts on disk to the live channel too, definitions
 * first as on disk. */
static void publish_live(tt_writer *w, tt_chunk *queued, const snapshot *defs, const snapshot *snaps, size_t n)
{
    tt_session *session = w->session;
    tt_live *live = session->live;
    tt_live_begin_pass(live);
    for (tt_chunk *c = queued; c; c = c->next)
        if (c->stream == &session->defs)
            tt_live_defs(live, c->seq, c->data, atomic_load_explicit(&c->used, memory_order_acquire), 1);
    if (defs->chunk) tt_live_defs(live, defs->chunk->seq, defs->chunk->data, defs->used, 0);
    /* A stream's TREE chunks are no events: its end says it all there. */
    for (tt_chunk *c = queued; c; c = c->next)
        if (c->stream != &session->defs && !(c->flags & TT_CHUNK_TREE))
            tt_live_events(live, c->stream->index, c->seq, c->base_ticks, c->data,
                           atomic_load_explicit(&c->used, memory_order_acquire), 1);
    for (size_t i = 0; i < n; i++)
        if (!(snaps[i].chunk->flags & TT_CHUNK_TREE))
            tt_live_events(live, snaps[i].stream->index, snaps[i].chunk->seq, snaps[i].chunk->base_ticks,
                           snaps[i].chunk->data, snaps[i].used, 0);
}

/* Asks the program to do what a live reader asked, and says what it did. */
static void answer_live(tt_writer *w)
{
    tt_live *live = w->session->live;
    uint64_t ticket;
    int request = tt_live_poll_request(live, &ticket);
    if (request < 0) return;
    if (w->session->config.control) w->session->config.control(request, ticket);
    tt_live_answer(live, ticket, -1);
}

static void take_snapshot(tt_stream *s, snapshot *snap)
{
    snap->stream = s;
    snap->chunk = atomic_load_explicit(&s->chunk, memory_order_acquire);
    snap->used = snap->chunk ? atomic_load_explicit(&snap->chunk->used, memory_order_acquire) : 0;
}

static void finish_file(tt_writer *w, tt_stream *s);

/* Frees the streams whose threads ended (session.h) once every chunk they
 * took is on disk: none of them is pending, queued or in a snapshot any
 * more. Called in a pass whose writes all succeeded, before it closes its
 * files. */
static void free_ended(tt_writer *w)
{
    if (!tt_session_trylock_streams()) return;
    for (tt_stream **at = &w->session->streams; *at;) {
        tt_stream *s = *at;
        if (!s->ended || atomic_load_explicit(&s->chunk, memory_order_acquire) || s->written_seq != s->next_seq) {
            at = &s->next;
            continue;
        }
        *at = s->next;
        w->session->freed_events += s->events;
        w->session->freed++;
        finish_file(w, s);
        close_fd(w, s);
        free(s);
    }
    tt_session_unlock_streams();
}

/* One pass: everything pending, then what the streams hold; `queued` (what
 * was submitted since the last pass) joins the pending chunks. */
static void pass(tt_writer *w, tt_chunk *queued, snapshot **snaps, size_t *snap_cap, uint64_t now, int stopping)
{
    tt_session *session = w->session;
    size_t n = 0;
    /* First note how far each event stream is... */
    if (tt_session_trylock_streams()) {
        for (tt_stream *s = session->streams; s; s = s->next) {
            if (n == *snap_cap) {
                size_t cap = *snap_cap ? *snap_cap * 2 : 64;
                snapshot *grown = realloc(*snaps, cap * sizeof *grown);
                if (!grown) break;
                *snaps = grown;
                *snap_cap = cap;
            }
            take_snapshot(s, &(*snaps)[n]);
            if ((*snaps)[n].chunk) n++;
        }
        tt_session_unlock_streams();
    }
    snapshot defs;
    take_snapshot(&session->defs, &defs);
    w->defs_pending = defs.used / DEFS_SHRINK;
    if (session->live) publish_live(w, queued, &defs, *snaps, n);
    if (queued) {
        if (w->pending_tail)
            w->pending_tail->next = queued;
        else
            w->pending_head = queued;
        while (queued->next) queued = queued->next;
        w->pending_tail = queued;
    }
    if (w->failed) {
        drop_pending(w);
        return;
    }
    if (w->stuck_since_ns && now < w->retry_at_ns) return;
    /* ... then write the definitions, which by now include every id those
     * events use, then the events; the first failure ends the pass. */
    int rc = write_pending(w, 1);
    if (rc == 0 && defs.chunk) rc = write_partial(w, &defs);
    if (rc == 0) rc = write_pending(w, 0);
    for (size_t i = 0; rc == 0 && i < n; i++) rc = write_partial(w, &(*snaps)[i]);
    if (rc == 0) free_ended(w);
    close_files(w);
    if (rc < 0) {
        stuck(w, now, stopping);
    } else if (w->stuck_since_ns) {
        w->stalled_ns += now - w->stuck_since_ns;
        w->stuck_since_ns = 0;
    }
}

/* How long the writer may sleep: until the next sample or pass is due,
 * and with a live channel at most TT_WRITER_LIVE_POLL_MS, so that a
 * reader's request (measurement on or off) is acted on within that time,
 * not a whole period. */
static uint64_t sleep_ns(const tt_writer *w, uint64_t due_ns)
{
    const uint64_t poll_ns = TT_WRITER_LIVE_POLL_MS * 1000000u;
    return w->session->live && due_ns > poll_ns ? poll_ns : due_ns;
}

static void sleep_until(uint64_t when_ns)
{
    uint64_t now = tt_monotonic_ns();
    if (when_ns <= now) return;
    struct timespec t = {(time_t)((when_ns - now) / 1000000000u), (long)((when_ns - now) % 1000000000u)};
    nanosleep(&t, NULL);
}

static void *writer_main(void *arg)
{
    tt_writer *w = arg;
    snapshot *snaps = NULL;
    size_t snap_cap = 0;
    uint64_t next_pass = 0, wait_ns = 0;
    for (;;) {
        pthread_mutex_lock(&w->lock);
        if (!w->queue_head && !w->stopping && !w->pausing && wait_ns &&
            atomic_load(&flush_asked) == atomic_load(&flush_done)) {
            struct timespec deadline;
            clock_gettime(CLOCK_REALTIME, &deadline);
            deadline.tv_nsec += (long)wait_ns;
            while (deadline.tv_nsec >= 1000000000L) {
                deadline.tv_sec++;
                deadline.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&w->wake, &w->lock, &deadline);
        }
        unsigned asked = atomic_load(&flush_asked);
        tt_chunk *queued = w->queue_head;
        w->queue_head = w->queue_tail = NULL;
        int stopping = w->stopping, pausing = w->pausing;
        pthread_mutex_unlock(&w->lock);

        /* Samples are due more often than passes (sampler.h); a pass is
         * due every TT_WRITER_PERIOD_MS, or at once for a full chunk. */
        uint64_t now = tt_monotonic_ns();
        uint64_t to_sample = tt_sampler_tick(&w->session->sampler, w->session, now);
        int requested = w->session->live && tt_live_requested(w->session->live);
        if (!queued && !stopping && !pausing && !requested && asked == atomic_load(&flush_done) && now < next_pass) {
            wait_ns = sleep_ns(w, next_pass - now < to_sample ? next_pass - now : to_sample);
            continue;
        }
        next_pass = now + TT_WRITER_PERIOD_MS * 1000000u;
        wait_ns = sleep_ns(w, to_sample < TT_WRITER_PERIOD_MS * 1000000u ? to_sample : TT_WRITER_PERIOD_MS * 1000000u);

        pass(w, queued, &snaps, &snap_cap, now, stopping);
        atomic_store(&flush_done, asked);
        if (stopping) {
            /* tt_session_stop submitted the last chunks before asking us to
             * stop; one more look catches a late thread exit. Chunks still
             * pending wait for their next try (stuck). */
            pthread_mutex_lock(&w->lock);
            int done = !w->queue_head;
            pthread_mutex_unlock(&w->lock);
            if (done && !w->pending_head) break;
            if (done) sleep_until(w->retry_at_ns);
            continue;
        }
        if (pausing) break;
        if (w->session->live) answer_live(w);
        if (now - w->last_sync_ns >= TT_CLOCK_SYNC_PERIOD_NS) {
            w->last_sync_ns = now;
            tt_session_clock_sync(w->session);
        }
    }
    free(snaps);
    return NULL;
}

static int start_thread(tt_writer *w)
{
    int rc = tt_thread_create(&w->thread, NULL, writer_main, w);
    if (rc == 0) {
        writer_thread = w->thread;
        atomic_store(&writer_running, 1);
    }
    return rc;
}

static void join_thread(tt_writer *w)
{
    atomic_store(&writer_running, 0);
    pthread_join(w->thread, NULL);
}

/* Waits, polling, until the pass numbered `asked` has ended, the writer has
 * stopped or `timeout_ms` have passed. nanosleep is async-signal-safe. */
static void wait_for_pass(unsigned asked, unsigned timeout_ms)
{
    const struct timespec step = {0, 200000};
    for (unsigned waited = 0; waited < timeout_ms * 5; waited++) {
        if ((int)(atomic_load(&flush_done) - asked) >= 0 || !atomic_load(&writer_running)) return;
        nanosleep(&step, NULL);
    }
}

void tt_writer_flush(tt_writer *w)
{
    unsigned asked = atomic_fetch_add(&flush_asked, 1) + 1;
    pthread_mutex_lock(&w->lock);
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    wait_for_pass(asked, TT_WRITER_CRASH_WAIT_MS);
}

void tt_writer_flush_on_crash(void)
{
    if (!atomic_load(&writer_running) || pthread_equal(pthread_self(), writer_thread)) return;
    /* No wake-up: a condition variable is no signal handler's to touch.
     * The writer wakes by itself every TT_WRITER_PERIOD_MS. */
    wait_for_pass(atomic_fetch_add(&flush_asked, 1) + 1, TT_WRITER_CRASH_WAIT_MS);
}

int tt_writer_start(tt_writer *w, struct tt_session *session, tt_error *err)
{
    memset(w, 0, sizeof *w);
    w->dirfd = -1;
    w->session = session;
    w->scratch_cap = TT_CHUNK_HEADER_SIZE + tt_compress_bound(TT_CHUNK_PAYLOAD_SIZE);
    w->scratch = malloc(w->scratch_cap);
    if (!w->scratch) return tt_fail(err, "out of memory");
    w->zctx = session->config.compress ? tt_compress_ctx_new(TT_ZSTD_CHUNK_LEVEL) : NULL;
    w->ring.size = session->config.keep;
    w->last_sync_ns = tt_monotonic_ns();
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->wake, NULL);
    int rc = start_thread(w);
    if (rc != 0) {
        errno = rc;
        tt_compress_ctx_free(w->zctx);
        free(w->scratch);
        return tt_fail_errno(err, "cannot start the writer thread");
    }
    w->running = 1;
    return 0;
}

void tt_writer_pause(tt_writer *w)
{
    if (!w->running) return;
    pthread_mutex_lock(&w->lock);
    w->pausing = 1;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    join_thread(w);
    w->running = 0;
}

int tt_writer_resume(tt_writer *w, tt_error *err)
{
    w->pausing = 0;
    int rc = start_thread(w);
    if (rc != 0) {
        errno = rc;
        return tt_fail_errno(err, "cannot start the writer thread again");
    }
    w->running = 1;
    return 0;
}

void tt_writer_submit(tt_writer *w, tt_chunk *c)
{
    tt_stream *s = c->stream;
    c->next = NULL;
    c->records = s->events;
    c->tree_nodes = s->kind == TT_FILE_EVENTS && !s->tree.lost ? s->tree.count : 0;
    pthread_mutex_lock(&w->lock);
    if (w->queue_tail)
        w->queue_tail->next = c;
    else
        w->queue_head = c;
    w->queue_tail = c;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
}

/* Cuts off a stream's partial chunk after its last full one, whose full
 * form never came (its thread's last chunk is always submitted full). */
static void finish_file(tt_writer *w, tt_stream *s)
{
    XXH3_freeState(s->partial_hash);
    s->partial_hash = NULL;
    if (w->failed || s->file_size <= s->file_end) return;
    if (open_file(w, s) < 0 || truncate_at_end(w, s) < 0) give_up(w);
}

int tt_writer_stop(tt_writer *w, tt_error *err)
{
    pthread_mutex_lock(&w->lock);
    w->stopping = 1;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    if (w->running)
        join_thread(w);
    else
        writer_main(w); /* paused, and its thread could not start again */

    finish_file(w, &w->session->defs);
    for (tt_stream *s = w->session->streams; s; s = s->next) finish_file(w, s);
    close_files(w);
    tt_compress_ctx_free(w->zctx);
    tt_compress_ctx_free(w->defs_zctx);
    tt_compress_ctx_free(w->events_zctx);
    tt_ring_free(&w->ring);
    free(w->scratch);
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->wake);
    if (w->failed) {
        if (err) *err = w->error;
        return -1;
    }
    return 0;
}

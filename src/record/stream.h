/* stream.h -- one thread's event stream: the hot path of the measurement.
 *
 * A stream belongs to one thread, which alone appends records to its
 * current chunk; nothing here locks, allocates or calls the system except
 * when a chunk is full (once per TT_CHUNK_PAYLOAD_SIZE bytes), when the
 * stream hands the chunk to the writer and takes a fresh one.
 *
 * The stream keeps the stack of open calls, so that it can promise its
 * readers well nesting: a call that is not recorded (filtered, recording
 * off, tracetop's own) is pushed as TT_STACK_SKIP or TT_STACK_OWN and its
 * return is dropped with it; a return with nothing open (a frame entered
 * before measurement began) is dropped; and closing a stream closes what is
 * still open. The recorded calls open are its call tree's current node and
 * that node's ancestors (calltree.h), so that recording a call pushes
 * nothing; the stream's own stack holds the calls not recorded alone, and
 * each node's `skipped` says how many of its top are above that node. A
 * stream whose tree is lost (out of memory) can no longer tell its recorded
 * calls apart: it closes them at its next call, and records no call or
 * return from then on.
 *
 * A user region (src/ext/api.c) is a recorded node like a call's, with a
 * TT_STACK_REGION pushed above it (or above its TT_STACK_SKIP, when it is
 * not recorded): its node then has a call not recorded above it, so the
 * hooks' fast paths leave any return that would close it to
 * tt_stream_return, and no call pays for telling the two apart. Its begin
 * and end are where the program says, whatever calls it crosses (the
 * start()/stop() pattern: region_begin in one function, region_end in
 * another): a call that returns while a user region begun inside it is
 * still open, and a call still open where a user region begun outside it
 * ends, is split there. The regions and calls above that point LEAVE, and
 * those that go on ENTER again at the same time (tt_stream_return,
 * tt_stream_end_region). So the trace stays well nested, a call's time
 * holds a region's only up to the call's return, and a region's time (the
 * sum over its nodes) is all that ran from its begin to its end.
 *
 * The process's definitions stream (defs.tts) is a tt_stream too, without
 * a stack, written under the session's defs lock.
 */
#ifndef TRACETOP_STREAM_H
#define TRACETOP_STREAM_H

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "calltree.h"
#include "format.h"
#include "pool.h"

/* Stack entries that are not regions; region ids stay below them. */
#define TT_STACK_SKIP UINT32_MAX          /* a call not recorded */
#define TT_STACK_OWN (UINT32_MAX - 1u)    /* a call into tracetop itself (see api.c) */
#define TT_STACK_REGION (UINT32_MAX - 2u) /* above a user region (see above) */

/* The chunk's `used` below which the fast path (src/ext/fastpath.h:
 * tt_fast_*) records: room for any record of integer fields. */
#define TT_FAST_USED_LIMIT (TT_CHUNK_PAYLOAD_SIZE - TT_RECORD_MAX_FIXED + 1u)

#if defined(__GNUC__)
#define tt_likely(x) __builtin_expect(!!(x), 1)
#define tt_unlikely(x) __builtin_expect(!!(x), 0)
#else
#define tt_likely(x) (x)
#define tt_unlikely(x) (x)
#endif

struct tt_session;

typedef struct tt_stream {
    /* The chunk being filled; NULL once the stream is closed. Replaced by
     * the owner (release) and read by the writer's snapshots (acquire). */
    _Atomic(tt_chunk *) chunk;
    uint64_t last_ticks; /* time of the last record: deltas count from it */
    uint64_t began;      /* time of the stream's first chunk (format.h: OPEN) */
    /* The calls not recorded open, TT_STACK_SKIP or TT_STACK_OWN, innermost
     * last (the nodes' `skipped` place them among the recorded ones). */
    uint32_t skip_count, skip_cap;
    uint32_t *skips;
    /* TT_FAST_USED_LIMIT while its call tree has room for the chunk's calls;
     * 0, closing the fast path (tt_fast_*) to the stream, before the
     * tree is made and once it is lost. */
    uint32_t fast_used_limit;
    uint64_t events;
    uint32_t next_seq;    /* seq of the next chunk this stream takes */
    uint64_t epoch;       /* its session's epoch when the stack was last valid (session.h) */
    tt_predictor predict; /* of the current chunk (format.h: ENTER_PREDICTED) */
    tt_calltree tree;     /* events: its call tree, as its records give it (calltree.h) */

    struct tt_session *session;
    enum tt_file_kind kind;
    uint32_t index; /* events: the stream number, the file's name */
    uint64_t native_tid;
    struct tt_stream *next; /* in the session's list */
    int ended;              /* its thread ended: the writer frees it once written (session.h) */
    /* Where the thread that owns the stream keeps the stream its fast
     * path records into (src/ext/fastpath.h: tt_tls_fast), NULL when none
     * or once the thread has ended: set and cleared with the session's
     * streams locked, so that a switch can close those paths to every thread. */
    _Atomic(struct tt_stream *) *fast_slot;

    /* Sampling (sampler.h): the thread's CPU clock, noted by the thread as
     * the stream is made; what the session's gil_holder returns while this
     * thread holds the GIL (set by whoever made the stream); the writer's
     * samples of it so far. */
    clockid_t cpu_clock;
    int has_cpu_clock;
    uint64_t cpu_base_ns; /* its CPU time when the stream was made */
    _Atomic(const void *) gil_key;
    uint64_t samples, gil_samples;

    /* Owned by the writer thread. */
    int fd;
    uint64_t file_dev, file_ino; /* the file the writer made (writer.c: open_file), 0 until then */
    uint64_t file_end;           /* offset after the last complete chunk */
    uint64_t file_size;          /* bytes in the file, a partial chunk included */
    uint32_t written_seq;        /* seq of the next chunk to put on disk */
    uint32_t partial_used;       /* bytes of chunk written_seq already on disk */
    void *partial_hash;          /* XXH3 state over those bytes */
    uint64_t records_seen;       /* the records of its chunks the writer has had ... */
    uint32_t tree_nodes_seen;    /* ... and its tree's nodes as of them, foretold until its tree comes */
    int tree_seen;
} tt_stream;

/* Hands the full current chunk to the writer and starts a fresh one;
 * returns it. The only part of recording that may wait (budget used up). */
tt_chunk *tt_stream_rotate(tt_stream *s);
/* The same for a chunk of records: in a ring (session.h: keep), the fresh
 * chunk begins with the calls open (format.h: OPEN), so that it may be read
 * without those before it. Its `used` says where the next record goes. */
tt_chunk *tt_stream_rotate_records(tt_stream *s);
/* The same without waiting: NULL, and nothing done, when the budget is used up. */
tt_chunk *tt_stream_try_rotate(tt_stream *s);

/* Room on the stack of calls not recorded for `more` entries pushed next:
 * 0, or -1 when memory runs out. */
int tt_stream_reserve_skips(tt_stream *s, uint32_t more);
/* Frees it: the stream has nothing open and no stack. */
void tt_stream_free_skips(tt_stream *s);

/* The current chunk with room for a record of TT_RECORD_MAX_FIXED + extra
 * bytes (a full chunk is handed on first), *used where the record goes. */
static inline tt_chunk *tt_record_chunk(tt_stream *s, uint32_t extra, uint32_t *used)
{
    tt_chunk *c = atomic_load_explicit(&s->chunk, memory_order_relaxed);
    *used = atomic_load_explicit(&c->used, memory_order_relaxed);
    if (tt_unlikely(*used + extra > TT_CHUNK_PAYLOAD_SIZE - TT_RECORD_MAX_FIXED)) {
        c = tt_stream_rotate_records(s);
        *used = atomic_load_explicit(&c->used, memory_order_relaxed);
    }
    return c;
}

/* The same as a pointer: where the record goes. */
static inline uint8_t *tt_record_reserve(tt_stream *s, uint32_t extra)
{
    uint32_t used;
    tt_chunk *c = tt_record_chunk(s, extra, &used);
    return c->data + used;
}

/* 1 when a record of up to TT_RECORD_MAX_FIXED bytes fits in the current
 * chunk, and the call tree has room for a call (fast_used_limit), with *chunk and
 * *used where it goes; else 0 (tt_record_chunk hands it on): for the hooks'
 * paths that make no call. */
static inline int tt_record_room(tt_stream *s, tt_chunk **chunk, uint32_t *used)
{
    *chunk = atomic_load_explicit(&s->chunk, memory_order_relaxed);
    *used = atomic_load_explicit(&(*chunk)->used, memory_order_relaxed);
    return tt_likely(*used < s->fast_used_limit);
}

/* The ticks from the stream's last record to `now`, which becomes the
 * last (0, and the last stays, should the clock go back). */
static inline uint64_t tt_stream_dt(tt_stream *s, uint64_t now)
{
    uint64_t dt = 0;
    if (tt_likely(now > s->last_ticks)) {
        dt = now - s->last_ticks;
        s->last_ticks = now;
    }
    return dt;
}

/* Starts a record of the given tag stamped `now` and reserves room for
 * `extra` bytes of fields beyond the fixed ones; returns where the fields
 * go. tt_record_commit publishes it. */
static inline uint8_t *tt_record_begin(tt_stream *s, uint8_t tag, uint64_t now, uint32_t extra)
{
    uint8_t *p = tt_record_reserve(s, extra);
    *p++ = tag;
    return tt_put_varint(p, tt_stream_dt(s, now));
}

static inline void tt_record_commit(tt_stream *s, uint8_t *end)
{
    tt_chunk *c = atomic_load_explicit(&s->chunk, memory_order_relaxed);
    atomic_store_explicit(&c->used, (uint32_t)(end - c->data), memory_order_release);
    s->events++;
}

/* The record begun, not yet committed, is one a profile counts beyond the
 * stream's tree (tt_ev_counted): its chunk is flagged before its bytes are
 * published (format.h: TT_CHUNK_COUNTED), and the tree counts it (reads). */
static inline void tt_stream_counted(tt_stream *s)
{
    tt_chunk *c = atomic_load_explicit(&s->chunk, memory_order_relaxed);
    uint8_t flags = atomic_load_explicit(&c->flags, memory_order_relaxed);
    atomic_store_explicit(&c->flags, (uint8_t)(flags | TT_CHUNK_COUNTED), memory_order_relaxed);
    s->tree.reads++;
}

/* Publishes the record of `length` bytes written at `used` in chunk c. */
static inline void tt_record_commit_at(tt_stream *s, tt_chunk *c, uint32_t used, uint32_t length)
{
    s->events++; /* before the store, which orders what follows it: one add to memory, not three */
    atomic_store_explicit(&c->used, used + length, memory_order_release);
}

/* The predictor's step for an ENTER of `region` (format.h): 1 when it
 * named the region. */
static inline int tt_stream_predict_enter(tt_stream *s, uint32_t region)
{
    uint32_t *slot = tt_predict_slot(&s->predict);
    int predicted = *slot == region;
    tt_predict_enter(&s->predict, slot, region);
    return predicted;
}

/* The record of a region entered at `used` in chunk c (reserved), after dt
 * ticks that fit the short forms (format.h). The callers take the call
 * tree's step (into the current node) first: before the record's bytes are
 * stored, which the compiler must assume may alias the tree's node, so
 * that nothing of the tree is kept in a register or loaded again across
 * them. */
static inline void tt_stream_enter_short(tt_stream *s, tt_chunk *c, uint32_t used, uint64_t dt, uint32_t region)
{
    int predicted = tt_stream_predict_enter(s, region);
    uint8_t *p = c->data + used;
    if (tt_likely(predicted) && dt < TT_EV_PREDICTED_DT_LIMIT) {
        p[0] = (uint8_t)(TT_EV_ENTER_PREDICTED + (dt >> 8));
        p[1] = (uint8_t)dt;
        tt_record_commit_at(s, c, used, 2);
        return;
    }
    p[0] = (uint8_t)(TT_EV_ENTER_SHORT + (dt >> 8));
    p[1] = (uint8_t)dt;
    tt_record_commit_at(s, c, used, (uint32_t)(tt_put_varint(p + 2, region) - p));
}

/* The same for dt that fits the medium forms and not the short ones. */
static inline void tt_stream_enter_medium(tt_stream *s, tt_chunk *c, uint32_t used, uint64_t dt, uint32_t region)
{
    int predicted = tt_stream_predict_enter(s, region);
    uint8_t *p = c->data + used;
    p[1] = (uint8_t)dt;
    p[2] = (uint8_t)(dt >> 8);
    if (predicted) {
        p[0] = (uint8_t)(TT_EV_ENTER_PREDICTED_MEDIUM + (dt >> 16));
        tt_record_commit_at(s, c, used, 3);
        return;
    }
    p[0] = (uint8_t)(TT_EV_ENTER_MEDIUM + (dt >> 16));
    tt_record_commit_at(s, c, used, (uint32_t)(tt_put_varint(p + 3, region) - p));
}

/* The same for dt that fits neither. */
static inline void tt_stream_enter_long(tt_stream *s, tt_chunk *c, uint32_t used, uint64_t dt, uint32_t region)
{
    tt_stream_predict_enter(s, region);
    uint8_t *p = c->data + used;
    *p = TT_EV_ENTER;
    tt_record_commit_at(s, c, used, (uint32_t)(tt_put_varint(tt_put_varint(p + 1, dt), region) - p));
}

/* The same for any dt (from tt_stream_dt), in the shortest form. */
static inline void tt_stream_enter_at(tt_stream *s, tt_chunk *c, uint32_t used, uint64_t dt, uint32_t region)
{
    if (tt_likely(dt < TT_EV_SHORT_DT_LIMIT))
        tt_stream_enter_short(s, c, used, dt, region);
    else if (tt_likely(dt < TT_EV_ENTER_MEDIUM_DT_LIMIT))
        tt_stream_enter_medium(s, c, used, dt, region);
    else
        tt_stream_enter_long(s, c, used, dt, region);
}

/* Closes what is open, for good: the stream's tree is lost (above). */
void tt_stream_give_up(tt_stream *s);

/* 1 when the stream's tree is lost (making room for a record may lose it):
 * what is open is closed then, and the caller records nothing. */
static inline int tt_stream_gave_up(tt_stream *s)
{
    if (tt_likely(!s->tree.lost)) return 0;
    tt_stream_give_up(s);
    return 1;
}

/* A region entered: recorded, its node the current one. */
static inline void tt_stream_enter(tt_stream *s, uint64_t now, uint32_t region)
{
    /* Reserved first: a fresh chunk resets the predictor, and the tree may
     * be lost making room. The node before the record: a lookup may settle
     * asyncio steps, which reads the predictor as the records before this
     * one left it (calltree.h). */
    uint32_t used;
    tt_chunk *c = tt_record_chunk(s, 0, &used);
    if (tt_stream_gave_up(s)) return;
    uint64_t dt = tt_stream_dt(s, now);
    tt_calltree_node *node = tt_calltree_find(&s->tree, region);
    tt_calltree_enter_node(&s->tree, node, s->last_ticks);
    tt_stream_enter_at(s, c, used, dt, region);
}

/* A call or region that goes on entered again (format.h: ENTER_AGAIN):
 * recorded, its node the current one, no visit more. */
void tt_stream_enter_again(tt_stream *s, uint64_t now, uint32_t region);

/* The ENTER of an asyncio step of `task` (its TASK_RESUME just recorded),
 * out of line: the call tree keeps the step's node (calltree.h). */
void tt_stream_enter_step(tt_stream *s, uint32_t region, uint32_t task);

/* tt_stream_enter and tt_stream_leave at the clock's time, out of line:
 * for the fast path (tt_fast_*), when the call tree has to look the
 * call's node up, or the delta is long (src/ext/fastpath.h: TT_FAST_NOW). */
void tt_stream_enter_now(tt_stream *s, uint32_t region);
void tt_stream_leave_now(tt_stream *s);

/* A call that is not recorded (TT_STACK_SKIP or TT_STACK_OWN): pushed so
 * that its return is dropped too. */
static inline void tt_stream_skip(tt_stream *s, uint32_t entry)
{
    if (tt_stream_gave_up(s)) return;
    if (tt_unlikely(s->skip_count == s->skip_cap) && tt_stream_reserve_skips(s, 1) < 0) return;
    s->skips[s->skip_count++] = entry;
    s->tree.cur->skipped++;
}

/* Pops the innermost call, one not recorded (the current node's `skipped`
 * is not 0), with no record. */
static inline void tt_stream_unskip(tt_stream *s)
{
    s->tree.cur->skipped--;
    s->skip_count--;
}

/* The record of the innermost call's return at `used` in chunk c
 * (reserved), after dt ticks that fit the short forms; the tree's step
 * taken first (as for tt_stream_enter_short). */
static inline void tt_stream_leave_short(tt_stream *s, tt_chunk *c, uint32_t used, uint64_t dt)
{
    tt_predict_leave(&s->predict);
    uint8_t *p = c->data + used;
    p[0] = (uint8_t)(TT_EV_LEAVE_SHORT + (dt >> 8));
    p[1] = (uint8_t)dt;
    tt_record_commit_at(s, c, used, 2);
}

/* The same for dt that fits the medium forms and not the short ones. */
static inline void tt_stream_leave_medium(tt_stream *s, tt_chunk *c, uint32_t used, uint64_t dt)
{
    tt_predict_leave(&s->predict);
    uint8_t *p = c->data + used;
    p[0] = (uint8_t)(TT_EV_LEAVE_MEDIUM + (dt >> 16));
    p[1] = (uint8_t)dt;
    p[2] = (uint8_t)(dt >> 8);
    tt_record_commit_at(s, c, used, 3);
}

/* The same for dt that fits neither. */
static inline void tt_stream_leave_long(tt_stream *s, tt_chunk *c, uint32_t used, uint64_t dt)
{
    tt_predict_leave(&s->predict);
    uint8_t *p = c->data + used;
    *p = TT_EV_LEAVE;
    tt_record_commit_at(s, c, used, (uint32_t)(tt_put_varint(p + 1, dt) - p));
}

/* The same for any dt (from tt_stream_dt), in the shortest form. */
static inline void tt_stream_leave_at(tt_stream *s, tt_chunk *c, uint32_t used, uint64_t dt)
{
    if (tt_likely(dt < TT_EV_SHORT_DT_LIMIT))
        tt_stream_leave_short(s, c, used, dt);
    else if (dt < TT_EV_MEDIUM_DT_LIMIT)
        tt_stream_leave_medium(s, c, used, dt);
    else
        tt_stream_leave_long(s, c, used, dt);
}

/* 1 while a call is open, recorded or not. */
static inline int tt_stream_is_open(const tt_stream *s) { return s->tree.cur->skipped != TT_CALLTREE_ROOT_SKIPPED; }

/* The innermost call returned. */
static inline void tt_stream_leave(tt_stream *s, uint64_t now)
{
    if (tt_unlikely(s->tree.cur->skipped)) {
        /* Not recorded, or nothing open (entered before measurement began). */
        if (tt_stream_is_open(s)) tt_stream_unskip(s);
        return;
    }
    uint32_t used;
    tt_chunk *c = tt_record_chunk(s, 0, &used);
    uint64_t dt = tt_stream_dt(s, now);
    tt_calltree_leave(&s->tree, s->tree.cur, s->last_ticks);
    tt_stream_leave_at(s, c, used, dt);
}

/* A call of the program returned (the hooks' returns, but for the fast
 * paths'): tt_stream_leave, the user regions begun inside it still open
 * carried over to its caller (see above). */
void tt_stream_return(tt_stream *s, uint64_t now);

/* The user region `region` ended (src/ext/api.c): the innermost one open
 * of that id, or else the innermost one not recorded, LEAVEs, and the calls
 * and regions open above it are left and entered again above its parent
 * (see above). 1 when one was open, 0 when none was (nothing changed), -1
 * when out of memory (the same). */
int tt_stream_end_region(tt_stream *s, uint64_t now, uint32_t region);

/* Every open call returned at `now` (tt_stream_leave). */
void tt_stream_leave_all(tt_stream *s, uint64_t now);

/* The innermost open call: a region id, TT_STACK_SKIP, TT_STACK_OWN or
 * TT_STACK_REGION; TT_STACK_SKIP when nothing is open. */
static inline uint32_t tt_stream_top(const tt_stream *s)
{
    const tt_calltree_node *cur = s->tree.cur;
    if (cur->skipped & ~TT_CALLTREE_ROOT_SKIPPED) return s->skips[s->skip_count - 1];
    return cur->skipped ? TT_STACK_SKIP : tt_calltree_region(&s->tree, cur);
}

/* The open calls as tt_stream_top names them, outermost first: an array
 * of *count (malloc'd, room for one at least), NULL when out of memory. */
uint32_t *tt_stream_entries(const tt_stream *s, uint32_t *count);
/* Pushes `count` TT_STACK_SKIP at index `at` of those (the top at most),
 * beneath the calls above it: 0, or -1 when out of memory (none pushed). */
int tt_stream_insert_skips(tt_stream *s, uint32_t at, uint32_t count);

/* Records without a place on the stack. */
void tt_stream_mark(tt_stream *s, uint64_t now, uint8_t tag, uint32_t name);
void tt_stream_param_int(tt_stream *s, uint64_t now, uint32_t name, int64_t value);
void tt_stream_param_uint(tt_stream *s, uint64_t now, uint32_t name, uint64_t value);
void tt_stream_param_string(tt_stream *s, uint64_t now, uint32_t name, const char *value, size_t len);
void tt_stream_counter(tt_stream *s, uint64_t now, uint32_t name, double value);
void tt_stream_plain(tt_stream *s, uint64_t now, uint8_t tag); /* STREAM_END */
/* The measurement was off from `from` to `to` (format.h: RECORDING_OFF
 * and RECORDING_ON, in one chunk): the calls open keep only their time
 * outside it, in the records and the call tree alike. From the last
 * record's time when that is later than `from`. */
void tt_stream_gap(tt_stream *s, uint64_t from, uint64_t to);
/* The result of a garbage collection that began at `start` (format.h: GC). */
void tt_stream_gc(tt_stream *s, uint64_t now, uint64_t start, uint8_t generation, uint64_t collected,
                  uint64_t uncollectable);

/* An OBJECTS record (format.h): region + 1 (0: none), type a string id. */
typedef struct tt_stream_objects_counts {
    uint32_t region, type;
    uint64_t size, created, destroyed;
} tt_stream_objects_counts;

/* Records object counts. Without may_wait it never waits for the writer:
 * -1, nothing recorded, when the chunk is full and no free one is at hand
 * (objects are counted inside CPython's allocation, where the GIL must
 * not be let go). */
int tt_stream_objects(tt_stream *s, uint64_t now, const tt_stream_objects_counts *n, int may_wait);

/* Closes every open region at `now`, records STREAM_END and hands the last
 * chunk to the writer. The stream takes no records afterwards. */
void tt_stream_close(tt_stream *s, uint64_t now);

#endif

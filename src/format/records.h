/* records.h -- the records of one chunk payload, decoded.
 *
 * format.h defines the records; this module turns the bytes of ONE chunk
 * payload (already checked with tt_chunk_verify and decoded with
 * tt_payload_decode) back into records. It knows nothing of files, so the
 * trace reader (reader.c) and a live consumer that takes chunks from shared
 * memory decode the same way.
 *
 * Contract:
 *  - tt_records_init starts an iterator over a payload; tt_records_next_event
 *    (thread streams) or tt_records_next_def (defs.tts) yields its records in
 *    order. An iterator reads one kind of payload; the kinds are not mixed.
 *  - Nothing is allocated or copied: a record's string points into the
 *    payload and is valid as long as the payload is.
 *  - Event times are absolute: the chunk's base_ticks plus the running sum of
 *    the records' deltas.
 *  - A malformed record (unknown tag, a field running past the payload, a
 *    time that overflows) ends the iteration: -1 with a static one-line reason.
 *    Ids are NOT checked against definitions here; only the caller knows them.
 *  - tt_records_peek_call is the hot path of readers of calls: inline, for
 *    records that TT_RECORD_MAX_FIXED bytes of payload follow.
 *  - The short forms of ENTER and LEAVE (format.h) come out as ENTER and
 *    LEAVE, from both.
 */
#ifndef TRACETOP_RECORDS_H
#define TRACETOP_RECORDS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "format.h"

typedef struct tt_records {
    const uint8_t *pos, *end;
    uint64_t ticks;        /* time of the last record read (base_ticks before the first) */
    tt_predictor *predict; /* of the chunk being read (format.h), the caller's */
} tt_records;

/* An event record. Which fields are set depends on the tag (format.h). */
typedef struct tt_event_record {
    uint8_t tag;         /* enum tt_event_tag; ENTER for ENTER_AGAIN too */
    int again;           /* ENTER: 1 for an ENTER_AGAIN (not a new visit) */
    uint64_t ticks;      /* absolute */
    uint64_t id;         /* ENTER: region id; PARAM_*, COUNTER, MARK: name (string id); TASK_RESUME: task */
    int64_t int_value;   /* PARAM_INT */
    uint64_t uint_value; /* PARAM_UINT */
    double double_value; /* COUNTER */
    const uint8_t *str;  /* PARAM_STRING: points into the payload */
    size_t str_len;
    struct { /* MPI_*: the fields format.h gives each */
        uint64_t peer, tag, comm, bytes, request;
        uint8_t op;
        uint64_t root, sent, received; /* root: rank + 1, 0 for none */
    } mpi;
    struct { /* OBJECTS: region + 1 (0: none), type: a string id */
        uint64_t region, type, size, created, destroyed;
    } objects;
    struct { /* GC */
        uint8_t generation;
        uint64_t collected, uncollectable, duration; /* duration in ticks */
    } gc;
    struct { /* OPEN: `count` region ids, varints at regions (checked: all there), innermost first */
        uint64_t since, count;
        const uint8_t *regions;
    } open;
} tt_event_record;

/* The next region of an OPEN record's list, from *pos (r->open.regions to
 * begin with), which it advances. */
static inline uint64_t tt_records_open_next(const uint8_t **pos)
{
    uint64_t region = 0;
    unsigned shift = 0;
    const uint8_t *p = *pos;
    for (; *p & 0x80; p++, shift += 7) region |= (uint64_t)(*p & 0x7f) << shift;
    *pos = p + 1;
    return region | (uint64_t)*p << shift;
}

/* A definition record: the member named after the tag is set. */
typedef struct tt_def_record {
    uint8_t tag; /* enum tt_def_tag */
    union {
        struct {
            uint64_t id;
            const uint8_t *bytes; /* points into the payload, not NUL-terminated */
            size_t len;
        } string;
        struct {
            uint64_t id, name, file, line;
            uint8_t kind; /* enum tt_region_kind, unchecked */
        } region;
        struct {
            uint64_t stream, name, native_tid;
        } thread;
        struct {
            uint64_t pid, ppid, name;
            uint8_t clock; /* enum tt_clock_kind, unchecked */
            uint64_t ticks_per_second;
        } process;
        struct {
            uint64_t ticks, monotonic_ns, realtime_ns;
        } clock_sync;
        struct {
            uint64_t key, value;
        } attribute;
        struct {
            uint64_t ticks, events, waits, wait_ns;
        } process_end;
        struct {
            uint64_t rank, size;
        } mpi_rank;
        struct {
            uint64_t stream, count;
        } open_at_start;
        struct {
            uint64_t from, to;
        } measurement_off;
        struct {
            uint64_t id, name;    /* TASK: name is a string id */
            const uint8_t *bytes; /* TASK_NAMED: the name, in the payload, not NUL-terminated */
            size_t len;
        } task;
        struct {
            uint64_t region;
        } coroutine;
        struct {
            uint64_t stream, ticks, cpu_ns, samples, gil_samples;
        } thread_usage;
        struct {
            uint64_t id, parent, seq, size, listed; /* parent: id + 1, 0 for none */
            uint8_t kind;                           /* enum tt_comm_kind, unchecked */
            const uint8_t *members, *members_end;   /* `listed` varints (world ranks), in the payload */
        } mpi_comm;
    };
} tt_def_record;

/* Starts reading a chunk's payload: `predict` (the caller's, kept as long as
 * the iterator is used; NULL for definitions) is reset, as at the start of
 * every chunk. */
static inline void tt_records_init(tt_records *it, const uint8_t *payload, size_t len, uint64_t base_ticks,
                                   tt_predictor *predict)
{
    it->pos = payload;
    it->end = payload + len;
    it->ticks = base_ticks;
    it->predict = predict;
    if (predict) memset(predict, 0, sizeof *predict);
}

/* Goes on reading a chunk from `pos` (a record's start), time `ticks`, with
 * `predict` as the records before it left it: a reader given a chunk in
 * parts. */
static inline void tt_records_resume(tt_records *it, const uint8_t *pos, size_t len, uint64_t ticks,
                                     tt_predictor *predict)
{
    it->pos = pos;
    it->end = pos + len;
    it->ticks = ticks;
    it->predict = predict;
}

/* 1 when the payload has bytes left to decode. */
static inline int tt_records_more(const tt_records *it) { return it->pos < it->end; }

/* Reads the next record: 1 with *r set, 0 at the end of the payload, -1 with
 * a reason in *why when the record is malformed (the iterator then stays
 * where the bad record starts). */
int tt_records_next_event(tt_records *it, tt_event_record *r, const char **why);
int tt_records_next_def(tt_records *it, tt_def_record *d, const char **why);

/* ---- the hot path of readers of calls ----
 *
 * Nearly all records are ENTER and LEAVE with short fields. A reader that
 * knows TT_RECORD_MAX_FIXED bytes of payload follow a record decodes those
 * inline, without bounds checks, and leaves every other record to
 * tt_records_next_event. */

/* A varint of at most 4 bytes at p (so below 2^28), read without bounds
 * checks: the byte after it, with *out set, or NULL when it is longer.
 * Each byte but the last has its high bit set: adding the bytes whole and
 * subtracting those bits saves masking each. */
static inline const uint8_t *tt_short_varint(const uint8_t *p, uint64_t *out)
{
    uint64_t v = p[0];
    if (p[0] < 0x80) {
        *out = v;
        return p + 1;
    }
    v += ((uint64_t)p[1] << 7) - 0x80;
    if (p[1] < 0x80) {
        *out = v;
        return p + 2;
    }
    v += ((uint64_t)p[2] << 14) - (0x80u << 7);
    if (p[2] < 0x80) {
        *out = v;
        return p + 3;
    }
    v += ((uint64_t)p[3] << 21) - (0x80u << 14);
    if (p[3] < 0x80) {
        *out = v;
        return p + 4;
    }
    return NULL;
}

/* The record at p when it is an ENTER or a LEAVE (any form) with fields of
 * at most 4 bytes: the byte after it, with *tag, *dt and *id set; NULL for
 * any other record. *tag is TT_EV_LEAVE, TT_EV_ENTER (*id: the region), or
 * TT_EV_ENTER_PREDICTED: an ENTER whose region the predictor names, which
 * the caller reads (a reader that holds the predictor's state in locals).
 * Reads at most 9 bytes. */
static inline const uint8_t *tt_records_peek(const uint8_t *p, uint8_t *tag, uint64_t *dt, uint64_t *id)
{
    /* The forms in the order they are most common: a return, a predicted
     * call, then the rest. */
    uint8_t first = p[0];
    if ((uint8_t)(first - TT_EV_LEAVE_SHORT) < TT_EV_SHORT_FORMS) {
        *dt = ((uint64_t)first - TT_EV_LEAVE_SHORT) << 8 | p[1];
        *tag = TT_EV_LEAVE;
        return p + 2;
    }
    if (first >= TT_EV_ENTER_PREDICTED) {
        if (first < TT_EV_LEAVE_MEDIUM) {
            *dt = ((uint64_t)first - TT_EV_ENTER_PREDICTED) << 8 | p[1];
            *tag = TT_EV_ENTER_PREDICTED;
            return p + 2;
        }
        if (first > TT_EV_LAST) return NULL;
        *dt = ((uint64_t)first - TT_EV_LEAVE_MEDIUM) << 16 | (uint64_t)p[2] << 8 | p[1];
        *tag = TT_EV_LEAVE;
        return p + 3;
    }
    if (first >= TT_EV_ENTER_SHORT) {
        if (first < TT_EV_LEAVE_SHORT) {
            *dt = ((uint64_t)first - TT_EV_ENTER_SHORT) << 8 | p[1];
            *tag = TT_EV_ENTER;
            return tt_short_varint(p + 2, id);
        }
        if (first < TT_EV_ENTER_MEDIUM) return NULL;
        uint8_t form = first < TT_EV_ENTER_PREDICTED_MEDIUM ? TT_EV_ENTER_MEDIUM : TT_EV_ENTER_PREDICTED_MEDIUM;
        *dt = ((uint64_t)first - form) << 16 | (uint64_t)p[2] << 8 | p[1];
        if (form == TT_EV_ENTER_MEDIUM) {
            *tag = TT_EV_ENTER;
            return tt_short_varint(p + 3, id);
        }
        *tag = TT_EV_ENTER_PREDICTED;
        return p + 3;
    }
    *tag = first;
    if (*tag == TT_EV_LEAVE) return tt_short_varint(p + 1, dt);
    if (*tag != TT_EV_ENTER || !(p = tt_short_varint(p + 1, dt))) return NULL;
    return tt_short_varint(p, id);
}

/* The same, with the predicted region read: *tag is TT_EV_ENTER or
 * TT_EV_LEAVE. The predictor is read, not updated: once the caller takes
 * the record, tt_records_took_call does that. */
static inline const uint8_t *tt_records_peek_call(const uint8_t *p, tt_predictor *predict, uint8_t *tag, uint64_t *dt,
                                                  uint64_t *id)
{
    p = tt_records_peek(p, tag, dt, id);
    if (p && *tag == TT_EV_ENTER_PREDICTED) {
        *id = *tt_predict_slot(predict);
        *tag = TT_EV_ENTER;
    }
    return p;
}

/* Updates the predictor for a record tt_records_peek_call gave, once taken. */
static inline void tt_records_took_call(tt_predictor *predict, uint8_t tag, uint64_t id)
{
    if (tag == TT_EV_ENTER)
        tt_predict_enter(predict, tt_predict_slot(predict), (uint32_t)id);
    else
        tt_predict_leave(predict);
}

#endif

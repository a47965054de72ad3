/* export_perfetto.c -- a Perfetto trace: protobuf TracePackets of TrackEvents
 * (perfetto/trace/perfetto_trace.proto), as ui.perfetto.dev and
 * trace_processor read them.
 *
 * A track descriptor per process, per thread (child of its process) and per
 * counter name of a process; a packet sequence per thread, whose first
 * packet clears its incremental state. Calls are SLICE_BEGIN and SLICE_END
 * events with their names interned (an iid per region, announced in the
 * packet that first uses it); the parameters set inside a call are debug
 * annotations of its SLICE_END, which Perfetto adds to the slice's args.
 * Counters are COUNTER events on their track, marks and the recording
 * switches INSTANT events. Objects counted (--objects) are a counter track
 * per type of a process, "objects alive: TYPE", its value at each batch
 * time (objects_series.h), on a sequence of their own. Timestamps are ns
 * since the experiment's epoch.
 *
 * Each packet is encoded into a small buffer and written at once; nothing
 * but the open calls' parameters and the set of iids announced per
 * sequence is kept between packets.
 */
#include <stdlib.h>
#include <string.h>

#include "converters.h"
#include "grow.h"
#include "objects_series.h"
#include "out.h"
#include "registry.h"
#include "tasklanes.h"

/* Field numbers, from perfetto_trace.proto. */
enum {
    TRACE_PACKET = 1,
    PACKET_TIMESTAMP = 8,
    PACKET_SEQUENCE_ID = 10,
    PACKET_TRACK_EVENT = 11,
    PACKET_INTERNED_DATA = 12,
    PACKET_SEQUENCE_FLAGS = 13,
    PACKET_TRACK_DESCRIPTOR = 60,
    EVENT_DEBUG_ANNOTATIONS = 4,
    EVENT_TYPE = 9,
    EVENT_NAME_IID = 10,
    EVENT_TRACK_UUID = 11,
    EVENT_CATEGORIES = 22,
    EVENT_NAME = 23,
    EVENT_DOUBLE_COUNTER_VALUE = 44,
    DESCRIPTOR_UUID = 1,
    DESCRIPTOR_NAME = 2,
    DESCRIPTOR_PROCESS = 3,
    DESCRIPTOR_THREAD = 4,
    DESCRIPTOR_PARENT_UUID = 5,
    DESCRIPTOR_COUNTER = 8,
    PROCESS_PID = 1,
    PROCESS_NAME = 6,
    THREAD_PID = 1,
    THREAD_TID = 2,
    THREAD_NAME = 5,
    INTERNED_EVENT_NAMES = 2,
    EVENT_NAME_ENTRY_IID = 1,
    EVENT_NAME_ENTRY_NAME = 2,
    ANNOTATION_UINT = 3,
    ANNOTATION_INT = 4,
    ANNOTATION_STRING = 6,
    ANNOTATION_NAME = 10,
};
enum { SLICE_BEGIN = 1, SLICE_END = 2, INSTANT = 3, COUNTER = 4 };
enum { SEQ_INCREMENTAL_STATE_CLEARED = 1, SEQ_NEEDS_INCREMENTAL_STATE = 2 };
enum { WIRE_VARINT = 0, WIRE_FIXED64 = 1, WIRE_BYTES = 2 };

/* ---- protobuf encoding into growable buffers ---- */

typedef struct pb {
    uint8_t *bytes;
    size_t len, cap;
    int failed;
} pb;

static void pb_raw(pb *b, const void *bytes, size_t len)
{
    if (len == 0) return; /* an empty buffer has no bytes yet: NULL + 0 is undefined */
    if (b->failed || TT_RESERVE(b->bytes, b->cap, b->len + len) != 0) {
        b->failed = 1;
        return;
    }
    memcpy(b->bytes + b->len, bytes, len);
    b->len += len;
}

static void pb_varint_raw(pb *b, uint64_t v)
{
    uint8_t buf[10];
    pb_raw(b, buf, (size_t)(tt_put_varint(buf, v) - buf));
}

static void pb_key(pb *b, unsigned field, unsigned wire) { pb_varint_raw(b, (uint64_t)field << 3 | wire); }

static void pb_uint(pb *b, unsigned field, uint64_t v)
{
    pb_key(b, field, WIRE_VARINT);
    pb_varint_raw(b, v);
}

static void pb_bytes(pb *b, unsigned field, const void *bytes, size_t len)
{
    pb_key(b, field, WIRE_BYTES);
    pb_varint_raw(b, len);
    pb_raw(b, bytes, len);
}

static void pb_string(pb *b, unsigned field, const char *s) { pb_bytes(b, field, s, strlen(s)); }

static void pb_double(pb *b, unsigned field, double v)
{
    uint8_t buf[8];
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    tt_put_u64(buf, bits);
    pb_key(b, field, WIRE_FIXED64);
    pb_raw(b, buf, sizeof buf);
}

/* A submessage: the bytes of `inner` as field `field` of b. */
static void pb_message(pb *b, unsigned field, const pb *inner)
{
    if (inner->failed) b->failed = 1;
    pb_bytes(b, field, inner->bytes, inner->len);
}

/* ---- the export ---- */

/* Packets are put together here and written a batch at a time. */
#define PERFETTO_BATCH (32u * 1024u)
/* The most a call's packet takes (calls: call_packet). */
#define CALL_PACKET_MAX 64u

typedef struct perfetto {
    tt_out out;
    uint8_t batch[PERFETTO_BATCH];
    size_t batched;
    pb packet, event, inner, interned, annotations;
    /* The stream being written: its sequence, which names it has announced
     * (iids: region id + 1, then marks after the regions), and the
     * debug annotations of its open calls. */
    uint32_t sequence;
    int first_packet;
    uint8_t *announced;
    size_t announced_cap;
    size_t *open_args; /* by depth: where the call's annotations start in `annotations` */
    size_t depth, open_cap;
    uint8_t *counter_tracks; /* the process's counter names with a track already */
    size_t counter_cap;
    tt_objects_series objects; /* of the process being written */
} perfetto;

static void reset(pb *b) { b->len = 0; }

static void flush_batch(perfetto *c)
{
    tt_out_write(&c->out, c->batch, c->batched);
    c->batched = 0;
}

static void batch_write(perfetto *c, const void *bytes, size_t len)
{
    if (len > PERFETTO_BATCH - c->batched) {
        flush_batch(c);
        if (len > PERFETTO_BATCH) {
            tt_out_write(&c->out, bytes, len);
            return;
        }
    }
    memcpy(c->batch + c->batched, bytes, len);
    c->batched += len;
}

/* Writes c->packet as a TracePacket of the trace, and empties it. */
static void emit_packet(perfetto *c)
{
    uint8_t key[12], *p = tt_put_varint(key, (uint64_t)TRACE_PACKET << 3 | WIRE_BYTES);
    p = tt_put_varint(p, c->packet.len);
    batch_write(c, key, (size_t)(p - key));
    batch_write(c, c->packet.bytes, c->packet.len);
    reset(&c->packet);
}

static uint64_t process_uuid(size_t process) { return (uint64_t)(process + 1) << 32; }
static uint64_t thread_uuid(size_t process, size_t stream) { return process_uuid(process) | (uint64_t)(stream + 1); }
static uint64_t counter_uuid(size_t process, uint32_t name) { return process_uuid(process) | 0x80000000u | name; }
static uint64_t objects_uuid(size_t process, uint32_t type) { return process_uuid(process) | 0x40000000u | type; }

static void descriptor(perfetto *c, uint64_t uuid, uint64_t parent, const char *name, unsigned kind, const pb *what)
{
    reset(&c->event);
    pb_uint(&c->event, DESCRIPTOR_UUID, uuid);
    if (parent) pb_uint(&c->event, DESCRIPTOR_PARENT_UUID, parent);
    if (name) pb_string(&c->event, DESCRIPTOR_NAME, name);
    if (what) pb_message(&c->event, kind, what);
    pb_message(&c->packet, PACKET_TRACK_DESCRIPTOR, &c->event);
    emit_packet(c);
}

static void process_descriptor(perfetto *c, size_t index, const tt_process *p)
{
    reset(&c->inner);
    pb_uint(&c->inner, PROCESS_PID, (uint32_t)p->pid);
    pb_string(&c->inner, PROCESS_NAME, p->name);
    descriptor(c, process_uuid(index), 0, NULL, DESCRIPTOR_PROCESS, &c->inner);
}

static void thread_descriptor(perfetto *c, size_t index, const tt_process *p, size_t s)
{
    reset(&c->inner);
    pb_uint(&c->inner, THREAD_PID, (uint32_t)p->pid);
    pb_uint(&c->inner, THREAD_TID, tt_export_tid(p, s));
    pb_string(&c->inner, THREAD_NAME, p->threads[s].name);
    descriptor(c, thread_uuid(index, s), process_uuid(index), NULL, DESCRIPTOR_THREAD, &c->inner);
}

/* Starts a packet of the current sequence at time t carrying a TrackEvent:
 * the caller fills c->event, then calls finish_event. */
static void begin_event(perfetto *c, uint64_t type, uint64_t track)
{
    reset(&c->event);
    reset(&c->interned);
    pb_uint(&c->event, EVENT_TYPE, type);
    pb_uint(&c->event, EVENT_TRACK_UUID, track);
}

static void finish_event(perfetto *c, uint64_t t)
{
    pb_uint(&c->packet, PACKET_TIMESTAMP, t);
    pb_uint(&c->packet, PACKET_SEQUENCE_ID, c->sequence);
    pb_message(&c->packet, PACKET_TRACK_EVENT, &c->event);
    if (c->interned.len) pb_message(&c->packet, PACKET_INTERNED_DATA, &c->interned);
    pb_uint(&c->packet, PACKET_SEQUENCE_FLAGS,
            c->first_packet ? SEQ_INCREMENTAL_STATE_CLEARED | SEQ_NEEDS_INCREMENTAL_STATE
                            : SEQ_NEEDS_INCREMENTAL_STATE);
    c->first_packet = 0;
    emit_packet(c);
}

/* The packet of a SLICE_BEGIN of a name already announced (iid) or of a
 * SLICE_END without annotations (iid 0): the bytes begin_event, name_iid
 * and finish_event make, put together at once, as nearly every event is
 * one of these. */
static void call_packet(perfetto *c, uint64_t t, uint64_t type, uint64_t track, uint64_t iid)
{
    uint8_t event[24], *e = event;
    *e++ = EVENT_TYPE << 3 | WIRE_VARINT;
    *e++ = (uint8_t)type;
    *e++ = EVENT_TRACK_UUID << 3 | WIRE_VARINT;
    e = tt_put_varint(e, track);
    if (iid) {
        *e++ = EVENT_NAME_IID << 3 | WIRE_VARINT;
        e = tt_put_varint(e, iid);
    }
    uint8_t packet[CALL_PACKET_MAX - 3], *p = packet;
    *p++ = PACKET_TIMESTAMP << 3 | WIRE_VARINT;
    p = tt_put_varint(p, t);
    *p++ = PACKET_SEQUENCE_ID << 3 | WIRE_VARINT;
    p = tt_put_varint(p, c->sequence);
    *p++ = PACKET_TRACK_EVENT << 3 | WIRE_BYTES;
    *p++ = (uint8_t)(e - event);
    memcpy(p, event, (size_t)(e - event));
    p += e - event;
    *p++ = PACKET_SEQUENCE_FLAGS << 3 | WIRE_VARINT;
    *p++ = c->first_packet ? SEQ_INCREMENTAL_STATE_CLEARED | SEQ_NEEDS_INCREMENTAL_STATE : SEQ_NEEDS_INCREMENTAL_STATE;
    c->first_packet = 0;
    if (CALL_PACKET_MAX > PERFETTO_BATCH - c->batched) flush_batch(c);
    uint8_t *out = c->batch + c->batched;
    *out++ = TRACE_PACKET << 3 | WIRE_BYTES;
    *out++ = (uint8_t)(p - packet);
    memcpy(out, packet, (size_t)(p - packet));
    c->batched += 2 + (size_t)(p - packet);
}

/* The event's name by iid, announced in this packet if not yet on the sequence. */
static void name_iid(perfetto *c, uint64_t iid, const char *name)
{
    if (iid >= c->announced_cap) {
        size_t cap = c->announced_cap;
        if (TT_RESERVE(c->announced, c->announced_cap, iid + 1) != 0) {
            c->event.failed = 1;
            return;
        }
        memset(c->announced + cap, 0, c->announced_cap - cap);
    }
    if (!c->announced[iid]) {
        c->announced[iid] = 1;
        reset(&c->inner);
        pb_uint(&c->inner, EVENT_NAME_ENTRY_IID, iid);
        pb_string(&c->inner, EVENT_NAME_ENTRY_NAME, name);
        pb_message(&c->interned, INTERNED_EVENT_NAMES, &c->inner);
    }
    pb_uint(&c->event, EVENT_NAME_IID, iid);
}

static void parameter(perfetto *c, const tt_process *p, const tt_event *ev)
{
    reset(&c->inner);
    pb_string(&c->inner, ANNOTATION_NAME, p->strings[ev->name]);
    if (ev->kind == TT_EV_PARAM_INT) pb_uint(&c->inner, ANNOTATION_INT, (uint64_t)ev->int_value);
    if (ev->kind == TT_EV_PARAM_UINT) pb_uint(&c->inner, ANNOTATION_UINT, ev->uint_value);
    if (ev->kind == TT_EV_PARAM_STRING) pb_bytes(&c->inner, ANNOTATION_STRING, ev->str, ev->str_len);
    pb_message(&c->annotations, EVENT_DEBUG_ANNOTATIONS, &c->inner);
}

/* A debug annotation of the innermost open slice: name = value. */
static void annotation(perfetto *c, const char *name, uint64_t value)
{
    reset(&c->inner);
    pb_string(&c->inner, ANNOTATION_NAME, name);
    pb_uint(&c->inner, ANNOTATION_UINT, value);
    pb_message(&c->annotations, EVENT_DEBUG_ANNOTATIONS, &c->inner);
}

static void stream(perfetto *c, size_t index, const tt_process *p, size_t s, tt_cursor *cur)
{
    uint64_t track = thread_uuid(index, s);
    tt_event ev;
    c->first_packet = 1;
    c->depth = 0;
    reset(&c->annotations);
    if (c->announced) /* NULL until a first name is announced: memset(NULL, 0, 0) is undefined */
        memset(c->announced, 0, c->announced_cap);
    while (!c->packet.failed && !c->event.failed && !c->annotations.failed && tt_cursor_next(cur, &ev)) {
        switch (ev.kind) {
        case TT_EV_ENTER:
            if (TT_RESERVE(c->open_args, c->open_cap, c->depth + 1) != 0) {
                c->event.failed = 1;
                break;
            }
            c->open_args[c->depth++] = c->annotations.len;
            if (ev.resumed) annotation(c, "resumed", 1); /* the part of a call after a gap (reader.h) */
            if (ev.region + 1 < c->announced_cap && c->announced[ev.region + 1]) {
                call_packet(c, ev.time, SLICE_BEGIN, track, (uint64_t)ev.region + 1);
                break;
            }
            begin_event(c, SLICE_BEGIN, track);
            name_iid(c, (uint64_t)ev.region + 1, p->regions[ev.region].name);
            finish_event(c, ev.time);
            break;
        case TT_EV_LEAVE: {
            size_t from = c->open_args[--c->depth];
            if (c->annotations.len == from) {
                call_packet(c, ev.time, SLICE_END, track, 0);
                break;
            }
            begin_event(c, SLICE_END, track);
            if (c->annotations.len > from) /* bytes is NULL before a first annotation: NULL + 0 is undefined */
                pb_raw(&c->event, c->annotations.bytes + from, c->annotations.len - from);
            c->annotations.len = from;
            finish_event(c, ev.time);
            break;
        }
        case TT_EV_PARAM_INT:
        case TT_EV_PARAM_UINT:
        case TT_EV_PARAM_STRING:
            if (c->depth) {
                parameter(c, p, &ev);
            } else {
                begin_event(c, INSTANT, track);
                pb_string(&c->event, EVENT_NAME, "parameter");
                parameter(c, p, &ev);
                pb_raw(&c->event, c->annotations.bytes, c->annotations.len);
                reset(&c->annotations);
                finish_event(c, ev.time);
            }
            break;
        case TT_EV_GC: /* in its span, the innermost open one (format.h) */
            if (c->depth) {
                annotation(c, "collected", ev.collected);
                annotation(c, "uncollectable", ev.uncollectable);
            }
            break;
        case TT_EV_COUNTER: {
            uint64_t uuid = counter_uuid(index, ev.name);
            if (ev.name >= c->counter_cap || !c->counter_tracks[ev.name]) {
                size_t cap = c->counter_cap;
                if (ev.name >= cap) {
                    if (TT_RESERVE(c->counter_tracks, c->counter_cap, (size_t)ev.name + 1) != 0) {
                        c->event.failed = 1;
                        break;
                    }
                    memset(c->counter_tracks + cap, 0, c->counter_cap - cap);
                }
                c->counter_tracks[ev.name] = 1;
                reset(&c->inner);
                descriptor(c, uuid, process_uuid(index), p->strings[ev.name], DESCRIPTOR_COUNTER, &c->inner);
            }
            begin_event(c, COUNTER, uuid);
            pb_double(&c->event, EVENT_DOUBLE_COUNTER_VALUE, ev.double_value);
            finish_event(c, ev.time);
            break;
        }
        case TT_EV_OBJECTS:
            if (tt_objects_series_add(&c->objects, &ev) != 0) c->event.failed = 1;
            break;
        case TT_EV_MARK:
            begin_event(c, INSTANT, track);
            pb_string(&c->event, EVENT_CATEGORIES, "mark");
            name_iid(c, (uint64_t)p->region_count + 2 + ev.name, p->strings[ev.name]);
            finish_event(c, ev.time);
            break;
        case TT_EV_RECORDING_OFF:
        case TT_EV_RECORDING_ON:
            begin_event(c, INSTANT, track);
            pb_string(&c->event, EVENT_NAME, ev.kind == TT_EV_RECORDING_ON ? "measurement on" : "measurement off");
            finish_event(c, ev.time);
            break;
        default: /* STREAM_END */
            break;
        }
    }
}

/* The objects of process `index` over time, from the series of its streams
 * just written: a counter track per type, on sequence c->sequence. */
static void objects(perfetto *c, size_t index, const tt_process *p)
{
    tt_objects_series *s = &c->objects;
    if (tt_objects_series_finish(s) != 0) {
        c->event.failed = 1;
        return;
    }
    char name[TT_STRING_MAX + 32];
    for (size_t i = 0; i < s->type_count; i++) {
        snprintf(name, sizeof name, "objects alive: %s", p->strings[s->types[i]]);
        reset(&c->inner);
        descriptor(c, objects_uuid(index, s->types[i]), process_uuid(index), name, DESCRIPTOR_COUNTER, &c->inner);
    }
    c->first_packet = 1;
    for (size_t i = 0; i < s->count; i++) {
        begin_event(c, COUNTER, objects_uuid(index, s->points[i].type));
        pb_double(&c->event, EVENT_DOUBLE_COUNTER_VALUE, (double)tt_objects_alive(&s->points[i]));
        finish_event(c, s->points[i].time);
    }
}

/* The asyncio tasks of process `index` (tasklanes.h): a track each, "task
 * NAME", under the process, a sequence each; its steps slices named by
 * their coroutine, the time between two a slice "suspended". */
static void task_tracks(perfetto *c, const tt_tasks *tasks, size_t index, const tt_process *p, uint32_t *sequence)
{
    for (size_t i = 0; tasks && i < tasks->lane_count; i++) {
        const tt_task_lane *l = &tasks->lanes[i];
        if (l->process != index) continue;
        uint64_t track = process_uuid(index) | 0x40000000u | l->task;
        size_t len = strlen(tt_task_lane_name(tasks, l));
        char *name = malloc(len + 6);
        if (!name) {
            c->packet.failed = 1;
            return;
        }
        memcpy(name, "task ", 5);
        memcpy(name + 5, tt_task_lane_name(tasks, l), len + 1);
        descriptor(c, track, process_uuid(index), name, 0, NULL);
        free(name);
        c->sequence = ++*sequence;
        c->first_packet = 1;
        for (size_t k = 0; k < l->step_count; k++) {
            const tt_task_step *step = &l->steps[k];
            if (k) {
                begin_event(c, SLICE_BEGIN, track);
                pb_string(&c->event, EVENT_NAME, "suspended");
                finish_event(c, l->steps[k - 1].end);
                begin_event(c, SLICE_END, track);
                finish_event(c, step->begin);
            }
            begin_event(c, SLICE_BEGIN, track);
            pb_string(&c->event, EVENT_NAME,
                      p->regions[step->region < p->region_count ? step->region : p->region_count].name);
            finish_event(c, step->begin);
            begin_event(c, SLICE_END, track);
            finish_event(c, step->end);
        }
    }
}

int tt_export_perfetto(const tt_trace *t, const char *path, tt_export_result *r, tt_error *err)
{
    perfetto c = {0};
    if (tt_export_trace_problems(t, r) != 0) return tt_fail(err, "out of memory");
    tt_tasks *tasks = NULL;
    if (tt_trace_has_tasks(t) && tt_tasks_build(t, &tasks, err) != 0) return -1;
    if (tt_out_open(&c.out, path, err) != 0) {
        tt_tasks_free(tasks);
        return -1;
    }
    int rc = 0;
    uint32_t sequence = 0;
    for (size_t i = 0; rc == 0 && i < tt_trace_process_count(t); i++) {
        const tt_process *p = tt_trace_process(t, i);
        process_descriptor(&c, i, p);
        if (c.counter_tracks) memset(c.counter_tracks, 0, c.counter_cap);
        tt_objects_series_reset(&c.objects);
        for (size_t s = 0; rc == 0 && s < p->thread_count; s++) {
            if (!p->threads[s].present) continue;
            thread_descriptor(&c, i, p, s);
            tt_cursor *cur;
            if ((rc = tt_cursor_open(t, p, s, &cur, err)) != 0) break;
            c.sequence = ++sequence;
            stream(&c, i, p, s, cur);
            if (tt_export_stream_done(cur, r) != 0) c.packet.failed = 1;
            tt_cursor_close(cur);
            if (c.packet.failed || c.event.failed || c.inner.failed || c.interned.failed || c.annotations.failed)
                rc = tt_fail(err, "out of memory");
        }
        if (rc == 0 && c.objects.count) {
            c.sequence = ++sequence;
            objects(&c, i, p);
            if (c.packet.failed || c.event.failed || c.inner.failed) rc = tt_fail(err, "out of memory");
        }
        if (rc == 0) task_tracks(&c, tasks, i, p, &sequence);
        if (rc == 0 && (c.packet.failed || c.event.failed || c.inner.failed)) rc = tt_fail(err, "out of memory");
    }
    flush_batch(&c);
    tt_tasks_free(tasks);
    pb *buffers[] = {&c.packet, &c.event, &c.inner, &c.interned, &c.annotations};
    for (size_t i = 0; i < sizeof buffers / sizeof *buffers; i++) free(buffers[i]->bytes);
    free(c.announced);
    free(c.open_args);
    free(c.counter_tracks);
    tt_objects_series_free(&c.objects);
    if (rc != 0) {
        tt_out_discard(&c.out);
        return rc;
    }
    r->bytes = tt_out_size(&c.out);
    return tt_out_close(&c.out, err);
}

/* records.c -- decoding the records of one chunk payload (see records.h). */
#include "records.h"

#include <string.h>

/* Each decoder reads from a local pointer and commits it to the iterator only
 * once the whole record decoded, so a malformed record leaves the iterator
 * at its start. The GET macros bail out of the decoder on truncation. */
#define GET_V(dst)                                               \
    do {                                                         \
        if (tt_get_varint(&p, end, &(dst)) != 0) goto truncated; \
    } while (0)

#define GET_U8(dst)                   \
    do {                              \
        if (p >= end) goto truncated; \
        (dst) = *p++;                 \
    } while (0)

/* A v length and that many bytes. */
#define GET_BYTES(ptr, len)                           \
    do {                                              \
        uint64_t n_;                                  \
        GET_V(n_);                                    \
        if (n_ > (uint64_t)(end - p)) goto truncated; \
        (ptr) = p;                                    \
        (len) = (size_t)n_;                           \
        p += n_;                                      \
    } while (0)

int tt_records_next_event(tt_records *it, tt_event_record *r, const char **why)
{
    const uint8_t *p = it->pos, *end = it->end;
    if (p >= end) return 0;

    uint8_t tag = *p++;
    if (tag < TT_EV_ENTER || tag > TT_EV_LAST || (tag > TT_EV_LONG_LAST && tag < TT_EV_ENTER_SHORT)) {
        *why = "unknown event record";
        return -1;
    }
    uint64_t dt;
    uint32_t *predicted = NULL; /* ENTER_PREDICTED: the slot that names its region */
    if (tag >= TT_EV_LEAVE_MEDIUM ||
        (tag >= TT_EV_ENTER_MEDIUM && tag < TT_EV_ENTER_PREDICTED)) { /* dt's high bits in the tag, its low 16 next */
        uint8_t low, high;
        GET_U8(low);
        GET_U8(high);
        uint8_t first = tag >= TT_EV_LEAVE_MEDIUM             ? TT_EV_LEAVE_MEDIUM
                        : tag >= TT_EV_ENTER_PREDICTED_MEDIUM ? TT_EV_ENTER_PREDICTED_MEDIUM
                                                              : TT_EV_ENTER_MEDIUM;
        dt = (uint64_t)(tag - first) << 16 | (uint64_t)high << 8 | low;
        if (first == TT_EV_ENTER_PREDICTED_MEDIUM) predicted = tt_predict_slot(it->predict);
        tag = first == TT_EV_LEAVE_MEDIUM ? TT_EV_LEAVE : TT_EV_ENTER;
    } else if (tag >= TT_EV_ENTER_SHORT) { /* a short form: dt's high bits in the tag, its low byte next */
        uint8_t low;
        GET_U8(low);
        if (tag >= TT_EV_ENTER_PREDICTED) {
            dt = (uint64_t)(tag - TT_EV_ENTER_PREDICTED) << 8 | low;
            predicted = tt_predict_slot(it->predict);
            tag = TT_EV_ENTER;
        } else {
            dt = (uint64_t)((tag - TT_EV_ENTER_SHORT) % TT_EV_SHORT_FORMS) << 8 | low;
            tag = tag < TT_EV_LEAVE_SHORT ? TT_EV_ENTER : TT_EV_LEAVE;
        }
    } else {
        GET_V(dt);
    }
    if (dt > UINT64_MAX - it->ticks) {
        *why = "event time overflows";
        return -1;
    }
    r->tag = tag;
    r->ticks = it->ticks + dt;

    r->again = tag == TT_EV_ENTER_AGAIN;
    if (r->again) tag = r->tag = TT_EV_ENTER;

    switch (tag) {
    case TT_EV_ENTER:
        if (predicted)
            r->id = *predicted;
        else
            GET_V(r->id);
        break;
    case TT_EV_MARK:
    case TT_EV_TASK_RESUME:
        GET_V(r->id);
        break;
    case TT_EV_PARAM_INT: {
        uint64_t z;
        GET_V(r->id);
        GET_V(z);
        r->int_value = tt_unzigzag(z);
        break;
    }
    case TT_EV_PARAM_UINT:
        GET_V(r->id);
        GET_V(r->uint_value);
        break;
    case TT_EV_PARAM_STRING:
        GET_V(r->id);
        GET_BYTES(r->str, r->str_len);
        break;
    case TT_EV_COUNTER: {
        GET_V(r->id);
        if (end - p < 8) goto truncated;
        uint64_t bits = tt_get_u64(p);
        p += 8;
        memcpy(&r->double_value, &bits, sizeof bits);
        break;
    }
    case TT_EV_MPI_SEND:
    case TT_EV_MPI_RECV:
    case TT_EV_MPI_ISEND:
    case TT_EV_MPI_IRECV:
        GET_V(r->mpi.peer);
        GET_V(r->mpi.tag);
        GET_V(r->mpi.comm);
        GET_V(r->mpi.bytes);
        if (tag == TT_EV_MPI_ISEND || tag == TT_EV_MPI_IRECV) GET_V(r->mpi.request);
        break;
    case TT_EV_MPI_ISEND_COMPLETE:
    case TT_EV_MPI_IRECV_REQUEST:
        GET_V(r->mpi.request);
        break;
    case TT_EV_MPI_COLLECTIVE_END:
        GET_U8(r->mpi.op);
        GET_V(r->mpi.comm);
        GET_V(r->mpi.root);
        GET_V(r->mpi.sent);
        GET_V(r->mpi.received);
        break;
    case TT_EV_OBJECTS:
        GET_V(r->objects.region);
        GET_V(r->objects.type);
        GET_V(r->objects.size);
        GET_V(r->objects.created);
        GET_V(r->objects.destroyed);
        break;
    case TT_EV_GC:
        GET_U8(r->gc.generation);
        GET_V(r->gc.collected);
        GET_V(r->gc.uncollectable);
        GET_V(r->gc.duration);
        break;
    case TT_EV_OPEN:
        GET_V(r->open.since);
        GET_V(r->open.count);
        r->open.regions = p;
        for (uint64_t i = 0; i < r->open.count; i++) {
            uint64_t region;
            GET_V(region);
        }
        break;
    case TT_EV_LEAVE:
    case TT_EV_RECORDING_OFF:
    case TT_EV_RECORDING_ON:
    case TT_EV_STREAM_END:
    case TT_EV_MPI_COLLECTIVE_BEGIN: /* the delta only */
        break;
    default:
        *why = "unknown event record";
        return -1;
    }
    if (tag == TT_EV_ENTER || tag == TT_EV_LEAVE) tt_records_took_call(it->predict, tag, r->id);
    it->pos = p;
    it->ticks = r->ticks;
    return 1;

truncated:
    *why = "event record runs past the end of its chunk";
    return -1;
}

int tt_records_next_def(tt_records *it, tt_def_record *d, const char **why)
{
    const uint8_t *p = it->pos, *end = it->end;
    if (p >= end) return 0;

    d->tag = *p++;
    switch (d->tag) {
    case TT_DEF_STRING:
        GET_V(d->string.id);
        GET_BYTES(d->string.bytes, d->string.len);
        break;
    case TT_DEF_REGION:
        GET_V(d->region.id);
        GET_V(d->region.name);
        GET_V(d->region.file);
        GET_V(d->region.line);
        GET_U8(d->region.kind);
        break;
    case TT_DEF_THREAD:
        GET_V(d->thread.stream);
        GET_V(d->thread.name);
        GET_V(d->thread.native_tid);
        break;
    case TT_DEF_PROCESS:
        GET_V(d->process.pid);
        GET_V(d->process.ppid);
        GET_V(d->process.name);
        GET_U8(d->process.clock);
        GET_V(d->process.ticks_per_second);
        break;
    case TT_DEF_CLOCK_SYNC:
        GET_V(d->clock_sync.ticks);
        GET_V(d->clock_sync.monotonic_ns);
        GET_V(d->clock_sync.realtime_ns);
        break;
    case TT_DEF_ATTRIBUTE:
        GET_V(d->attribute.key);
        GET_V(d->attribute.value);
        break;
    case TT_DEF_PROCESS_END:
        GET_V(d->process_end.ticks);
        GET_V(d->process_end.events);
        GET_V(d->process_end.waits);
        GET_V(d->process_end.wait_ns);
        break;
    case TT_DEF_MPI_RANK:
        GET_V(d->mpi_rank.rank);
        GET_V(d->mpi_rank.size);
        break;
    case TT_DEF_TASK:
        GET_V(d->task.id);
        GET_V(d->task.name);
        break;
    case TT_DEF_TASK_NAMED:
        GET_V(d->task.id);
        GET_BYTES(d->task.bytes, d->task.len);
        break;
    case TT_DEF_COROUTINE:
        GET_V(d->coroutine.region);
        break;
    case TT_DEF_OPEN_AT_START:
        GET_V(d->open_at_start.stream);
        GET_V(d->open_at_start.count);
        break;
    case TT_DEF_MEASUREMENT_OFF:
        GET_V(d->measurement_off.from);
        GET_V(d->measurement_off.to);
        break;
    case TT_DEF_THREAD_USAGE:
        GET_V(d->thread_usage.stream);
        GET_V(d->thread_usage.ticks);
        GET_V(d->thread_usage.cpu_ns);
        GET_V(d->thread_usage.samples);
        GET_V(d->thread_usage.gil_samples);
        break;
    case TT_DEF_MPI_COMM:
        GET_V(d->mpi_comm.id);
        GET_U8(d->mpi_comm.kind);
        GET_V(d->mpi_comm.parent);
        GET_V(d->mpi_comm.seq);
        GET_V(d->mpi_comm.size);
        GET_V(d->mpi_comm.listed);
        d->mpi_comm.members = p;
        for (uint64_t i = 0, member; i < d->mpi_comm.listed; i++) GET_V(member);
        d->mpi_comm.members_end = p;
        break;
    default:
        *why = "unknown definition record";
        return -1;
    }
    it->pos = p;
    return 1;

truncated:
    *why = "definition record runs past the end of its chunk";
    return -1;
}

/* mpi_view.c -- the communication of an MPI job, matched across its ranks
 * (see mpi_view.h).
 *
 * One pass over the ranks' streams collects sends, receives, receive
 * requests and collective calls into flat arrays; sorting them makes the
 * matching a merge: sends and receives sorted by envelope, then by send
 * time and by post time, pair up in order within each envelope.
 */
#include "mpi_view.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"

#define NONE TT_MPI_VIEW_NONE

/* A send or a receive, before matching. */
typedef struct half {
    uint32_t sender, receiver, comm, tag;
    uint64_t time;  /* of its record */
    uint64_t order; /* a send: its time; a receive: when it was posted */
    uint64_t seq;   /* read order: ties keep it */
    uint64_t bytes;
    uint64_t request; /* an MPI_IRECV's, to find when it was posted */
    tt_mpi_view_place place;
    int nonblocking;
} half;

typedef struct posted {
    uint32_t process;
    uint64_t request, time;
} posted;

/* A collective call before it is placed in its operation. */
typedef struct raw_call {
    uint32_t process, comm;
    uint64_t nth; /* its place among the process's calls on comm */
    uint8_t op;
    uint32_t root;
    tt_mpi_view_call call;
} raw_call;

typedef struct builder {
    const tt_trace *trace;
    tt_mpi_view *v;
    half *sends, *recvs;
    size_t send_count, send_cap, recv_count, recv_cap;
    posted *posts;
    size_t post_count, post_cap;
    raw_call *calls;
    size_t call_count, call_cap;
    size_t message_cap;
    uint64_t seq;
} builder;

/* ---- reading ---- */

typedef struct stream_state {
    uint64_t last_enter;       /* the latest call's start: a blocking receive was posted then */
    uint64_t collective_begin; /* of the collective call open, if any */
    int in_collective;
} stream_state;

static int add_half(builder *b, const tt_process *p, uint32_t process, uint32_t stream, const tt_event *ev,
                    const stream_state *s)
{
    uint32_t comm = tt_mpi_comms_of(&b->v->comms, process, ev->comm);
    uint64_t peer = tt_comm_world_rank(p, ev->comm, ev->peer);
    if (comm == NONE || peer > UINT32_MAX) return 0;
    int sending = ev->kind == TT_EV_MPI_SEND || ev->kind == TT_EV_MPI_ISEND;
    half h = {.sender = sending ? (uint32_t)p->mpi_rank : (uint32_t)peer,
              .receiver = sending ? (uint32_t)peer : (uint32_t)p->mpi_rank,
              .comm = comm,
              .tag = ev->tag,
              .time = ev->time,
              .order = sending ? ev->time : s->last_enter,
              .seq = b->seq++,
              .bytes = ev->bytes,
              .request = ev->request,
              .place = {process, stream},
              .nonblocking = ev->kind == TT_EV_MPI_IRECV};
    if (sending) {
        if (TT_RESERVE(b->sends, b->send_cap, b->send_count + 1) != 0) return -1;
        b->sends[b->send_count++] = h;
    } else {
        if (TT_RESERVE(b->recvs, b->recv_cap, b->recv_count + 1) != 0) return -1;
        b->recvs[b->recv_count++] = h;
    }
    return 0;
}

static int add_call(builder *b, const tt_process *p, uint32_t process, uint32_t stream, const tt_event *ev,
                    const stream_state *s)
{
    if (TT_RESERVE(b->calls, b->call_cap, b->call_count + 1) != 0) return -1;
    uint64_t root = ev->root == UINT32_MAX ? UINT64_MAX : tt_comm_world_rank(p, ev->comm, ev->root);
    b->calls[b->call_count++] = (raw_call){.process = process,
                                           .comm = tt_mpi_comms_of(&b->v->comms, process, ev->comm),
                                           .op = ev->op,
                                           .root = root > UINT32_MAX ? NONE : (uint32_t)root,
                                           .call = {.begin = s->in_collective ? s->collective_begin : ev->time,
                                                    .end = ev->time,
                                                    .rank = (uint32_t)p->mpi_rank,
                                                    .place = {process, stream},
                                                    .sent = ev->sent,
                                                    .received = ev->received}};
    return 0;
}

static int read_stream(builder *b, const tt_process *p, uint32_t process, uint32_t stream, tt_error *err)
{
    tt_cursor *c;
    if (tt_cursor_open(b->trace, p, stream, &c, err) != 0) return -1;
    stream_state s = {0};
    tt_event ev;
    int rc = 0;
    while (rc == 0 && tt_cursor_next(c, &ev)) {
        switch (ev.kind) {
        case TT_EV_ENTER:
            s.last_enter = ev.time;
            break;
        case TT_EV_MPI_SEND:
        case TT_EV_MPI_ISEND:
        case TT_EV_MPI_RECV:
        case TT_EV_MPI_IRECV:
            rc = add_half(b, p, process, stream, &ev, &s);
            break;
        case TT_EV_MPI_IRECV_REQUEST:
            if (TT_RESERVE(b->posts, b->post_cap, b->post_count + 1) != 0)
                rc = -1;
            else
                b->posts[b->post_count++] = (posted){process, ev.request, ev.time};
            break;
        case TT_EV_MPI_COLLECTIVE_BEGIN:
            s.collective_begin = ev.time;
            s.in_collective = 1;
            break;
        case TT_EV_MPI_COLLECTIVE_END:
            if (tt_mpi_comms_of(&b->v->comms, process, ev.comm) != NONE) rc = add_call(b, p, process, stream, &ev, &s);
            s.in_collective = 0;
            break;
        default:
            break;
        }
    }
    tt_cursor_close(c);
    if (rc != 0) tt_fail(err, "out of memory reading the MPI communication");
    return rc;
}

/* ---- matching ---- */

static int cmp_u64(uint64_t a, uint64_t b) { return (a > b) - (a < b); }

static int by_envelope(const half *x, const half *y)
{
    int c = cmp_u64(x->sender, y->sender);
    if (!c) c = cmp_u64(x->receiver, y->receiver);
    if (!c) c = cmp_u64(x->comm, y->comm);
    if (!c) c = cmp_u64(x->tag, y->tag);
    return c;
}

static int by_envelope_then_order(const void *a, const void *b)
{
    const half *x = a, *y = b;
    int c = by_envelope(x, y);
    if (!c) c = cmp_u64(x->order, y->order);
    if (!c) c = cmp_u64(x->time, y->time);
    if (!c) c = cmp_u64(x->seq, y->seq);
    return c;
}

static int by_post(const void *a, const void *b)
{
    const posted *x = a, *y = b;
    int c = cmp_u64(x->process, y->process);
    return c ? c : cmp_u64(x->request, y->request);
}

/* An MPI_IRECV was posted at its request's MPI_IRECV_REQUEST (requests are
 * numbered once per process); without one, when it completed. */
static void find_posts(builder *b)
{
    if (b->post_count > 1) qsort(b->posts, b->post_count, sizeof *b->posts, by_post);
    for (size_t i = 0; i < b->recv_count; i++) {
        half *h = &b->recvs[i];
        h->order = h->nonblocking ? h->time : h->order;
        if (!h->nonblocking) continue;
        posted key = {h->place.process, h->request, 0};
        const posted *found = bsearch(&key, b->posts, b->post_count, sizeof *b->posts, by_post);
        if (found) h->order = found->time;
    }
}

static int add_message(builder *b, const half *send, const half *recv)
{
    tt_mpi_view *v = b->v;
    if (TT_RESERVE(v->messages, b->message_cap, v->message_count + 1) != 0) return -1;
    v->messages[v->message_count++] = (tt_mpi_view_message){.send_time = send->time,
                                                            .recv_time = recv ? recv->time : send->time,
                                                            .sender = send->sender,
                                                            .receiver = send->receiver,
                                                            .comm = send->comm,
                                                            .tag = send->tag,
                                                            .bytes = send->bytes,
                                                            .received = recv ? recv->bytes : 0,
                                                            .from = send->place,
                                                            .to = recv ? recv->place : send->place,
                                                            .matched = recv != NULL};
    return 0;
}

static uint64_t message_start(const tt_mpi_view_message *m)
{
    return m->send_time < m->recv_time ? m->send_time : m->recv_time;
}

static uint64_t message_end(const tt_mpi_view_message *m)
{
    return m->send_time < m->recv_time ? m->recv_time : m->send_time;
}

static int by_start(const void *a, const void *b)
{
    const tt_mpi_view_message *x = a, *y = b;
    int c = cmp_u64(message_start(x), message_start(y));
    if (!c) c = cmp_u64(x->sender, y->sender);
    return c ? c : cmp_u64(x->receiver, y->receiver);
}

static int match(builder *b)
{
    find_posts(b);
    if (b->send_count > 1) qsort(b->sends, b->send_count, sizeof *b->sends, by_envelope_then_order);
    if (b->recv_count > 1) qsort(b->recvs, b->recv_count, sizeof *b->recvs, by_envelope_then_order);
    size_t i = 0, j = 0;
    tt_mpi_view *v = b->v;
    while (i < b->send_count || j < b->recv_count) {
        int c = i == b->send_count ? 1 : j == b->recv_count ? -1 : by_envelope(&b->sends[i], &b->recvs[j]);
        if (c == 0) {
            if (add_message(b, &b->sends[i++], &b->recvs[j++]) != 0) return -1;
        } else if (c < 0) {
            if (add_message(b, &b->sends[i++], NULL) != 0) return -1;
            v->unmatched_sends++;
        } else {
            j++;
            v->unmatched_receives++;
        }
    }
    if (v->message_count > 1) qsort(v->messages, v->message_count, sizeof *v->messages, by_start);
    for (size_t k = 0; k < v->message_count; k++) {
        uint64_t d = message_end(&v->messages[k]) - message_start(&v->messages[k]);
        if (d > v->longest_message) v->longest_message = d;
    }
    return 0;
}

/* ---- collectives ---- */

static int by_process_comm_begin(const void *a, const void *b)
{
    const raw_call *x = a, *y = b;
    int c = cmp_u64(x->process, y->process);
    if (!c) c = cmp_u64(x->comm, y->comm);
    if (!c) c = cmp_u64(x->call.begin, y->call.begin);
    return c ? c : cmp_u64(x->call.end, y->call.end);
}

static int by_operation(const void *a, const void *b)
{
    const raw_call *x = a, *y = b;
    int c = cmp_u64(x->comm, y->comm);
    if (!c) c = cmp_u64(x->nth, y->nth);
    return c ? c : cmp_u64(x->call.rank, y->call.rank);
}

static int by_begin(const void *a, const void *b)
{
    const tt_mpi_view_collective *x = a, *y = b;
    int c = cmp_u64(x->begin, y->begin);
    return c ? c : cmp_u64(x->comm, y->comm);
}

static int group_collectives(builder *b)
{
    tt_mpi_view *v = b->v;
    size_t n = b->call_count;
    if (n > 1) qsort(b->calls, n, sizeof *b->calls, by_process_comm_begin);
    for (size_t i = 0; i < n; i++) {
        int same = i > 0 && b->calls[i].process == b->calls[i - 1].process && b->calls[i].comm == b->calls[i - 1].comm;
        b->calls[i].nth = same ? b->calls[i - 1].nth + 1 : 0;
    }
    if (n > 1) qsort(b->calls, n, sizeof *b->calls, by_operation);
    /* At most one operation per call. */
    if (!(v->calls = malloc((n ? n : 1) * sizeof *v->calls)) ||
        !(v->collectives = malloc((n ? n : 1) * sizeof *v->collectives)))
        return -1;
    for (size_t i = 0; i < n; i++) {
        const raw_call *r = &b->calls[i];
        v->calls[i] = r->call;
        if (i == 0 || r->comm != b->calls[i - 1].comm || r->nth != b->calls[i - 1].nth)
            v->collectives[v->collective_count++] = (tt_mpi_view_collective){.begin = r->call.begin,
                                                                             .end = r->call.end,
                                                                             .comm = r->comm,
                                                                             .op = r->op,
                                                                             .root = r->root,
                                                                             .first_call = i};
        tt_mpi_view_collective *op = &v->collectives[v->collective_count - 1];
        op->call_count++;
        if (r->call.begin < op->begin) op->begin = r->call.begin;
        if (r->call.end > op->end) op->end = r->call.end;
        if (op->end - op->begin > v->longest_collective) v->longest_collective = op->end - op->begin;
    }
    if (v->collective_count > 1) qsort(v->collectives, v->collective_count, sizeof *v->collectives, by_begin);
    return 0;
}

/* ---- building ---- */

void tt_mpi_view_free(tt_mpi_view *v)
{
    if (!v) return;
    tt_mpi_comms_free(&v->comms);
    free(v->messages);
    free(v->collectives);
    free(v->calls);
    free(v);
}

int tt_mpi_view_build(const tt_trace *t, tt_mpi_view **out, tt_error *err)
{
    builder b = {.trace = t, .v = calloc(1, sizeof(tt_mpi_view))};
    int rc = b.v && tt_mpi_comms_build(t, &b.v->comms) == 0
                 ? 0
                 : tt_fail(err, "out of memory reading the MPI communication");
    size_t n = tt_trace_process_count(t);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const tt_process *p = tt_trace_process(t, i);
        if (!p->mpi_size) continue;
        for (size_t s = 0; rc == 0 && s < p->thread_count; s++)
            if (p->threads[s].present) rc = read_stream(&b, p, (uint32_t)i, (uint32_t)s, err);
    }
    if (rc == 0 && (match(&b) != 0 || group_collectives(&b) != 0))
        rc = tt_fail(err, "out of memory matching the MPI communication");
    free(b.sends);
    free(b.recvs);
    free(b.posts);
    free(b.calls);
    if (rc != 0) {
        tt_mpi_view_free(b.v);
        return -1;
    }
    *out = b.v;
    return 0;
}

/* ---- queries ---- */

/* How a query reads items sorted by start, none longer than `longest`. */
typedef struct timed {
    uint64_t (*start)(const tt_mpi_view *v, size_t i);
    uint64_t (*end)(const tt_mpi_view *v, size_t i);
    int (*keep)(const tt_mpi_view *v, size_t i);
} timed;

/* The first of `count` items that may reach t0: nothing that starts before
 * t0 - longest does. */
static size_t seek(const tt_mpi_view *v, size_t count, uint64_t longest, uint64_t (*start)(const tt_mpi_view *, size_t),
                   uint64_t t0)
{
    size_t lo = 0, hi = count;
    uint64_t from = t0 > longest ? t0 - longest : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (start(v, mid) < from)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Of the `count` items that meet [t0, t1) and are kept: their indices, at
 * most `limit`, evenly spread over them; returns how many there are. */
static size_t spread(const tt_mpi_view *v, size_t count, uint64_t longest, const timed *how, uint64_t t0, uint64_t t1,
                     uint32_t *out, size_t limit)
{
    size_t lo = seek(v, count, longest, how->start, t0), total = 0, seen = 0, taken = 0;
    for (size_t i = lo; i < count && how->start(v, i) < t1; i++) total += how->end(v, i) >= t0 && how->keep(v, i);
    for (size_t i = lo; taken < limit && i < count && how->start(v, i) < t1; i++) {
        if (how->end(v, i) < t0 || !how->keep(v, i)) continue;
        /* the seen-th of total is taken once it reaches the next of `limit` even steps: all of them when
         * limit >= total, else exactly limit */
        if (seen++ * (uint64_t)limit / total >= taken) out[taken++] = (uint32_t)i;
    }
    return total;
}

static uint64_t line_start(const tt_mpi_view *v, size_t i) { return message_start(&v->messages[i]); }
static uint64_t line_end(const tt_mpi_view *v, size_t i) { return message_end(&v->messages[i]); }
static int line_drawn(const tt_mpi_view *v, size_t i) { return v->messages[i].matched; }

size_t tt_mpi_view_lines(const tt_mpi_view *v, uint64_t t0, uint64_t t1, uint32_t *out, size_t limit)
{
    static const timed lines = {line_start, line_end, line_drawn};
    return spread(v, v->message_count, v->longest_message, &lines, t0, t1, out, limit);
}

static uint64_t collective_begin(const tt_mpi_view *v, size_t i) { return v->collectives[i].begin; }
static uint64_t collective_end(const tt_mpi_view *v, size_t i) { return v->collectives[i].end; }
static int every(const tt_mpi_view *v, size_t i) { return (void)v, (void)i, 1; }

size_t tt_mpi_view_collectives_in(const tt_mpi_view *v, uint64_t t0, uint64_t t1, uint32_t *out, size_t limit)
{
    static const timed collectives = {collective_begin, collective_end, every};
    return spread(v, v->collective_count, v->longest_collective, &collectives, t0, t1, out, limit);
}

/* The first message that may have been sent at t0 or later (a message
 * starts at the earlier of its send and receive, at most `longest` before
 * either); those sent before t1 start before it. */
static size_t first_sent(const tt_mpi_view *v, uint64_t t0)
{
    return seek(v, v->message_count, v->longest_message, line_start, t0);
}

static int by_pair(const void *a, const void *b)
{
    const tt_mpi_view_pair *x = a, *y = b;
    int c = cmp_u64(x->sender, y->sender);
    return c ? c : cmp_u64(x->receiver, y->receiver);
}

long tt_mpi_view_matrix(const tt_mpi_view *v, uint64_t t0, uint64_t t1, tt_mpi_view_pair **out)
{
    /* Pairs are few (ranks talk to some neighbours), messages many: sort
     * each message into a list of pairs kept sorted, found by bisection. */
    tt_mpi_view_pair *pairs = NULL;
    size_t count = 0, cap = 0;
    for (size_t i = first_sent(v, t0); i < v->message_count && line_start(v, i) < t1; i++) {
        const tt_mpi_view_message *m = &v->messages[i];
        if (m->send_time < t0 || m->send_time >= t1) continue;
        tt_mpi_view_pair key = {m->sender, m->receiver, 0, 0};
        size_t lo = 0, hi = count;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (by_pair(&pairs[mid], &key) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == count || by_pair(&pairs[lo], &key) != 0) {
            if (TT_RESERVE(pairs, cap, count + 1) != 0) {
                free(pairs);
                return -1;
            }
            memmove(&pairs[lo + 1], &pairs[lo], (count - lo) * sizeof *pairs);
            pairs[lo] = key;
            count++;
        }
        pairs[lo].count++;
        pairs[lo].bytes += m->bytes;
    }
    *out = pairs;
    return (long)count;
}

size_t tt_mpi_view_pair_messages(const tt_mpi_view *v, uint32_t sender, uint32_t receiver, uint64_t t0, uint64_t t1,
                                 size_t skip, uint32_t *out, size_t limit)
{
    size_t total = 0;
    for (size_t i = first_sent(v, t0); i < v->message_count && line_start(v, i) < t1; i++) {
        const tt_mpi_view_message *m = &v->messages[i];
        if (m->sender != sender || m->receiver != receiver || m->send_time < t0 || m->send_time >= t1) continue;
        if (total >= skip && total - skip < limit) out[total - skip] = (uint32_t)i;
        total++;
    }
    return total;
}

void tt_mpi_view_comm_stats_in(const tt_mpi_view *v, uint64_t t0, uint64_t t1, tt_mpi_view_comm_stats *stats)
{
    memset(stats, 0, v->comms.count * sizeof *stats);
    for (size_t i = first_sent(v, t0); i < v->message_count && line_start(v, i) < t1; i++) {
        const tt_mpi_view_message *m = &v->messages[i];
        if (m->send_time < t0 || m->send_time >= t1) continue;
        stats[m->comm].messages++;
        stats[m->comm].bytes += m->bytes;
    }
    for (size_t i = seek(v, v->collective_count, 0, collective_begin, t0); i < v->collective_count; i++) {
        const tt_mpi_view_collective *c = &v->collectives[i];
        if (c->begin >= t1) break;
        tt_mpi_view_comm_stats *s = &stats[c->comm];
        s->collectives++;
        for (size_t k = 0; k < c->call_count; k++) {
            const tt_mpi_view_call *call = &v->calls[c->first_call + k];
            s->collective_ns += call->end - call->begin;
            s->collective_bytes += call->sent;
        }
    }
}

/* stream.c -- the slow parts of a stream: rotation, growth, rare records. */
#include "stream.h"

#include <stdlib.h>

#include "clock.h"

#include "session.h"

/* Puts `fresh` in place of the current chunk, which goes to the writer. */
static tt_chunk *replace_chunk(tt_stream *s, tt_chunk *fresh)
{
    tt_session *session = s->session;
    fresh->stream = s;
    fresh->seq = s->next_seq++;
    fresh->base_ticks = s->last_ticks;
    fresh->flags = 0;
    if (s->kind == TT_FILE_EVENTS) {
        tt_calltree_reserve(&s->tree); /* room for this chunk's calls */
        tt_calltree_rotated(&s->tree);
        if (s->tree.lost) s->fast_used_limit = 0;
    }
    memset(&s->predict, 0, sizeof s->predict); /* a chunk decodes on its own */
    atomic_store_explicit(&fresh->used, 0, memory_order_relaxed);
    tt_chunk *full = atomic_load_explicit(&s->chunk, memory_order_relaxed);
    atomic_store_explicit(&s->chunk, fresh, memory_order_release);
    tt_writer_submit(&session->writer, full);
    return fresh;
}

tt_chunk *tt_stream_rotate(tt_stream *s)
{
    tt_session *session = s->session;
    tt_chunk *fresh = tt_pool_try_get(&session->pool);
    if (!fresh) {
        /* The disk is slower than the program: wait, never drop. */
        if (session->config.blocking_begin) session->config.blocking_begin();
        fresh = tt_pool_get_wait(&session->pool);
        if (session->config.blocking_end) session->config.blocking_end();
    }
    return replace_chunk(s, fresh);
}

/* The most an OPEN record takes of a chunk: a quarter, as a string
 * parameter's value (TT_PARAM_STRING_MAX), so that the record after it
 * always fits. A deeper stack loses its outermost calls there (format.h). */
#define TT_OPEN_MAX (TT_CHUNK_PAYLOAD_SIZE / 4)

static uint32_t varint_size(uint64_t v)
{
    uint32_t n = 1;
    for (; v >= 0x80; v >>= 7) n++;
    return n;
}

/* Begins chunk c, fresh, with the recorded calls open (format.h: OPEN),
 * innermost first, as the call tree's current node and its ancestors give
 * them: no event, so the stream's count of records stays. */
static void put_open(tt_stream *s, tt_chunk *c)
{
    const tt_calltree *t = &s->tree;
    uint32_t count = 0, bytes = 0;
    const tt_calltree_node *node = t->cur;
    for (; node->region != TT_CALLTREE_ROOT; node = tt_calltree_at(t, node->parent), count++) {
        uint32_t size = varint_size(tt_calltree_region(t, node));
        if (bytes + size > TT_OPEN_MAX - TT_RECORD_MAX_FIXED) break; /* room for tag, dt, since, count */
        bytes += size;
    }
    uint8_t *p = c->data;
    *p++ = TT_EV_OPEN;
    *p++ = 0; /* dt: at the chunk's base time */
    p = tt_put_varint(p, c->base_ticks - s->began);
    p = tt_put_varint(p, count);
    node = t->cur;
    for (uint32_t i = 0; i < count; i++, node = tt_calltree_at(t, node->parent))
        p = tt_put_varint(p, tt_calltree_region(t, node));
    atomic_store_explicit(&c->used, (uint32_t)(p - c->data), memory_order_release);
}

tt_chunk *tt_stream_rotate_records(tt_stream *s)
{
    tt_chunk *c = tt_stream_rotate(s);
    if (s->session->config.keep) put_open(s, c);
    return c;
}

tt_chunk *tt_stream_try_rotate(tt_stream *s)
{
    tt_chunk *fresh = tt_pool_try_get(&s->session->pool);
    return fresh ? replace_chunk(s, fresh) : NULL;
}

void tt_stream_enter_now(tt_stream *s, uint32_t region) { tt_stream_enter(s, tt_clock_now(), region); }

void tt_stream_leave_now(tt_stream *s) { tt_stream_leave(s, tt_clock_now()); }

void tt_stream_enter_step(tt_stream *s, uint32_t region, uint32_t task)
{
    uint32_t used;
    tt_chunk *c = tt_record_chunk(s, 0, &used);
    if (tt_stream_gave_up(s)) return;
    tt_calltree_node *node = tt_calltree_step_find(&s->tree, region, task);
    tt_stream_enter_at(s, c, used, tt_stream_dt(s, tt_clock_now()), region);
    tt_calltree_step_enter(&s->tree, node, task, s->last_ticks);
}

void tt_stream_give_up(tt_stream *s)
{
    tt_stream_leave_all(s, tt_clock_now());
    s->fast_used_limit = 0;
}

void tt_stream_leave_all(tt_stream *s, uint64_t now)
{
    while (tt_stream_is_open(s)) tt_stream_leave(s, now);
}

void tt_stream_enter_again(tt_stream *s, uint64_t now, uint32_t region)
{
    uint32_t used;
    tt_chunk *c = tt_record_chunk(s, 0, &used);
    if (tt_stream_gave_up(s)) return;
    uint64_t dt = tt_stream_dt(s, now);
    tt_calltree_node *node = tt_calltree_find(&s->tree, region);
    tt_calltree_enter_node(&s->tree, node, s->last_ticks);
    node->visits--;
    tt_stream_predict_enter(s, region);
    uint8_t *p = c->data + used;
    *p = TT_EV_ENTER_AGAIN;
    tt_record_commit_at(s, c, used, (uint32_t)(tt_put_varint(tt_put_varint(p + 1, dt), region) - p));
}

/* Closes the open entries (tt_stream_entries: entries, depth) from index
 * `at` up, then opens those from index `again` up once more, at `now`. */
static void close_and_reopen(tt_stream *s, uint64_t now, const uint32_t *entries, uint32_t depth, uint32_t at,
                             uint32_t again)
{
    for (uint32_t i = at; i < depth; i++) tt_stream_leave(s, now);
    for (uint32_t i = again; i < depth; i++) {
        if (entries[i] < TT_STACK_REGION)
            tt_stream_enter_again(s, now, entries[i]);
        else
            tt_stream_skip(s, entries[i]);
    }
}

void tt_stream_return(tt_stream *s, uint64_t now)
{
    if (tt_likely(tt_stream_top(s) != TT_STACK_REGION)) {
        tt_stream_leave(s, now);
        return;
    }
    uint32_t depth;
    uint32_t *entries = tt_stream_entries(s, &depth);
    if (!entries) { /* out of memory: the regions end with the call */
        while (tt_stream_top(s) == TT_STACK_REGION) tt_stream_leave(s, now), tt_stream_leave(s, now);
        tt_stream_leave(s, now);
        return;
    }
    /* entries[from .. depth): each user region (a region id, or
     * TT_STACK_SKIP) and its TT_STACK_REGION, above the call; none below
     * them is a call begun before the measurement, whose return is dropped. */
    uint32_t from = depth;
    while (from >= 2 && entries[from - 1] == TT_STACK_REGION) from -= 2;
    if (from > 0) close_and_reopen(s, now, entries, depth, from - 1, from);
    free(entries);
}

int tt_stream_end_region(tt_stream *s, uint64_t now, uint32_t region)
{
    uint32_t depth;
    uint32_t *entries = tt_stream_entries(s, &depth);
    if (!entries) return -1;
    /* The innermost user region of that id, else the innermost one not
     * recorded (whose name the stack does not keep). */
    uint32_t found = 0, skipped = 0;
    for (uint32_t i = depth; i-- > 1 && !found;) {
        if (entries[i] != TT_STACK_REGION) continue;
        if (entries[i - 1] == region) found = i;
        if (entries[i - 1] == TT_STACK_SKIP && !skipped) skipped = i;
    }
    if (!found) found = skipped;
    if (found) close_and_reopen(s, now, entries, depth, found - 1, found + 1);
    free(entries);
    return found ? 1 : 0;
}

int tt_stream_reserve_skips(tt_stream *s, uint32_t more)
{
    uint64_t need = (uint64_t)s->skip_count + more, cap = s->skip_cap ? s->skip_cap : 64;
    if (need <= s->skip_cap) return 0;
    while (cap < need) cap *= 2;
    uint32_t *skips = cap <= UINT32_MAX ? realloc(s->skips, cap * sizeof *skips) : NULL;
    if (!skips) return -1;
    s->skips = skips;
    s->skip_cap = (uint32_t)cap;
    return 0;
}

void tt_stream_free_skips(tt_stream *s)
{
    free(s->skips);
    s->skips = NULL;
    s->skip_cap = s->skip_count = s->fast_used_limit = 0;
}

/* The recorded calls open: the current node's depth. */
static uint32_t recorded_open(const tt_calltree *t)
{
    uint32_t depth = 0;
    const tt_calltree_node *node = t->cur;
    for (; node->region != TT_CALLTREE_ROOT; node = tt_calltree_at(t, node->parent)) depth++;
    return depth;
}

uint32_t *tt_stream_entries(const tt_stream *s, uint32_t *count)
{
    const tt_calltree *t = &s->tree;
    uint32_t n = recorded_open(t) + s->skip_count, k = s->skip_count;
    uint32_t *out = malloc((n ? n : 1) * sizeof *out);
    if (!out) return NULL;
    *count = n;
    /* From the top down: each node's skipped calls, then its own. */
    for (const tt_calltree_node *node = t->cur;; node = tt_calltree_at(t, node->parent)) {
        uint32_t above = node->skipped & ~TT_CALLTREE_ROOT_SKIPPED;
        n -= above;
        k -= above;
        if (above) memcpy(out + n, s->skips + k, above * sizeof *out); /* skips is NULL until a skip */
        if (node->region == TT_CALLTREE_ROOT) break;
        out[--n] = tt_calltree_region(t, node);
    }
    return out;
}

int tt_stream_insert_skips(tt_stream *s, uint32_t at, uint32_t count)
{
    if (count == 0) return 0; /* and skips may still be NULL, which memmove must not see */
    if (tt_stream_reserve_skips(s, count) < 0) return -1;
    tt_calltree *t = &s->tree;
    uint32_t n = recorded_open(t) + s->skip_count, k = s->skip_count;
    /* The node whose skipped calls (those at n - above up to n) the index
     * falls among, or just above. */
    tt_calltree_node *node = t->cur;
    for (;;) {
        uint32_t above = node->skipped & ~TT_CALLTREE_ROOT_SKIPPED;
        if (at >= n - above) {
            k -= n - (at < n ? at : n);
            break;
        }
        n -= above + 1;
        k -= above;
        node = tt_calltree_at(t, node->parent);
    }
    memmove(s->skips + k + count, s->skips + k, (size_t)(s->skip_count - k) * sizeof *s->skips);
    for (uint32_t i = 0; i < count; i++) s->skips[k + i] = TT_STACK_SKIP;
    s->skip_count += count;
    node->skipped += count;
    return 0;
}

void tt_stream_mark(tt_stream *s, uint64_t now, uint8_t tag, uint32_t name)
{
    uint8_t *p = tt_record_begin(s, tag, now, 0);
    tt_record_commit(s, tt_put_varint(p, name));
}

void tt_stream_param_int(tt_stream *s, uint64_t now, uint32_t name, int64_t value)
{
    uint8_t *p = tt_record_begin(s, TT_EV_PARAM_INT, now, 0);
    p = tt_put_varint(p, name);
    tt_record_commit(s, tt_put_varint(p, tt_zigzag(value)));
}

void tt_stream_param_uint(tt_stream *s, uint64_t now, uint32_t name, uint64_t value)
{
    uint8_t *p = tt_record_begin(s, TT_EV_PARAM_UINT, now, 0);
    p = tt_put_varint(p, name);
    tt_record_commit(s, tt_put_varint(p, value));
}

/* A string value longer than a quarter chunk is cut there: parameters are
 * labels, not payloads. */
#define TT_PARAM_STRING_MAX (TT_CHUNK_PAYLOAD_SIZE / 4)

void tt_stream_param_string(tt_stream *s, uint64_t now, uint32_t name, const char *value, size_t len)
{
    if (len > TT_PARAM_STRING_MAX) len = TT_PARAM_STRING_MAX;
    uint8_t *p = tt_record_begin(s, TT_EV_PARAM_STRING, now, (uint32_t)len);
    p = tt_put_varint(p, name);
    p = tt_put_varint(p, len);
    memcpy(p, value, len);
    tt_record_commit(s, p + len);
}

void tt_stream_counter(tt_stream *s, uint64_t now, uint32_t name, double value)
{
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    uint8_t *p = tt_record_begin(s, TT_EV_COUNTER, now, 0);
    p = tt_put_varint(p, name);
    tt_put_u64(p, bits);
    tt_record_commit(s, p + 8);
}

int tt_stream_objects(tt_stream *s, uint64_t now, const tt_stream_objects_counts *n, int may_wait)
{
    enum { SIZE = 1 + 6 * 10 }; /* tag, dt and five fields */
    tt_chunk *c = atomic_load_explicit(&s->chunk, memory_order_relaxed);
    if (!may_wait &&
        atomic_load_explicit(&c->used, memory_order_relaxed) + SIZE > TT_CHUNK_PAYLOAD_SIZE - TT_RECORD_MAX_FIXED) {
        tt_chunk *fresh = tt_pool_try_get(&s->session->pool);
        if (!fresh) return -1;
        replace_chunk(s, fresh);
        if (s->session->config.keep) put_open(s, fresh);
    }
    uint8_t *p = tt_record_begin(s, TT_EV_OBJECTS, now, SIZE - TT_RECORD_MAX_FIXED);
    tt_stream_counted(s);
    p = tt_put_varint(p, n->region);
    p = tt_put_varint(p, n->type);
    p = tt_put_varint(p, n->size);
    p = tt_put_varint(p, n->created);
    tt_record_commit(s, tt_put_varint(p, n->destroyed));
    return 0;
}

void tt_stream_plain(tt_stream *s, uint64_t now, uint8_t tag) { tt_record_commit(s, tt_record_begin(s, tag, now, 0)); }

void tt_stream_gap(tt_stream *s, uint64_t from, uint64_t to)
{
    /* Room for both records, so that no chunk begins inside the gap: a
     * reader starting at a chunk (tt_cursor_seek) knows no gap before it. */
    tt_record_reserve(s, TT_RECORD_MAX_FIXED);
    tt_stream_plain(s, from, TT_EV_RECORDING_OFF);
    from = s->last_ticks;
    tt_stream_plain(s, to, TT_EV_RECORDING_ON);
    tt_calltree_gap(&s->tree, s->last_ticks - from);
}

void tt_stream_gc(tt_stream *s, uint64_t now, uint64_t start, uint8_t generation, uint64_t collected,
                  uint64_t uncollectable)
{
    uint8_t *p = tt_record_begin(s, TT_EV_GC, now, 10);
    *p++ = generation;
    p = tt_put_varint(p, collected);
    p = tt_put_varint(p, uncollectable);
    uint64_t duration = now > start ? now - start : 0;
    tt_record_commit(s, tt_put_varint(p, duration));
    /* As a reader takes it: a duration longer than the record's time is none. */
    tt_calltree_gc_done(&s->tree, generation, duration <= s->last_ticks ? duration : 0, collected, uncollectable);
}

void tt_stream_close(tt_stream *s, uint64_t now)
{
    tt_stream_leave_all(s, now);
    tt_stream_plain(s, now, TT_EV_STREAM_END);
    tt_calltree_write(s);
    tt_chunk *last = atomic_load_explicit(&s->chunk, memory_order_relaxed);
    atomic_store_explicit(&s->chunk, NULL, memory_order_release);
    tt_writer_submit(&s->session->writer, last);
}

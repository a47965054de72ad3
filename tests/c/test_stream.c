/* test_stream.c -- the stream's ENTER and LEAVE records (stream.h), written
 * by the real session at chosen times and read back by the reader: every
 * form format.h defines, at the edges of the deltas each one takes, comes
 * back with its exact ticks and region, and takes the bytes its form says;
 * a clock that goes back stamps a record at the last one's time. And its
 * stack of open calls, folded into the call tree: calls not
 * recorded among recorded ones, skips inserted beneath others, and a
 * stream whose tree is lost, which closes what is open and records no
 * call from then on. And a gap in the measurement, which the calls open
 * across it leave out. And user regions whose begin and end cross calls,
 * which split those calls there (ENTER_AGAIN: no new visit). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "scratch.h"
#include "reader.h"
#include "session.h"

static char root[] = "/tmp/tracetop-stream-XXXXXX";
static tt_registry registry;

static uint32_t region(const char *name)
{
    uint32_t file = tt_registry_string(&registry, "", 0);
    return tt_registry_region(&registry, tt_registry_string(&registry, name, strlen(name)), file, 0, TT_REGION_PYTHON);
}

static size_t varint_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) v >>= 7, n++;
    return n;
}

/* The size format.h gives a call's record after dt ticks, the predictor
 * (kept here as a reader keeps it) naming `predicted`. */
static size_t enter_size(uint64_t dt, int predicted, uint32_t region)
{
    if (dt < TT_EV_SHORT_DT_LIMIT) return predicted && dt < TT_EV_PREDICTED_DT_LIMIT ? 2 : 2 + varint_size(region);
    if (dt < TT_EV_ENTER_MEDIUM_DT_LIMIT) return predicted ? 3 : 3 + varint_size(region);
    return 1 + varint_size(dt) + varint_size(region);
}

static size_t leave_size(uint64_t dt)
{
    if (dt < TT_EV_SHORT_DT_LIMIT) return 2;
    if (dt < TT_EV_MEDIUM_DT_LIMIT) return 3;
    return 1 + varint_size(dt);
}

static void test_forms(void)
{
    char experiment[128];
    snprintf(experiment, sizeof experiment, "%s/forms", root);
    mkdir(experiment, 0777);
    /* Each delta at and around the edges of the forms: the predicted,
     * short, medium and long ones, of calls and of returns. */
    static const uint64_t deltas[] = {0,
                                      1,
                                      255,
                                      256,
                                      1535,
                                      1536,
                                      2047,
                                      2048,
                                      65535,
                                      65536,
                                      131071,
                                      131072,
                                      262143,
                                      262144,
                                      1000000,
                                      1u << 28,
                                      (uint64_t)1 << 40};
    enum { DELTAS = sizeof deltas / sizeof *deltas, ROUNDS = 3 };
    uint32_t a = region("a"), b = region("b");

    tt_session_config config = {.directory = experiment, .memory = 4u << 20, .name = "test"};
    tt_session *session;
    tt_error err;
    if (!CHECK(tt_session_start(&config, &registry, &session, &err) == 0)) return;
    tt_stream *s = tt_session_new_stream(session, 1, "MainThread", 10);
    /* From the stream's last time, so that every delta is the one chosen.
     * The same calls in each round: from the second on, the predictor names
     * every call. */
    uint64_t now = s->last_ticks, expected_ticks[2 * DELTAS * ROUNDS];
    uint32_t expected_region[2 * DELTAS * ROUNDS];
    size_t n = 0, bytes = 0;
    tt_predictor predict = {0};
    for (int round = 0; round < ROUNDS; round++)
        for (size_t i = 0; i < DELTAS; i++) {
            uint32_t r = i % 2 ? a : b;
            uint32_t *slot = tt_predict_slot(&predict);
            now += deltas[i];
            bytes += enter_size(deltas[i], *slot == r, r);
            tt_predict_enter(&predict, slot, r);
            tt_stream_enter(s, now, r);
            expected_ticks[n] = now, expected_region[n++] = r;
            now += deltas[DELTAS - 1 - i];
            bytes += leave_size(deltas[DELTAS - 1 - i]);
            tt_predict_leave(&predict);
            tt_stream_leave(s, now);
            expected_ticks[n] = now, expected_region[n++] = r;
        }
    tt_session_stats stats;
    CHECK(tt_session_stop(session, &stats, &err) == 0);

    tt_trace *t;
    if (!CHECK(tt_trace_open(experiment, &t, &err) == 0)) return;
    const tt_process *p = tt_trace_process(t, 0);
    /* The calls' records, and the STREAM_END after them (tag, dt). */
    CHECK_U64(tt_stream_record_bytes(p, 0, 0, UINT64_MAX), bytes + 2);
    tt_cursor *c;
    if (CHECK(tt_cursor_open(t, p, 0, &c, &err) == 0)) {
        tt_event ev;
        size_t read = 0;
        while (tt_cursor_next(c, &ev) && ev.kind != TT_EV_STREAM_END) {
            if (read < n) {
                CHECK_U64(ev.kind, read % 2 ? TT_EV_LEAVE : TT_EV_ENTER);
                CHECK_U64(ev.ticks, expected_ticks[read]);
                CHECK_U64(ev.region, expected_region[read]);
            }
            read++;
        }
        CHECK_U64(read, n);
        CHECK(tt_cursor_state(c) == TT_STREAM_COMPLETE);
        tt_cursor_close(c);
    }
    tt_trace_close(t);
}

static int entries_are(const tt_stream *s, const uint32_t *expected, uint32_t n)
{
    uint32_t count;
    uint32_t *got = tt_stream_entries(s, &count);
    int same = got && count == n && memcmp(got, expected, n * sizeof *got) == 0;
    free(got);
    return same;
}

static void test_stack(void)
{
    char experiment[128];
    snprintf(experiment, sizeof experiment, "%s/stack", root);
    mkdir(experiment, 0777);
    uint32_t a = region("a"), b = region("b"), c = region("c");
    const uint32_t S = TT_STACK_SKIP, O = TT_STACK_OWN;

    tt_session_config config = {.directory = experiment, .memory = 4u << 20, .name = "test"};
    tt_session *session;
    tt_error err;
    if (!CHECK(tt_session_start(&config, &registry, &session, &err) == 0)) return;
    tt_stream *s = tt_session_new_stream(session, 1, "MainThread", 10);
    uint64_t now = s->last_ticks;
    CHECK(!tt_stream_is_open(s) && tt_stream_top(s) == S);
    tt_stream_leave(s, ++now); /* nothing open: dropped */
    tt_stream_enter(s, ++now, a);
    tt_stream_skip(s, S);
    tt_stream_enter(s, ++now, b);
    tt_stream_skip(s, O);
    tt_stream_skip(s, S);
    CHECK(tt_stream_top(s) == S);
    CHECK(entries_are(s, (uint32_t[]){a, S, b, O, S}, 5));
    /* Beneath b, then between b and its own: */
    CHECK(tt_stream_insert_skips(s, 1, 2) == 0);
    CHECK(entries_are(s, (uint32_t[]){a, S, S, S, b, O, S}, 7));
    CHECK(tt_stream_insert_skips(s, 5, 1) == 0);
    CHECK(entries_are(s, (uint32_t[]){a, S, S, S, b, S, O, S}, 8));
    tt_stream_leave(s, ++now);
    CHECK(tt_stream_top(s) == O);
    tt_stream_unskip(s);
    tt_stream_leave(s, ++now);
    CHECK(tt_stream_top(s) == b);
    tt_stream_leave(s, ++now); /* b: recorded */
    CHECK(entries_are(s, (uint32_t[]){a, S, S, S}, 4));
    tt_stream_leave(s, ++now);
    tt_stream_enter(s, ++now, c);
    CHECK(tt_stream_top(s) == c && s->tree.cur->skipped == 0);
    /* The tree lost: the next call closes c, the skips and a, for good. */
    s->tree.lost = 1;
    tt_stream_skip(s, S);
    CHECK(!tt_stream_is_open(s) && s->fast_used_limit == 0 && s->skip_count == 0);
    tt_stream_enter(s, ++now, b);
    tt_stream_leave(s, ++now);
    CHECK(!tt_stream_is_open(s) && tt_stream_top(s) == S);
    tt_session_stats stats;
    CHECK(tt_session_stop(session, &stats, &err) == 0);

    tt_trace *t;
    if (!CHECK(tt_trace_open(experiment, &t, &err) == 0)) return;
    const tt_process *p = tt_trace_process(t, 0);
    static const uint8_t kinds[] = {TT_EV_ENTER, TT_EV_ENTER, TT_EV_LEAVE, TT_EV_ENTER, TT_EV_LEAVE, TT_EV_LEAVE};
    const uint32_t regions[] = {a, b, b, c, c, a};
    tt_cursor *cur;
    if (CHECK(tt_cursor_open(t, p, 0, &cur, &err) == 0)) {
        tt_event ev;
        size_t read = 0;
        while (tt_cursor_next(cur, &ev) && ev.kind != TT_EV_STREAM_END) {
            if (read < sizeof kinds) CHECK(ev.kind == kinds[read] && ev.region == regions[read]);
            read++;
        }
        CHECK_U64(read, sizeof kinds);
        CHECK(tt_cursor_state(cur) == TT_STREAM_COMPLETE);
        tt_cursor_close(cur);
    }
    tt_trace_close(t);
}

/* The node of `region` under the root in s's tree. */
static const tt_calltree_node *root_child(const tt_stream *s, uint32_t region)
{
    for (uint32_t i = 1; i < s->tree.count; i++)
        if (s->tree.nodes[i].region == region && s->tree.nodes[i].parent == 0) return &s->tree.nodes[i];
    return NULL;
}

/* A clock that goes back (a TSC a few ticks apart across CPUs) stamps a
 * record at the last record's time, and the call tree counts that time too.
 * The fast path (tt_fast_*) hands such an event to this slow path
 * (src/ext/fastpath.h: TT_FAST_NOW), as it does any whose delta is long. */
static void test_clock_back(void)
{
    char experiment[128];
    snprintf(experiment, sizeof experiment, "%s/back", root);
    mkdir(experiment, 0777);
    uint32_t a = region("back_a"), b = region("back_b");
    tt_session_config config = {.directory = experiment, .memory = 4u << 20, .name = "test"};
    tt_session *session;
    tt_error err;
    if (!CHECK(tt_session_start(&config, &registry, &session, &err) == 0)) return;
    tt_stream *s = tt_session_new_stream(session, 1, "MainThread", 10);
    uint64_t start = s->last_ticks + 1000;
    tt_stream_enter(s, start, a);
    tt_stream_leave(s, start - 5);
    CHECK_U64(s->last_ticks, start);
    tt_stream_enter(s, start - 3, b);
    tt_stream_leave(s, start + 50);

    const tt_calltree_node *node_a = root_child(s, a), *node_b = root_child(s, b);
    if (CHECK(node_a && node_b)) {
        CHECK_U64(node_a->inclusive, 0);
        CHECK_U64(node_b->inclusive, 50);
    }
    tt_session_stats stats;
    CHECK(tt_session_stop(session, &stats, &err) == 0);

    tt_trace *t;
    if (!CHECK(tt_trace_open(experiment, &t, &err) == 0)) return;
    tt_cursor *cursor;
    static const uint64_t offsets[] = {0, 0, 0, 50};
    if (CHECK(tt_cursor_open(t, tt_trace_process(t, 0), 0, &cursor, &err) == 0)) {
        tt_event ev;
        size_t read = 0;
        while (tt_cursor_next(cursor, &ev) && ev.kind != TT_EV_STREAM_END) {
            if (read < 4) {
                CHECK_U64(ev.kind, read % 2 ? TT_EV_LEAVE : TT_EV_ENTER);
                CHECK_U64(ev.ticks, start + offsets[read]);
                CHECK_U64(ev.region, read < 2 ? a : b);
            }
            read++;
        }
        CHECK_U64(read, 4);
        CHECK(tt_cursor_state(cursor) == TT_STREAM_COMPLETE);
        tt_cursor_close(cursor);
    }
    tt_trace_close(t);
}

/* A gap (tt_stream_gap): the calls open across it leave it out, in the
 * call tree as the stream keeps it and in what the reader gives (their
 * parts, the second resumed), and its two records lie in one chunk. */
static void test_gap(void)
{
    char experiment[128];
    snprintf(experiment, sizeof experiment, "%s/gap", root);
    mkdir(experiment, 0777);
    uint32_t a = region("gap_a"), b = region("gap_b");
    tt_session_config config = {.directory = experiment, .memory = 4u << 20, .name = "test"};
    tt_session *session;
    tt_error err;
    if (!CHECK(tt_session_start(&config, &registry, &session, &err) == 0)) return;
    tt_stream *s = tt_session_new_stream(session, 1, "MainThread", 10);
    uint64_t start = s->last_ticks + 1000;
    tt_stream_enter(s, start, a);
    tt_stream_enter(s, start + 10, b);
    tt_stream_gap(s, start + 20, start + 1020);
    tt_stream_leave(s, start + 1030);
    tt_stream_leave(s, start + 1040);

    const tt_calltree_node *node_a = root_child(s, a);
    if (CHECK(node_a)) {
        CHECK_U64(node_a->inclusive, 40);
        CHECK_U64(node_a->visits, 1);
    }
    tt_session_stats stats;
    CHECK(tt_session_stop(session, &stats, &err) == 0);

    tt_trace *t;
    if (!CHECK(tt_trace_open(experiment, &t, &err) == 0)) return;
    tt_cursor *cursor;
    static const struct {
        uint8_t kind;
        uint64_t offset;
        int resumed;
    } expected[] = {{TT_EV_ENTER, 0, 0},    {TT_EV_ENTER, 10, 0},          {TT_EV_LEAVE, 20, 0},
                    {TT_EV_LEAVE, 20, 0},   {TT_EV_RECORDING_OFF, 20, 0},  {TT_EV_ENTER, 1020, 1},
                    {TT_EV_ENTER, 1020, 1}, {TT_EV_RECORDING_ON, 1020, 0}, {TT_EV_LEAVE, 1030, 0},
                    {TT_EV_LEAVE, 1040, 0}};
    enum { EXPECTED = sizeof expected / sizeof *expected };
    if (CHECK(tt_cursor_open(t, tt_trace_process(t, 0), 0, &cursor, &err) == 0)) {
        tt_event ev;
        size_t read = 0;
        uint32_t gap_chunk = 0;
        while (tt_cursor_next(cursor, &ev) && ev.kind != TT_EV_STREAM_END) {
            if (read < EXPECTED) {
                CHECK_U64(ev.kind, expected[read].kind);
                CHECK_U64(ev.ticks, start + expected[read].offset);
                CHECK_U64(ev.resumed, expected[read].resumed);
            }
            if (ev.kind == TT_EV_RECORDING_OFF) gap_chunk = tt_cursor_chunk(cursor)->seq;
            if (ev.kind == TT_EV_RECORDING_ON) CHECK_U64(tt_cursor_chunk(cursor)->seq, gap_chunk);
            read++;
        }
        CHECK_U64(read, EXPECTED);
        CHECK(tt_cursor_state(cursor) == TT_STREAM_COMPLETE);
        tt_cursor_close(cursor);
    }
    tt_trace_close(t);
}

/* start() begins the user region phase and returns; work() runs; stop()
 * ends it from inside a C call of its own (region_end's, TT_STACK_OWN):
 * start is left with phase, phase goes on in the caller, stop is split
 * where phase ends. Every part after a split is ENTER_AGAIN: each region
 * has one visit, and phase's time is from its begin to its end. */
static void test_user_regions_cross_calls(void)
{
    char experiment[128];
    snprintf(experiment, sizeof experiment, "%s/cross", root);
    mkdir(experiment, 0777);
    uint32_t start_ = region("start"), phase = region("phase"), work = region("work"), stop = region("stop");
    const uint32_t O = TT_STACK_OWN, R = TT_STACK_REGION;
    tt_session_config config = {.directory = experiment, .memory = 4u << 20, .name = "test"};
    tt_session *session;
    tt_error err;
    if (!CHECK(tt_session_start(&config, &registry, &session, &err) == 0)) return;
    tt_stream *s = tt_session_new_stream(session, 1, "MainThread", 10);
    uint64_t t0 = s->last_ticks + 1000;
    tt_stream_return(s, t0); /* nothing open: dropped */
    tt_stream_enter(s, t0, start_);
    tt_stream_enter(s, t0 + 10, phase);
    tt_stream_skip(s, R);
    CHECK(entries_are(s, (uint32_t[]){start_, phase, R}, 3));
    tt_stream_return(s, t0 + 20); /* start returns */
    CHECK(entries_are(s, (uint32_t[]){phase, R}, 2));
    tt_stream_enter(s, t0 + 30, work);
    tt_stream_return(s, t0 + 130);
    tt_stream_enter(s, t0 + 140, stop);
    tt_stream_skip(s, O);
    CHECK(tt_stream_end_region(s, t0 + 150, start_) == 0); /* not open: nothing done */
    CHECK(entries_are(s, (uint32_t[]){phase, R, stop, O}, 4));
    CHECK(tt_stream_end_region(s, t0 + 150, phase) == 1);
    CHECK(entries_are(s, (uint32_t[]){stop, O}, 2));
    tt_stream_unskip(s);
    tt_stream_return(s, t0 + 160);
    CHECK(!tt_stream_is_open(s));

    const tt_calltree_node *node_phase = root_child(s, phase), *node_stop = root_child(s, stop),
                           *node_start = root_child(s, start_);
    if (CHECK(node_phase && node_stop && node_start)) {
        CHECK_U64(node_start->visits, 1);
        CHECK_U64(node_start->inclusive, 20);
        CHECK_U64(node_phase->visits, 0); /* phase's visit is under start */
        CHECK_U64(node_phase->inclusive, 130);
        CHECK_U64(node_stop->visits, 0); /* stop's visit is under phase */
        CHECK_U64(node_stop->inclusive, 10);
    }
    tt_session_stats stats;
    CHECK(tt_session_stop(session, &stats, &err) == 0);

    tt_trace *t;
    if (!CHECK(tt_trace_open(experiment, &t, &err) == 0)) return;
    tt_cursor *cursor;
    static const struct {
        uint8_t kind;
        uint64_t offset;
        int resumed;
    } expected[] = {{TT_EV_ENTER, 0, 0},   {TT_EV_ENTER, 10, 0},  {TT_EV_LEAVE, 20, 0},  {TT_EV_LEAVE, 20, 0},
                    {TT_EV_ENTER, 20, 1},  {TT_EV_ENTER, 30, 0},  {TT_EV_LEAVE, 130, 0}, {TT_EV_ENTER, 140, 0},
                    {TT_EV_LEAVE, 150, 0}, {TT_EV_LEAVE, 150, 0}, {TT_EV_ENTER, 150, 1}, {TT_EV_LEAVE, 160, 0}};
    const uint32_t regions[] = {start_, phase, phase, start_, phase, work, work, stop, stop, phase, stop, stop};
    enum { EXPECTED = sizeof expected / sizeof *expected };
    if (CHECK(tt_cursor_open(t, tt_trace_process(t, 0), 0, &cursor, &err) == 0)) {
        tt_event ev;
        size_t read = 0;
        while (tt_cursor_next(cursor, &ev) && ev.kind != TT_EV_STREAM_END) {
            if (read < EXPECTED) {
                CHECK_U64(ev.kind, expected[read].kind);
                CHECK_U64(ev.ticks, t0 + expected[read].offset);
                CHECK_U64(ev.resumed, expected[read].resumed);
                CHECK_U64(ev.region, regions[read]);
            }
            read++;
        }
        CHECK_U64(read, EXPECTED);
        CHECK(tt_cursor_state(cursor) == TT_STREAM_COMPLETE);
        tt_cursor_close(cursor);
    }
    tt_trace_close(t);
}

int main(void)
{
    if (!mkdtemp(root) || tt_registry_init(&registry) != 0) {
        perror("setup");
        return 2;
    }
    test_forms();
    test_stack();
    test_clock_back();
    test_gap();
    test_user_regions_cross_calls();
    scratch_remove(root);
    return check_report();
}

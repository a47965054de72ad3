/* test_live.c -- the live channel: what a producer hands over is what
 * every reader gets, in order; the producer never waits; what it could not
 * send and what a slow reader missed are counted; control requests are
 * answered; channels are private to their user and removed when their
 * process is gone. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "format.h"
#include "live.h"

static char shm_path[128];

static void set_shm_path(pid_t pid)
{
    snprintf(shm_path, sizeof shm_path, "/dev/shm/tracetop-%u-%ld", (unsigned)geteuid(), (long)pid);
}

static uint8_t bytes[TT_CHUNK_PAYLOAD_SIZE];

static void fill_bytes(void)
{
    for (size_t i = 0; i < sizeof bytes; i++) bytes[i] = (uint8_t)(i * 7 + i / 251);
}

/* The next slice, which the test expects to be there. */
static int next(tt_live_view *v, tt_live_slice *s)
{
    const char *why = NULL;
    int rc = tt_live_next(v, s, &why);
    if (rc < 0) fprintf(stderr, "    %s\n", why);
    return rc;
}

static void test_create_and_private(void)
{
    tt_live *l;
    tt_error err;
    CHECK(tt_live_create("prog.py", "/tmp/exp", &l, &err) == 0);
    set_shm_path(getpid());
    struct stat st;
    CHECK(stat(shm_path, &st) == 0);
    CHECK_U64(st.st_mode & 0777, 0600);
    CHECK_U64(st.st_uid, geteuid());

    tt_live_view *v;
    CHECK(tt_live_open(getpid(), &v, &err) == 0);
    CHECK_STR(tt_live_name(v), "prog.py");
    CHECK_STR(tt_live_experiment(v), "/tmp/exp");
    CHECK(tt_live_alive(v));
    CHECK(tt_live_current(v));
    CHECK_U64(tt_live_process_state(v), TT_LIVE_RUNNING);

    /* The channel goes when the measurement ends; an open view keeps it. */
    tt_live_close(l);
    CHECK(stat(shm_path, &st) < 0);
    CHECK_U64(tt_live_process_state(v), TT_LIVE_ENDED);
    CHECK(!tt_live_current(v));
    CHECK(tt_live_create("prog.py", "/tmp/exp2", &l, &err) == 0);
    CHECK(!tt_live_current(v)); /* a later measurement's channel */
    tt_live_close(l);
    tt_live_view_close(v);

    CHECK(tt_live_open(getpid(), &v, &err) < 0);
    CHECK_CONTAINS(err.message, "no live process");
}

static void test_definitions_log(void)
{
    tt_live *l;
    tt_live_view *v;
    tt_error err;
    CHECK(tt_live_create("p", "e", &l, &err) == 0);
    CHECK(tt_live_open(getpid(), &v, &err) == 0);

    /* Chunk 0 in parts as it fills, then full; chunk 1 seen before chunk 0
     * came back full is left for later. */
    tt_live_defs(l, 0, bytes, 100, 0);
    tt_live_defs(l, 0, bytes, 100, 0);
    tt_live_defs(l, 1, bytes + 5000, 10, 0);
    tt_live_defs(l, 0, bytes, 300, 0);
    size_t len;
    const uint8_t *log = tt_live_defs_log(v, &len);
    CHECK_U64(len, 300);
    tt_live_defs(l, 0, bytes, 4000, 1);
    tt_live_defs(l, 1, bytes + 5000, 20, 0);
    log = tt_live_defs_log(v, &len);
    CHECK_U64(len, 4020);
    CHECK(memcmp(log, bytes, 4000) == 0 && memcmp(log + 4000, bytes + 5000, 20) == 0);

    /* The log grows past its first allocation without remapping. */
    for (uint32_t seq = 1; seq < 40; seq++) tt_live_defs(l, seq, bytes, TT_CHUNK_PAYLOAD_SIZE, 1);
    log = tt_live_defs_log(v, &len);
    CHECK_U64(len, 4000 + 39 * (uint64_t)TT_CHUNK_PAYLOAD_SIZE);
    CHECK(memcmp(log + len - TT_CHUNK_PAYLOAD_SIZE, bytes, TT_CHUNK_PAYLOAD_SIZE) == 0);

    tt_live_view_close(v);
    tt_live_close(l);
}

static void test_slices(void)
{
    tt_live *l;
    tt_live_view *v;
    tt_error err;
    tt_live_slice s;
    CHECK(tt_live_create("p", "e", &l, &err) == 0);
    CHECK(tt_live_open(getpid(), &v, &err) == 0);

    /* No reader: nothing is sent, a full chunk is dropped and counted. */
    tt_live_begin_pass(l);
    CHECK(tt_live_events(l, 0, 0, 1000, bytes, 10, 0) == 0);
    CHECK(tt_live_events(l, 0, 0, 1000, bytes, 50, 1) == 0);
    CHECK_U64(tt_live_dropped_bytes(v), 50);

    tt_live_attach(v);
    CHECK(next(v, &s) == 0);
    tt_live_begin_pass(l);
    CHECK(tt_live_events(l, 0, 1, 2000, bytes, 10, 0) == 1);
    CHECK(tt_live_events(l, 3, 0, 3000, bytes + 100, 7, 0) == 1);
    CHECK(next(v, &s) == 1);
    CHECK(s.stream == 0 && s.seq == 1 && s.offset == 0 && s.len == 10 && s.flags == 0);
    CHECK_U64(s.base_ticks, 2000);
    CHECK(memcmp(s.data, bytes, 10) == 0);
    CHECK(next(v, &s) == 1);
    CHECK(s.stream == 3 && s.seq == 0 && s.offset == 0 && s.len == 7);
    CHECK(memcmp(s.data, bytes + 100, 7) == 0);
    CHECK(next(v, &s) == 0);

    /* Each pass sends what was added; the full chunk ends with END (even
     * with nothing added), and the next chunk starts at offset 0. */
    tt_live_begin_pass(l);
    CHECK(tt_live_events(l, 0, 1, 2000, bytes, 10, 0) == 1); /* nothing new */
    tt_live_events(l, 0, 1, 2000, bytes, 25, 0);
    CHECK(tt_live_events(l, 0, 2, 2500, bytes, 5, 0) == 0); /* chunk 1 not back full yet */
    tt_live_events(l, 3, 0, 3000, bytes + 100, 7, 1);
    CHECK(next(v, &s) == 1);
    CHECK(s.stream == 0 && s.seq == 1 && s.offset == 10 && s.len == 15 && s.flags == 0);
    CHECK(memcmp(s.data, bytes + 10, 15) == 0);
    CHECK(next(v, &s) == 1);
    CHECK(s.stream == 3 && s.seq == 0 && s.offset == 7 && s.len == 0 && s.flags == TT_LIVE_END);
    CHECK(next(v, &s) == 0);
    tt_live_begin_pass(l);
    tt_live_events(l, 0, 1, 2000, bytes, 30, 1);
    tt_live_events(l, 0, 2, 2500, bytes, 5, 0);
    CHECK(next(v, &s) == 1);
    CHECK(s.seq == 1 && s.offset == 25 && s.len == 5 && s.flags == TT_LIVE_END);
    CHECK(next(v, &s) == 1);
    CHECK(s.seq == 2 && s.offset == 0 && s.len == 5);
    CHECK_U64(s.base_ticks, 2500);

    /* A second reader, in another process, reads alongside: it starts at
     * the newest slice, every stream starting over at the beginning of its
     * chunk; the first reader gets that again too, and goes on. */
    int to_child[2], to_parent[2];
    CHECK(pipe(to_child) == 0 && pipe(to_parent) == 0);
    pid_t child = fork();
    if (child == 0) {
        tt_live_view *other;
        char go;
        int ok = tt_live_open(getppid(), &other, NULL) == 0;
        if (ok) tt_live_attach(other);
        ok = ok && write(to_parent[1], "a", 1) == 1 && read(to_child[0], &go, 1) == 1;
        ok = ok && next(other, &s) == 1 && s.stream == 0 && s.seq == 2 && s.offset == 0 && s.len == 8 &&
             memcmp(s.data, bytes, 8) == 0 && next(other, &s) == 0;
        _exit(ok ? 0 : 1);
    }
    char ready;
    CHECK(read(to_parent[0], &ready, 1) == 1);
    tt_live_begin_pass(l);
    tt_live_events(l, 0, 2, 2500, bytes, 8, 0);
    CHECK(write(to_child[1], "g", 1) == 1);
    int status;
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(next(v, &s) == 1);
    CHECK(s.seq == 2 && s.offset == 0 && s.len == 8);
    CHECK(next(v, &s) == 0);

    /* A reader that left reads nothing; a new one gets every stream from
     * the start of its chunk. */
    tt_live_view *again;
    CHECK(tt_live_open(getpid(), &again, &err) == 0);
    tt_live_detach(v);
    tt_live_attach(again);
    tt_live_begin_pass(l);
    tt_live_events(l, 0, 2, 2500, bytes, 9, 0);
    CHECK(next(v, &s) == 0); /* detached */
    CHECK(next(again, &s) == 1);
    CHECK(s.seq == 2 && s.offset == 0 && s.len == 9);

    tt_live_view_close(again);
    tt_live_view_close(v);
    tt_live_close(l);
    close(to_child[0]);
    close(to_child[1]);
    close(to_parent[0]);
    close(to_parent[1]);
}

static void test_overrun(void)
{
    tt_live *l;
    tt_live_view *slow, *fast;
    tt_error err;
    tt_live_slice s;
    CHECK(tt_live_create("p", "e", &l, &err) == 0);
    CHECK(tt_live_open(getpid(), &slow, &err) == 0);
    CHECK(tt_live_open(getpid(), &fast, &err) == 0);
    tt_live_attach(slow);
    tt_live_attach(fast);
    tt_live_begin_pass(l);

    /* Stream 0 sends twice the ring in full chunks. The fast reader reads
     * as they come and gets every one; the slow reader reads nothing
     * meanwhile. The producer never refuses one. */
    uint32_t chunks = 2 * TT_LIVE_RING_SIZE / TT_CHUNK_PAYLOAD_SIZE, fast_seen = 0;
    int intact = 1;
    for (uint32_t seq = 0; seq < chunks; seq++) {
        CHECK(tt_live_events(l, 0, seq, seq, bytes, TT_CHUNK_PAYLOAD_SIZE, 1) == 1);
        while (next(fast, &s) == 1) {
            intact &= s.seq == fast_seen && s.len == TT_CHUNK_PAYLOAD_SIZE && memcmp(s.data, bytes, s.len) == 0;
            fast_seen++;
        }
    }
    CHECK(intact);
    CHECK_U64(fast_seen, chunks);
    CHECK_U64(tt_live_dropped_bytes(fast), 0);

    /* The slow reader finds it was overrun: it goes on at the newest
     * slice, counts what it skipped, and every stream starts over. */
    CHECK(next(slow, &s) == 0);
    CHECK_U64(tt_live_dropped_bytes(slow), (uint64_t)chunks * TT_CHUNK_PAYLOAD_SIZE);
    tt_live_begin_pass(l);
    tt_live_events(l, 0, chunks, 7, bytes, 100, 0);
    tt_live_events(l, 1, 0, 8, bytes, 50, 0);
    CHECK(next(slow, &s) == 1);
    CHECK(s.stream == 0 && s.seq == chunks && s.offset == 0 && s.len == 100);
    CHECK(next(slow, &s) == 1);
    CHECK(s.stream == 1 && s.offset == 0 && s.len == 50);
    CHECK(next(slow, &s) == 0);
    CHECK(next(fast, &s) == 1);
    CHECK(s.stream == 0 && s.seq == chunks && s.len == 100);

    tt_live_view_close(slow);
    tt_live_view_close(fast);
    tt_live_close(l);
}

/* Overload: a reader that reads less than is sent, overrun again and
 * again, gets or counts as dropped every byte of every slice, exactly (not
 * the ring's headers and padding): slices of many lengths, so that the ring
 * wraps at every place; the reader reads a few slices after each burst. */
static void test_overload_accounted(void)
{
    tt_live *l;
    tt_live_view *v;
    tt_error err;
    tt_live_slice s;
    CHECK(tt_live_create("p", "e", &l, &err) == 0);
    CHECK(tt_live_open(getpid(), &v, &err) == 0);
    tt_live_attach(v);
    uint64_t sent = 0, read = 0, overruns = 0, dropped_before = 0;
    uint32_t seq = 0, rng = 12345;
    for (int burst = 0; burst < 400; burst++) {
        tt_live_begin_pass(l);
        for (int i = 0; i < 40; i++) {
            rng = rng * 1103515245u + 12345u;
            uint32_t used = 1 + (rng >> 8) % TT_CHUNK_PAYLOAD_SIZE;
            CHECK(tt_live_events(l, 0, seq++, 0, bytes, used, 1) == 1);
            sent += used;
        }
        for (int i = 0; i < burst % 7; i++)
            if (next(v, &s) == 1) read += s.len;
        uint64_t dropped = tt_live_dropped_bytes(v);
        overruns += dropped != dropped_before;
        dropped_before = dropped;
    }
    while (next(v, &s) == 1) read += s.len;
    CHECK(overruns > 10);
    CHECK(read > 0);
    CHECK_U64(read + tt_live_dropped_bytes(v), sent);
    tt_live_view_close(v);
    tt_live_close(l);
}

/* A producer and two readers on threads of their own, the ring wrapping
 * many times: each reader gets every slice intact and in order, or counts
 * what it missed. A stream may start over at offset 0 of its chunk (the
 * other reader was overrun): what was read of it comes again. */
#define STREAM_CHUNKS 3000

static atomic_int produced;

static uint32_t chunk_used(uint32_t chunk) { return 1000 + (chunk * 7919) % (TT_CHUNK_PAYLOAD_SIZE - 1000); }

static void *produce(void *arg)
{
    tt_live *l = arg;
    for (uint32_t seq = 0; seq < STREAM_CHUNKS; seq++) {
        tt_live_begin_pass(l);
        uint32_t used = chunk_used(seq);
        tt_live_events(l, seq % 3, seq / 3, seq, bytes + seq % 64, used / 2, 0);
        tt_live_events(l, seq % 3, seq / 3, seq, bytes + seq % 64, used, 1);
    }
    atomic_store(&produced, 1);
    return NULL;
}

typedef struct reader_result {
    tt_live_view *view;
    int intact;
    uint64_t received; /* bytes, each counted once */
} reader_result;

static void *consume(void *arg)
{
    reader_result *r = arg;
    tt_live_slice s;
    uint64_t expected_offset[3] = {0}, next_seq[3] = {0};
    int done = 0;
    r->intact = 1;
    while (!done) {
        done = atomic_load(&produced);
        while (next(r->view, &s) == 1) {
            uint32_t chunk = s.seq * 3 + s.stream;
            int ok = s.stream < 3 && s.base_ticks == chunk && memcmp(s.data, bytes + chunk % 64 + s.offset, s.len) == 0;
            if (!ok) {
                r->intact = 0;
                continue;
            }
            uint64_t *expected = &expected_offset[s.stream];
            if (s.seq == next_seq[s.stream] && s.offset <= *expected && *expected <= s.offset + s.len) {
                r->received += s.offset + s.len - *expected; /* continues, or starts the chunk over */
            } else if (s.offset == 0 && s.seq > next_seq[s.stream]) {
                r->received += s.len; /* a lost chunk shows as a gap */
            } else {
                /* Only after this reader was overrun: the rest of a chunk
                 * whose beginning it skipped. */
                ok = tt_live_dropped_bytes(r->view) > 0 && s.seq >= next_seq[s.stream];
                r->intact &= ok;
                continue;
            }
            r->intact &= ok;
            expected_offset[s.stream] = s.flags & TT_LIVE_END ? 0 : s.offset + s.len;
            next_seq[s.stream] = s.flags & TT_LIVE_END ? s.seq + 1 : s.seq;
        }
        tt_live_beat(r->view);
    }
    return NULL;
}

static void test_two_readers(void)
{
    tt_live *l;
    tt_error err;
    reader_result results[2] = {{0}};
    CHECK(tt_live_create("p", "e", &l, &err) == 0);
    atomic_store(&produced, 0);
    pthread_t readers[2], producer;
    for (int i = 0; i < 2; i++) {
        CHECK(tt_live_open(getpid(), &results[i].view, &err) == 0);
        tt_live_attach(results[i].view);
    }
    for (int i = 0; i < 2; i++) pthread_create(&readers[i], NULL, consume, &results[i]);
    pthread_create(&producer, NULL, produce, l);
    pthread_join(producer, NULL);
    for (int i = 0; i < 2; i++) pthread_join(readers[i], NULL);
    uint64_t total = 0;
    for (uint32_t seq = 0; seq < STREAM_CHUNKS; seq++) total += chunk_used(seq);
    for (int i = 0; i < 2; i++) {
        CHECK(results[i].intact);
        /* Overrun or not, never more than was sent; all of it when nothing was missed. */
        CHECK(results[i].received <= total);
        if (tt_live_dropped_bytes(results[i].view) == 0) CHECK_U64(results[i].received, total);
        tt_live_view_close(results[i].view);
    }
    tt_live_close(l);
}

static void test_control(void)
{
    tt_live *l;
    tt_live_view *v;
    tt_error err;
    uint64_t ticket;
    CHECK(tt_live_create("p", "e", &l, &err) == 0);
    CHECK(tt_live_open(getpid(), &v, &err) == 0);
    CHECK(tt_live_poll_request(l, &ticket) < 0);
    CHECK(tt_live_measuring(v) == 1);

    uint64_t off = tt_live_request(v, 0);
    CHECK(!tt_live_answered(v, off));
    CHECK(tt_live_poll_request(l, &ticket) == 0);
    CHECK(tt_live_poll_request(l, &ticket) < 0); /* handed out once */
    tt_live_answer(l, off, 0);
    CHECK(tt_live_answered(v, off));
    CHECK(tt_live_measuring(v) == 0);

    /* Two requests before the producer looks: the later one is acted on,
     * and answers both. */
    uint64_t on = tt_live_request(v, 1), off_again = tt_live_request(v, 0);
    CHECK(tt_live_poll_request(l, &ticket) == 0);
    CHECK(ticket == off_again);
    tt_live_answer(l, ticket, 0);
    CHECK(tt_live_answered(v, on) && tt_live_answered(v, off_again));

    /* A change the program made itself is shown too. */
    tt_live_answer(l, 0, 1);
    CHECK(tt_live_measuring(v) == 1);

    /* Counting objects is a switch of its own. */
    uint64_t objects_on = tt_live_request(v, TT_LIVE_OBJECTS | TT_LIVE_ON);
    CHECK(tt_live_poll_request(l, &ticket) == (TT_LIVE_OBJECTS | TT_LIVE_ON));
    CHECK(!tt_live_answered(v, objects_on) && tt_live_objects(v) == 0);
    tt_live_show_objects(l, 1);
    tt_live_answer(l, ticket, -1);
    CHECK(tt_live_answered(v, objects_on) && tt_live_objects(v) == 1 && tt_live_measuring(v) == 1);
    uint64_t objects_off = tt_live_request(v, TT_LIVE_OBJECTS);
    CHECK(tt_live_poll_request(l, &ticket) == TT_LIVE_OBJECTS && ticket == objects_off);
    tt_live_show_objects(l, 0);
    tt_live_answer(l, ticket, -1);
    CHECK(tt_live_objects(v) == 0 && tt_live_measuring(v) == 1);

    /* A forked child shares the memory, not the channel. */
    pid_t child = fork();
    if (child == 0) {
        tt_live_answer(l, 0, 0);
        tt_live_close(l);
        _exit(0);
    }
    int status;
    waitpid(child, &status, 0);
    CHECK(tt_live_measuring(v) == 1);
    CHECK_U64(tt_live_process_state(v), TT_LIVE_RUNNING);
    tt_live_view_close(v);
    CHECK(tt_live_open(getpid(), &v, &err) == 0);
    tt_live_view_close(v);
    tt_live_close(l);
}

static int listed(pid_t pid)
{
    pid_t *pids;
    size_t count;
    tt_error err;
    if (tt_live_list(&pids, &count, NULL, &err) < 0) return -1;
    int found = 0;
    for (size_t i = 0; i < count; i++) found |= pids[i] == pid;
    free(pids);
    return found;
}

static void test_stale_channels(void)
{
    tt_live *l;
    tt_error err;
    CHECK(tt_live_create("p", "e", &l, &err) == 0);
    CHECK(listed(getpid()) == 1);

    /* A process that dies without closing its channel leaves it behind;
     * listing removes it. */
    pid_t child = fork();
    if (child == 0) {
        tt_live *mine;
        _exit(tt_live_create("child", "e", &mine, NULL) == 0 ? 0 : 1);
    }
    int status;
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    set_shm_path(child);
    struct stat st;
    CHECK(stat(shm_path, &st) == 0);
    pid_t *pids;
    size_t count, removed;
    CHECK(tt_live_list(&pids, &count, &removed, &err) == 0);
    CHECK_U64(removed, 1);
    free(pids);
    CHECK(stat(shm_path, &st) < 0);
    CHECK(listed(child) == 0);
    CHECK(listed(getpid()) == 1); /* ours is alive */

    tt_live_close(l);
    CHECK(listed(getpid()) == 0);
}

int main(void)
{
    fill_bytes();
    test_create_and_private();
    test_definitions_log();
    test_slices();
    test_overrun();
    test_overload_accounted();
    test_two_readers();
    test_control();
    test_stale_channels();
    return check_report();
}

/* test_live.c -- the live channel: what a producer hands over is what a
 * reader gets, in order; the producer never waits and counts what it could
 * not send; control requests are answered; channels are private to their
 * user and removed when their process is gone. */
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

    CHECK(tt_live_attach(v, &err) == 0);
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
    tt_live_release(v);

    /* Another reader is turned away while this one lives; once it left, a
     * new reader gets every stream again from the start of its chunk. */
    pid_t child = fork();
    if (child == 0) {
        tt_live_view *other;
        int refused = tt_live_open(getppid(), &other, NULL) == 0 && tt_live_attach(other, &err) < 0 &&
                      strstr(err.message, "watched by another tracetop top") != NULL;
        _exit(refused ? 0 : 1);
    }
    int status;
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    tt_live_view *again;
    CHECK(tt_live_open(getpid(), &again, &err) == 0);
    tt_live_detach(v);
    CHECK(tt_live_attach(again, &err) == 0);
    tt_live_begin_pass(l);
    tt_live_events(l, 0, 2, 2500, bytes, 9, 0);
    CHECK(next(v, &s) == 0); /* detached */
    CHECK(next(again, &s) == 1);
    CHECK(s.seq == 2 && s.offset == 0 && s.len == 9);

    tt_live_view_close(again);
    tt_live_view_close(v);
    tt_live_close(l);
}

static void test_full_ring(void)
{
    tt_live *l;
    tt_live_view *v;
    tt_error err;
    tt_live_slice s;
    CHECK(tt_live_create("p", "e", &l, &err) == 0);
    CHECK(tt_live_open(getpid(), &v, &err) == 0);
    CHECK(tt_live_attach(v, &err) == 0);
    tt_live_begin_pass(l);

    /* Stream 0 fills the ring with full chunks; the reader reads nothing. */
    uint32_t fit = 0;
    while (tt_live_dropped_bytes(v) == 0) tt_live_events(l, 0, fit++, 0, bytes, TT_CHUNK_PAYLOAD_SIZE, 1);
    fit--;
    CHECK(fit >= TT_LIVE_RING_SIZE / (TT_CHUNK_PAYLOAD_SIZE + 64) - 1);
    CHECK_U64(tt_live_dropped_bytes(v), TT_CHUNK_PAYLOAD_SIZE);

    /* A chunk still being filled waits for room, and then goes whole. */
    CHECK(tt_live_events(l, 1, 0, 0, bytes, 60000, 0) == 0);
    CHECK(tt_live_events(l, 1, 0, 0, bytes, 62000, 0) == 0);
    CHECK_U64(tt_live_dropped_bytes(v), TT_CHUNK_PAYLOAD_SIZE);
    uint32_t seen = 0;
    int intact = 1;
    while (next(v, &s) == 1) {
        intact &= s.stream == 0 && s.seq == seen && s.len == TT_CHUNK_PAYLOAD_SIZE &&
                  memcmp(s.data, bytes, s.len) == 0;
        seen++;
    }
    CHECK(intact);
    CHECK_U64(seen, fit);
    tt_live_release(v);
    CHECK(tt_live_events(l, 1, 0, 0, bytes, 62000, 0) == 1);
    /* The lost chunk shows as a gap in seq. */
    tt_live_events(l, 0, fit + 1, 0, bytes, 10, 0);
    CHECK(next(v, &s) == 1);
    CHECK(s.stream == 1 && s.offset == 0 && s.len == 62000 && memcmp(s.data, bytes, 62000) == 0);
    CHECK(next(v, &s) == 1);
    CHECK(s.stream == 0 && s.seq == fit + 1 && s.offset == 0);

    tt_live_view_close(v);
    tt_live_close(l);
}

/* A producer and a reader on two threads, the ring wrapping many times:
 * every slice arrives intact and in order, or its loss is counted. */
#define STREAM_CHUNKS 3000

static atomic_int produced;

static void *produce(void *arg)
{
    tt_live *l = arg;
    for (uint32_t seq = 0; seq < STREAM_CHUNKS; seq++) {
        tt_live_begin_pass(l);
        uint32_t used = 1000 + (seq * 7919) % (TT_CHUNK_PAYLOAD_SIZE - 1000);
        tt_live_events(l, seq % 3, seq / 3, seq, bytes + seq % 64, used / 2, 0);
        tt_live_events(l, seq % 3, seq / 3, seq, bytes + seq % 64, used, 1);
    }
    atomic_store(&produced, 1);
    return NULL;
}

static void test_two_threads(void)
{
    tt_live *l;
    tt_live_view *v;
    tt_error err;
    tt_live_slice s;
    CHECK(tt_live_create("p", "e", &l, &err) == 0);
    CHECK(tt_live_open(getpid(), &v, &err) == 0);
    CHECK(tt_live_attach(v, &err) == 0);
    pthread_t producer;
    pthread_create(&producer, NULL, produce, l);

    uint64_t received = 0, expected_offset[3] = {0}, next_seq[3] = {0};
    int intact = 1, done = 0;
    while (!done) {
        done = atomic_load(&produced);
        while (next(v, &s) == 1) {
            uint32_t chunk = s.seq * 3 + s.stream;
            /* A lost chunk shows as a gap; the next arrives from offset 0. */
            if (s.seq != next_seq[s.stream]) expected_offset[s.stream] = 0;
            intact &= s.stream < 3 && s.seq >= next_seq[s.stream] && s.offset == expected_offset[s.stream] &&
                      s.base_ticks == chunk && memcmp(s.data, bytes + chunk % 64 + s.offset, s.len) == 0;
            received += s.len;
            expected_offset[s.stream] = s.flags & TT_LIVE_END ? 0 : s.offset + s.len;
            next_seq[s.stream] = s.flags & TT_LIVE_END ? s.seq + 1 : s.seq;
        }
        tt_live_release(v);
        tt_live_beat(v);
    }
    pthread_join(producer, NULL);
    uint64_t total = 0;
    for (uint32_t seq = 0; seq < STREAM_CHUNKS; seq++) total += 1000 + (seq * 7919) % (TT_CHUNK_PAYLOAD_SIZE - 1000);
    CHECK(intact);
    CHECK_U64(received + tt_live_dropped_bytes(v), total);
    tt_live_view_close(v);
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
    test_full_ring();
    test_two_threads();
    test_control();
    test_stale_channels();
    return check_report();
}

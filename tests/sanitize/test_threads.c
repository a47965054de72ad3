/* test_threads.c -- the threads of a measured process at once: several
 * recording threads fill their streams while the session's writer thread
 * drains them, samples them, puts their partial chunks on disk and frees
 * the streams of the threads that ended; then the trace is read back whole. Built by `make sanitize` with
 * ThreadSanitizer, which reports any access of theirs that nothing orders.
 *
 * As in the extension, one lock stands for the GIL: a recording thread
 * holds it while it records and lets it go every BURST calls, and around
 * each wait for a free chunk (tt_session_config's blocking_begin and
 * blocking_end). The writer never takes it. The memory budget is the
 * pool's least, so that a thread waits for a chunk whenever the writer
 * falls behind. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "scratch.h"
#include "clock.h"
#include "reader.h"
#include "session.h"

#define THREADS 4
#define CALLS 60000 /* per thread, each of them two calls deep */
#define BURST 500   /* calls recorded between two hand-overs of the GIL */
#define REGIONS 16

static char root[] = "/tmp/tracetop-threads-XXXXXX";
static tt_registry registry;
static uint32_t regions[REGIONS];
static pthread_mutex_t gil = PTHREAD_MUTEX_INITIALIZER;
static tt_session *session;

static void gil_release(void) { pthread_mutex_unlock(&gil); }

static void gil_take(void) { pthread_mutex_lock(&gil); }

/* A recording thread: its stream, ended (the writer frees it once written:
 * a pointer no longer to follow), or NULL when none was made. The checks
 * are counted by the main thread alone, after the join. */
static void *record(void *arg)
{
    size_t n = (size_t)arg;
    char name[32];
    int len = snprintf(name, sizeof name, "Thread-%zu", n + 1);
    gil_take();
    tt_stream *s = tt_session_new_stream(session, (uint64_t)syscall(SYS_gettid), name, (size_t)len);
    if (!s) {
        gil_release();
        return NULL;
    }
    for (uint32_t i = 0; i < CALLS; i++) {
        tt_stream_enter(s, tt_clock_now(), regions[(i + n) % REGIONS]);
        tt_stream_enter(s, tt_clock_now(), regions[(i * 7 + n) % REGIONS]);
        tt_stream_leave(s, tt_clock_now());
        tt_stream_leave(s, tt_clock_now());
        if (i % BURST == BURST - 1) {
            gil_release();
            sched_yield();
            gil_take();
        }
    }
    tt_session_thread_ended(s);
    gil_release();
    return s;
}

/* The ENTERs of every stream of the trace's one process, which must all be
 * complete and well nested. */
static void check_trace(const char *experiment)
{
    tt_trace *t;
    tt_error err;
    if (!CHECK(tt_trace_open(experiment, &t, &err) == 0)) return;
    if (CHECK(tt_trace_process_count(t) == 1)) {
        const tt_process *p = tt_trace_process(t, 0);
        CHECK_U64(p->thread_count, THREADS);
        for (size_t k = 0; k < p->thread_count; k++) {
            tt_cursor *c;
            if (!CHECK(tt_cursor_open(t, p, k, &c, &err) == 0)) continue;
            tt_event ev;
            uint64_t enters = 0, leaves = 0, depth = 0, deepest = 0;
            while (tt_cursor_next(c, &ev)) {
                if (ev.kind == TT_EV_ENTER) enters++, depth++;
                if (ev.kind == TT_EV_LEAVE) leaves++, depth--;
                if (depth > deepest) deepest = depth;
            }
            CHECK(tt_cursor_state(c) == TT_STREAM_COMPLETE);
            CHECK_U64(enters, 2u * CALLS);
            CHECK_U64(leaves, 2u * CALLS);
            CHECK_U64(deepest, 2);
            tt_cursor_close(c);
        }
    }
    tt_trace_close(t);
}

static void test_threads(void)
{
    char experiment[128];
    snprintf(experiment, sizeof experiment, "%s/threads", root);
    mkdir(experiment, 0777);
    uint32_t file = tt_registry_string(&registry, "threads.py", 10);
    for (uint32_t r = 0; r < REGIONS; r++) {
        char name[16];
        int len = snprintf(name, sizeof name, "f%u", r);
        regions[r] = tt_registry_region(&registry, tt_registry_string(&registry, name, (size_t)len), file, r + 1,
                                        TT_REGION_PYTHON);
    }
    tt_session_config config = {.directory = experiment,
                                .memory = TT_POOL_MIN_CHUNKS * sizeof(tt_chunk),
                                .name = "threads",
                                .blocking_begin = gil_release,
                                .blocking_end = gil_take};
    tt_error err;
    if (!CHECK(tt_session_start(&config, &registry, &session, &err) == 0)) {
        fprintf(stderr, "session: %s\n", err.message);
        return;
    }
    pthread_t threads[THREADS];
    int started[THREADS];
    for (size_t n = 0; n < THREADS; n++) started[n] = pthread_create(&threads[n], NULL, record, (void *)n) == 0;
    for (size_t n = 0; n < THREADS; n++) {
        void *stream = NULL;
        if (started[n]) pthread_join(threads[n], &stream);
        CHECK(started[n] && stream != NULL);
    }
    tt_session_stats stats;
    gil_take();
    CHECK(tt_session_stop(session, &stats, &err) == 0);
    gil_release();
    CHECK_U64(stats.streams, THREADS);
    CHECK(stats.chunks > TT_POOL_MIN_CHUNKS);
    check_trace(experiment);
}

int main(void)
{
    if (!mkdtemp(root) || tt_registry_init(&registry) != 0) {
        perror("setup");
        return 2;
    }
    test_threads();
    tt_registry_free(&registry);
    scratch_remove(root);
    return check_report();
}

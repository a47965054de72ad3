/* live_top.c -- how many events a second `tracetop top` keeps up with.
 *
 *     live_top_bench flood SECONDS          the most top reads
 *     live_top_bench paced SECONDS RATE     RATE events a second: are any lost?
 *     live_top_bench produce SECONDS RATE   no reader here: hands RATE events a second
 *                                           to whoever reads (bench/live_page.py: the page),
 *                                           from a line on stdin on (its reader is there)
 *
 * A child process stands in for a measured process: it hands over chunks
 * of ENTER and LEAVE records of four thread streams through a live channel
 * (live.h), as a writer thread does. This process runs top's loop on it:
 * the reading (watch.h) and the rows rebuilt ten times a second (view.h),
 * without the drawing.
 *
 * flood: the child sends chunks as fast as it can; as a writer, it never
 * waits for the reader, which is overrun when it falls a ring behind and
 * counts what it skipped: the events read a second are top's pace. paced:
 * the child sends RATE events a second, each chunk whole as a writer sends
 * a full one.
 *
 * The events are a random walk of calls and returns (depth up to 40, 256
 * functions, 150 to 400 ticks apart on a clock of 3 GHz, as a TSC would
 * stamp a busy program), so their records are as long as real ones.
 *
 * Prints one line: mode, events sent and read, seconds, events read a
 * second, bytes dropped, resyncs.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "format.h"
#include "live.h"
#include "view.h"
#include "watch.h"

#define STREAMS 4
#define FUNCTIONS 256
#define MAX_DEPTH 40
#define TICKS_PER_SECOND 3000000000ull

static uint8_t defs[64 * 1024];
static uint32_t defs_len;
static uint8_t chunk[TT_CHUNK_PAYLOAD_SIZE];
static uint32_t chunk_len, chunk_events, first_record_len;
static uint64_t chunk_ticks;

static uint64_t rng = 88172645463325252ull;

static uint64_t next_random(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void put_def(const uint8_t *rec, size_t len)
{
    memcpy(defs + defs_len, rec, len);
    defs_len += (uint32_t)len;
}

static void define(void)
{
    uint8_t rec[128], *p;
    char name[64];
    for (uint32_t i = 0; i <= FUNCTIONS + STREAMS; i++) {
        int n = i < FUNCTIONS ? snprintf(name, sizeof name, "bench:function_%u", i)
                : i < FUNCTIONS + STREAMS ? snprintf(name, sizeof name, "thread-%u", i - FUNCTIONS)
                                          : snprintf(name, sizeof name, "bench.py");
        p = rec;
        *p++ = TT_DEF_STRING;
        p = tt_put_varint(p, i);
        p = tt_put_varint(p, (uint64_t)n);
        memcpy(p, name, (size_t)n);
        put_def(rec, (size_t)(p - rec) + (size_t)n);
    }
    for (uint32_t i = 0; i < FUNCTIONS; i++) {
        p = rec;
        *p++ = TT_DEF_REGION;
        p = tt_put_varint(p, i);
        p = tt_put_varint(p, i);
        p = tt_put_varint(p, FUNCTIONS + STREAMS);
        p = tt_put_varint(p, 10 + i);
        *p++ = TT_REGION_PYTHON;
        put_def(rec, (size_t)(p - rec));
    }
    for (uint32_t i = 0; i < STREAMS; i++) {
        p = rec;
        *p++ = TT_DEF_THREAD;
        p = tt_put_varint(p, i);
        p = tt_put_varint(p, FUNCTIONS + i);
        p = tt_put_varint(p, 1000 + i);
        put_def(rec, (size_t)(p - rec));
    }
    p = rec;
    *p++ = TT_DEF_PROCESS;
    p = tt_put_varint(p, (uint64_t)getpid());
    p = tt_put_varint(p, (uint64_t)getppid());
    p = tt_put_varint(p, 0);
    *p++ = TT_CLOCK_MONOTONIC;
    p = tt_put_varint(p, TICKS_PER_SECOND);
    put_def(rec, (size_t)(p - rec));
}

/* One chunk of calls and returns that ends where it began (no call open),
 * so that it can be sent again and again. */
static void make_chunk(void)
{
    uint8_t *p = chunk;
    uint32_t depth = 0;
    for (;;) {
        int closing = p - chunk > (ptrdiff_t)(TT_CHUNK_PAYLOAD_SIZE - MAX_DEPTH * 4 - 64);
        if (closing && depth == 0) break;
        uint64_t dt = 150 + next_random() % 250;
        chunk_ticks += dt;
        int call = !closing && (depth == 0 || (depth < MAX_DEPTH && next_random() % 2));
        *p++ = call ? TT_EV_ENTER : TT_EV_LEAVE;
        p = tt_put_varint(p, dt);
        if (call) {
            p = tt_put_varint(p, next_random() % FUNCTIONS);
            depth++;
        } else {
            depth--;
        }
        if (!chunk_events++) first_record_len = (uint32_t)(p - chunk);
    }
    chunk_len = (uint32_t)(p - chunk);
}

static uint64_t now_ns(void) { return tt_monotonic_ns(); }

/* The child: sends chunks for `seconds`, then ends its channel. With
 * `go`, it starts on a line from stdin: any reader of the user's channels
 * (a `tracetop top` of every process) can be the first there, and what is
 * sent before the reader being measured attached is not its to count. */
static int produce(int flood, double seconds, double rate, int go)
{
    tt_live *live;
    tt_error err;
    if (tt_live_create("live_top_bench", "-", &live, &err) < 0) {
        fprintf(stderr, "live_top_bench: %s\n", err.message);
        return 1;
    }
    tt_live_defs(live, 0, defs, defs_len, 0);
    /* Begin once the reader is there: the first record of chunk 0. */
    for (;;) {
        tt_live_begin_pass(live);
        if (tt_live_events(live, 0, 0, 0, chunk, first_record_len, 0)) break;
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
    }
    if (go && getchar() == EOF) return 1;
    uint64_t start = now_ns(), end = start + (uint64_t)(seconds * 1e9), sent = 0;
    for (uint64_t i = 0;; i++) {
        uint32_t stream = (uint32_t)(i % STREAMS), seq = (uint32_t)(i / STREAMS);
        uint64_t base = seq * chunk_ticks;
        uint64_t now = now_ns();
        if (now >= end) break;
        if (flood) {
            tt_live_begin_pass(live);
        } else {
            uint64_t due = start + (uint64_t)((double)(i * chunk_events) / rate * 1e9);
            struct timespec until = {(time_t)(due / 1000000000u), (long)(due % 1000000000u)};
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL);
            tt_live_begin_pass(live);
        }
        tt_live_events(live, stream, seq, base, chunk, chunk_len, 1);
        sent += chunk_events;
    }
    /* The reader counts what was sent, less what was lost. */
    printf("%llu\n", (unsigned long long)sent);
    fflush(stdout);
    tt_live_close(live);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3 || (strcmp(argv[1], "flood") && strcmp(argv[1], "paced") && strcmp(argv[1], "produce")) ||
        (strcmp(argv[1], "flood") && argc < 4)) {
        fprintf(stderr, "usage: live_top_bench flood SECONDS | paced SECONDS RATE | produce SECONDS RATE\n");
        return 2;
    }
    int flood = strcmp(argv[1], "flood") == 0;
    double seconds = atof(argv[2]), rate = flood ? 0 : atof(argv[3]);
    define();
    make_chunk();
    if (!strcmp(argv[1], "produce")) return produce(0, seconds, rate, 1);

    int sent_pipe[2];
    if (pipe(sent_pipe) < 0) return 1;
    pid_t child = fork();
    if (child == 0) {
        dup2(sent_pipe[1], STDOUT_FILENO);
        close(sent_pipe[0]);
        _exit(produce(flood, seconds, rate, 0));
    }
    close(sent_pipe[1]);

    static tt_watch watch;
    static tt_view view;
    tt_watch_init(&watch, &child, 1);
    tt_view_init(&view);
    tt_error err;
    uint64_t first = 0, next_build = 0, next_scan = 0;
    for (;;) {
        uint64_t now = now_ns();
        if (now >= next_scan && watch.count == 0) {
            if (tt_watch_scan(&watch, &err) < 0) {
                fprintf(stderr, "live_top_bench: %s\n", err.message);
                kill(child, SIGKILL);
                return 1;
            }
            next_scan = now + 1000000;
        }
        size_t read = tt_watch_consume(&watch, 8u << 20);
        if (read && !first) first = now;
        if (now >= next_build) {
            tt_view_build(&view, &watch);
            next_build = now + 100000000;
        }
        if (watch.count && !tt_watched_running(watch.procs[0]) && !read) break;
    }
    double elapsed = (double)(now_ns() - first) / 1e9;
    unsigned long long sent = 0;
    FILE *from_child = fdopen(sent_pipe[0], "r");
    if (!from_child || fscanf(from_child, "%llu", &sent) != 1) return 1;
    int status;
    waitpid(child, &status, 0);
    const tt_watched *p = watch.procs[0];
    printf("%s sent %llu read %llu seconds %.3f events_per_second %.0f dropped_bytes %llu resyncs %llu\n",
           argv[1], sent, (unsigned long long)p->agg.events, elapsed, (double)p->agg.events / elapsed,
           (unsigned long long)(p->dropped - p->dropped_base),
           (unsigned long long)p->agg.resyncs);
    tt_view_free(&view);
    tt_watch_free(&watch);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

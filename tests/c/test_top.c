/* test_top.c -- what `tracetop top` computes: per function calls, own and
 * total time from ENTER and LEAVE records; slices put together, lost
 * chunks started over; rows for all threads or one, filtered, in steady
 * order. Events go through a real live channel of this process. */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agg.h"
#include "check.h"
#include "format.h"
#include "live.h"
#include "view.h"
#include "watch.h"

/* ---- a producer of definitions and events ---- */

typedef struct chunk {
    uint8_t events[TT_CHUNK_PAYLOAD_SIZE];
    uint32_t len, seq;
    uint64_t base, last;
} chunk;

typedef struct producer {
    tt_live *live;
    uint8_t defs[4096];
    uint32_t defs_len;
    chunk streams[2];
} producer;

static void put_def(producer *p, const uint8_t *rec, size_t len)
{
    memcpy(p->defs + p->defs_len, rec, len);
    p->defs_len += (uint32_t)len;
}

static void def_string(producer *p, uint32_t id, const char *s)
{
    uint8_t rec[256], *q = rec;
    *q++ = TT_DEF_STRING;
    q = tt_put_varint(q, id);
    q = tt_put_varint(q, strlen(s));
    memcpy(q, s, strlen(s));
    put_def(p, rec, (size_t)(q - rec) + strlen(s));
}

static void def_region_of(producer *p, uint32_t id, uint32_t name, uint32_t file, uint32_t line, uint8_t kind)
{
    uint8_t rec[64], *q = rec;
    *q++ = TT_DEF_REGION;
    q = tt_put_varint(q, id);
    q = tt_put_varint(q, name);
    q = tt_put_varint(q, file);
    q = tt_put_varint(q, line);
    *q++ = kind;
    put_def(p, rec, (size_t)(q - rec));
}

static void def_region(producer *p, uint32_t id, uint32_t name, uint32_t file, uint32_t line)
{
    def_region_of(p, id, name, file, line, TT_REGION_PYTHON);
}

/* Stream `stream` had used cpu_ns of CPU time at `ticks`, and held the
 * GIL `gil` of the `samples` times it was looked at. */
static void def_usage(producer *p, uint32_t stream, uint64_t ticks, uint64_t cpu_ns, uint64_t samples, uint64_t gil)
{
    uint8_t rec[64], *q = rec;
    *q++ = TT_DEF_THREAD_USAGE;
    q = tt_put_varint(q, stream);
    q = tt_put_varint(q, ticks);
    q = tt_put_varint(q, cpu_ns);
    q = tt_put_varint(q, samples);
    q = tt_put_varint(q, gil);
    put_def(p, rec, (size_t)(q - rec));
}

static void def_thread(producer *p, uint32_t stream, uint32_t name)
{
    uint8_t rec[64], *q = rec;
    *q++ = TT_DEF_THREAD;
    q = tt_put_varint(q, stream);
    q = tt_put_varint(q, name);
    q = tt_put_varint(q, 1000 + stream);
    put_def(p, rec, (size_t)(q - rec));
}

/* A process of this pid, with a clock of 1000 ticks a second. */
static void def_process(producer *p)
{
    uint8_t rec[64], *q = rec;
    *q++ = TT_DEF_PROCESS;
    q = tt_put_varint(q, 42);
    q = tt_put_varint(q, 1);
    q = tt_put_varint(q, 0);
    *q++ = TT_CLOCK_MONOTONIC;
    q = tt_put_varint(q, 1000);
    put_def(p, rec, (size_t)(q - rec));
}

/* Strings: 0 "", 1 "prog.py", 2 "__main__:main", 3 "__main__:work", 4
 * "__main__:rest", 5 "MainThread", 6 "worker"; regions 0 main, 1 work,
 * 2 rest; threads 0 MainThread, 1 worker. */
static void define_program(producer *p)
{
    static const char *const strings[] = {"",           "prog.py", "__main__:main", "__main__:work", "__main__:rest",
                                          "MainThread", "worker"};
    for (uint32_t i = 0; i < 7; i++) def_string(p, i, strings[i]);
    def_region(p, 0, 2, 1, 10);
    def_region(p, 1, 3, 1, 20);
    def_region(p, 2, 4, 1, 30);
    def_thread(p, 0, 5);
    def_thread(p, 1, 6);
    def_process(p);
}

static void ev(chunk *c, uint8_t tag, uint64_t t, uint32_t region)
{
    uint8_t *q = c->events + c->len;
    *q++ = tag;
    q = tt_put_varint(q, t - c->last);
    if (tag == TT_EV_ENTER) q = tt_put_varint(q, region);
    c->last = t;
    c->len = (uint32_t)(q - c->events);
}

static void enter(chunk *c, uint64_t t, uint32_t region) { ev(c, TT_EV_ENTER, t, region); }
static void leave(chunk *c, uint64_t t) { ev(c, TT_EV_LEAVE, t, 0); }

/* A chunk starting at `base`. */
static void start(chunk *c, uint32_t seq, uint64_t base)
{
    c->seq = seq;
    c->len = 0;
    c->base = c->last = base;
}

/* ---- agg on its own ---- */

static tt_live_slice slice_of(chunk *c, uint32_t stream, uint32_t from, int end)
{
    return (tt_live_slice){.stream = stream,
                           .seq = c->seq,
                           .offset = from,
                           .len = c->len - from,
                           .flags = end ? TT_LIVE_END : 0,
                           .base_ticks = c->base,
                           .data = c->events + from};
}

static void test_calls_and_times(void)
{
    static producer p;
    memset(&p, 0, sizeof p);
    define_program(&p);
    tt_functions functions = {0};
    tt_agg_process a;
    tt_agg_init(&a, &functions);
    const char *why = NULL;
    CHECK(tt_agg_defs(&a, p.defs, p.defs_len, &why) == 0);
    CHECK_U64(a.region_count, 3);
    CHECK_U64(a.ticks_per_second, 1000);
    CHECK_STR(functions.items[a.regions[1].function].name, "__main__:work");
    CHECK_STR(functions.items[a.regions[1].function].file, "prog.py");
    CHECK_STR(tt_agg_string(&a, 6), "worker");

    /* A return from before top saw the thread, main calling work, which
     * recurses, in two slices cut between records. */
    chunk *c = &p.streams[0];
    start(c, 0, 5);
    leave(c, 8);
    enter(c, 10, 0);
    enter(c, 20, 1);
    leave(c, 50);
    enter(c, 60, 1);
    uint32_t cut = c->len;
    enter(c, 70, 1);
    leave(c, 80);
    leave(c, 100);
    leave(c, 130);
    tt_live_slice first = slice_of(c, 0, 0, 0);
    first.len = cut;
    tt_live_slice second = slice_of(c, 0, cut, 0);
    CHECK(tt_agg_slice(&a, &first, &why) == 0);
    CHECK(tt_agg_slice(&a, &second, &why) == 0);
    tt_agg_thread *th = a.threads[0];
    CHECK(th && th->seen && th->depth == 0);
    CHECK_U64(tt_agg_total(th, 0).calls, 1);
    CHECK_U64(tt_agg_total(th, 0).inclusive, 120);
    CHECK_U64(tt_agg_total(th, 0).exclusive, 50);
    CHECK_U64(tt_agg_total(th, 1).calls, 3);
    CHECK_U64(tt_agg_total(th, 1).inclusive, 70); /* the recursive call not twice */
    CHECK_U64(tt_agg_total(th, 1).exclusive, 70);
    CHECK_U64(a.events, 9);

    /* The same slice again does not count twice; one beyond a gap in its
     * chunk waits for the chunk's start. */
    CHECK(tt_agg_slice(&a, &second, &why) == 0);
    tt_live_slice ahead = slice_of(c, 0, cut, 0);
    ahead.offset = c->len + 10;
    CHECK(tt_agg_slice(&a, &ahead, &why) == 0);
    CHECK_U64(tt_agg_total(th, 1).calls, 3);

    /* A chunk lost: the next starts over; calls open then close at the
     * last time seen. */
    uint32_t from = c->len;
    enter(c, 140, 0);
    enter(c, 150, 2);
    tt_live_slice open = slice_of(c, 0, from, 0);
    CHECK(tt_agg_slice(&a, &open, &why) == 0);
    CHECK_U64(th->depth, 2);
    start(c, 2, 500);
    enter(c, 510, 2);
    leave(c, 520);
    uint8_t *q = c->events + c->len;
    *q++ = TT_EV_STREAM_END;
    q = tt_put_varint(q, 0);
    c->len = (uint32_t)(q - c->events);
    tt_live_slice after = slice_of(c, 0, 0, 1);
    CHECK(tt_agg_slice(&a, &after, &why) == 0);
    CHECK_U64(a.resyncs, 1);
    CHECK_U64(tt_agg_total(th, 2).calls, 2);
    CHECK_U64(tt_agg_total(th, 2).exclusive, 10);
    CHECK_U64(tt_agg_total(th, 0).inclusive, 120 + 10);
    CHECK(th->ended);

    /* Damaged records are reported. */
    uint8_t bad[] = {99, 1};
    tt_live_slice damaged = {.stream = 1, .len = sizeof bad, .data = bad};
    CHECK(tt_agg_slice(&a, &damaged, &why) < 0);
    CHECK_STR(why, "unknown event record");

    tt_agg_reset(&a);
    CHECK_U64(tt_agg_total(th, 0).calls, 0);
    CHECK_U64(tt_agg_total(th, 2).exclusive, 0);
    tt_agg_free(&a);
    tt_functions_free(&functions);
}

/* ---- through a channel, with a watch and a view ---- */

/* What a writer pass hands over: the definitions, and stream `stream` up
 * to where it is. */
static void publish(producer *p, uint32_t stream, int full)
{
    chunk *c = &p->streams[stream];
    tt_live_begin_pass(p->live);
    tt_live_defs(p->live, 0, p->defs, p->defs_len, 0);
    tt_live_events(p->live, stream, c->seq, c->base, c->events, c->len, full);
}

static const tt_row *row_named(const tt_view *v, const tt_watch *w, const char *name)
{
    for (size_t i = 0; i < v->row_count; i++)
        if (strcmp(w->functions.items[v->rows[i].function].name, name) == 0) return &v->rows[i];
    return NULL;
}

static const char *row_name(const tt_view *v, const tt_watch *w, size_t i)
{
    return i < v->row_count ? w->functions.items[v->rows[i].function].name : "(none)";
}

static void test_watch_and_view(void)
{
    static producer p;
    memset(&p, 0, sizeof p);
    tt_error err;
    CHECK(tt_live_create("prog.py", "exp", &p.live, &err) == 0);
    tt_live_answer(p.live, 0, 0); /* not measuring: running calls do not grow */
    define_program(&p);

    tt_watch w;
    pid_t me = getpid();
    CHECK(tt_watch_init(&w, &me, 1) == 0);
    CHECK(tt_watch_scan(&w, &err) == 0);
    CHECK_U64(w.count, 1);

    /* MainThread: main (0..1000) calls work twice (100 + 300 ticks) and
     * rest (500), which is still running, and has just called work. */
    chunk *m = &p.streams[0], *worker = &p.streams[1];
    start(m, 0, 0);
    enter(m, 0, 0);
    enter(m, 100, 1);
    leave(m, 200);
    enter(m, 200, 1);
    leave(m, 500);
    enter(m, 500, 2);
    enter(m, 1000, 1);
    publish(&p, 0, 0);
    tt_watch_consume(&w, SIZE_MAX);

    tt_view v;
    tt_view_init(&v);
    CHECK(tt_view_build(&v, &w) == 0);
    CHECK_U64(v.thread_count, 1);
    CHECK(v.seconds == 1.0);
    CHECK_STR(row_name(&v, &w, 0), "__main__:rest");
    CHECK_STR(row_name(&v, &w, 1), "__main__:work");
    const tt_row *main_row = row_named(&v, &w, "__main__:main");
    const tt_row *work = row_named(&v, &w, "__main__:work");
    CHECK(main_row && main_row->calls == 1 && main_row->total == 1.0 && main_row->own == 0.1);
    CHECK(main_row && main_row->own_percent > 9.99 && main_row->own_percent < 10.01);
    CHECK(main_row && main_row->desc_percent > 89.99 && main_row->desc_percent < 90.01);
    CHECK(work && work->calls == 3 && work->own == 0.4);

    /* Sorted by calls, then by total. */
    tt_view_set_sort(&v, TT_SORT_CALLS);
    CHECK(tt_view_build(&v, &w) == 0);
    CHECK_STR(row_name(&v, &w, 0), "__main__:work");
    tt_view_set_sort(&v, TT_SORT_TOTAL);
    CHECK(tt_view_build(&v, &w) == 0);
    CHECK_STR(row_name(&v, &w, 0), "__main__:main");

    /* The worker thread's rows alone, and all threads merged. */
    start(worker, 0, 0);
    enter(worker, 0, 1);
    leave(worker, 2000);
    publish(&p, 1, 0);
    tt_watch_consume(&w, SIZE_MAX);
    tt_view_next_thread(&v, &w);
    tt_view_next_thread(&v, &w);
    tt_view_thread t1 = tt_view_scope_thread(&v, &w);
    CHECK(t1.thread && strcmp(tt_agg_string(&t1.process->agg, t1.thread->name), "worker") == 0);
    CHECK(tt_view_build(&v, &w) == 0);
    CHECK_U64(v.row_count, 1);
    CHECK(v.rows[0].total == 2.0 && v.rows[0].own_percent == 100.0);
    tt_view_next_thread(&v, &w);
    CHECK(!tt_view_scope_thread(&v, &w).thread);
    CHECK(tt_view_build(&v, &w) == 0);
    CHECK(v.seconds == 3.0);
    work = row_named(&v, &w, "__main__:work");
    CHECK(work && work->calls == 4 && work->total == 2.4);

    /* The filter keeps names containing it, in any case. */
    tt_view_set_filter(&v, "REST");
    CHECK(tt_view_build(&v, &w) == 0);
    CHECK_U64(v.row_count, 1);
    CHECK_STR(row_name(&v, &w, 0), "__main__:rest");
    tt_view_set_filter(&v, "");

    /* Steady, MainThread by own time: rest (0.5) is ahead of work (0.4).
     * work catching up to within the margin does not move it up; leading
     * by more does. */
    tt_view_next_thread(&v, &w);
    tt_view_set_sort(&v, TT_SORT_OWN);
    CHECK(tt_view_build(&v, &w) == 0);
    CHECK_STR(row_name(&v, &w, 0), "__main__:rest");
    leave(m, 1110);
    publish(&p, 0, 0);
    tt_watch_consume(&w, SIZE_MAX);
    CHECK(tt_view_build(&v, &w) == 0);
    work = row_named(&v, &w, "__main__:work");
    CHECK(work && work->own > 0.509 && work->own < 0.511);
    CHECK_STR(row_name(&v, &w, 0), "__main__:rest");
    enter(m, 1110, 1);
    leave(m, 1200);
    publish(&p, 0, 0);
    tt_watch_consume(&w, SIZE_MAX);
    CHECK(tt_view_build(&v, &w) == 0);
    CHECK_STR(row_name(&v, &w, 0), "__main__:work");

    /* Measurement switched from the watch: the request is answered. */
    tt_watch_request(&w, 1);
    CHECK_U64(tt_watch_pending(&w), 1);
    uint64_t ticket;
    CHECK(tt_live_poll_request(p.live, &ticket) == 1);
    tt_live_answer(p.live, ticket, 1);
    tt_watch_consume(&w, SIZE_MAX);
    CHECK_U64(tt_watch_pending(&w), 0);
    CHECK(w.procs[0]->measuring == 1);

    /* Reset: counts start again. */
    tt_watch_reset(&w);
    CHECK(tt_view_build(&v, &w) == 0);
    work = row_named(&v, &w, "__main__:work");
    CHECK(!work || work->calls == 0);

    /* The end of the measurement is seen; the process stays, watched once
     * even while its channel is still there. */
    uint8_t end[16], *q = end;
    *q++ = TT_DEF_PROCESS_END;
    for (int i = 0; i < 4; i++) q = tt_put_varint(q, 0);
    put_def(&p, end, (size_t)(q - end));
    publish(&p, 0, 0);
    tt_watch_consume(&w, SIZE_MAX);
    CHECK(!tt_watched_running(w.procs[0]));
    CHECK(tt_watch_scan(&w, &err) == 0);
    CHECK_U64(w.count, 1);
    tt_live_close(p.live);
    CHECK(tt_watch_scan(&w, &err) == 0);
    tt_watch_consume(&w, SIZE_MAX);
    CHECK_U64(w.count, 1);
    CHECK(!w.procs[0]->view); /* its shared memory given back */
    CHECK(tt_view_build(&v, &w) == 0);

    /* A later measurement of the same process is watched too. */
    tt_live *later;
    CHECK(tt_live_create("prog.py", "exp2", &later, &err) == 0);
    CHECK(tt_watch_scan(&w, &err) == 0);
    CHECK_U64(w.count, 2);
    CHECK(tt_watched_running(w.procs[1]));
    tt_live_close(later);
    tt_view_free(&v);
    tt_watch_free(&w);
}

/* ---- channels written wrong (another process writes them) ---- */

enum evil { HUGE_STRING, HUGE_REGION, HUGE_STREAM, DEFS_PAST_END, EVIL_COUNT };

static void publish_on(producer *p, uint32_t stream, chunk *c)
{
    tt_live_begin_pass(p->live);
    tt_live_defs(p->live, 0, p->defs, p->defs_len, 0);
    tt_live_events(p->live, stream, c->seq, c->base, c->events, c->len, 0);
}

/* In a child: a channel damaged as `how` says, kept until the child is
 * killed. Writes a byte to `ready` once it is. */
static void evil_channel(enum evil how, int ready)
{
    static producer p;
    tt_error err;
    if (tt_live_create("evil.py", "exp", &p.live, &err) != 0) _exit(1);
    define_program(&p);
    chunk *m = &p.streams[0];
    start(m, 0, 0);
    enter(m, 0, 0);
    uint32_t stream = 0;
    if (how == HUGE_STRING) def_string(&p, (1u << 31) - 5, "far");
    if (how == HUGE_REGION) def_region(&p, (1u << 31) - 5, 2, 1, 1);
    if (how == HUGE_STREAM) stream = 100000; /* beyond what is defined; the producer keeps state per stream */
    publish_on(&p, stream, m);
    if (how == DEFS_PAST_END) { /* the file shrunk under the definitions it announces */
        char name[64];
        snprintf(name, sizeof name, "/tracetop-%u-%ld", (unsigned)geteuid(), (long)getpid());
        int fd = shm_open(name, O_RDWR, 0);
        if (fd < 0 || ftruncate(fd, 4096 + TT_LIVE_RING_SIZE) < 0) _exit(1);
    }
    if (write(ready, "", 1) != 1) _exit(1);
    /* Slices go to a reader once it is attached: sent again and again. */
    for (;;) {
        if (how != DEFS_PAST_END) publish_on(&p, stream, m);
        usleep(5000);
    }
}

static void test_bad_channels_are_named_and_skipped(void)
{
    pid_t evil[EVIL_COUNT];
    int pipefd[2];
    CHECK(pipe(pipefd) == 0);
    for (int how = 0; how < EVIL_COUNT; how++) {
        evil[how] = fork();
        if (evil[how] == 0) evil_channel((enum evil)how, pipefd[1]);
    }
    char byte;
    for (int how = 0; how < EVIL_COUNT; how++) CHECK(read(pipefd[0], &byte, 1) == 1);

    static producer good;
    memset(&good, 0, sizeof good);
    tt_error err;
    CHECK(tt_live_create("good.py", "exp", &good.live, &err) == 0);
    define_program(&good);
    tt_watch w;
    CHECK(tt_watch_init(&w, NULL, 0) == 0); /* every channel, as plain `tracetop top` */
    CHECK(tt_watch_scan(&w, &err) == 0);
    chunk *m = &good.streams[0];
    start(m, 0, 0);
    enter(m, 0, 1);
    leave(m, 100);
    publish(&good, 0, 0);
    for (int i = 0; i < 20; i++) {
        tt_watch_consume(&w, SIZE_MAX);
        usleep(5000);
    }

    int good_read = 0, named[EVIL_COUNT] = {0};
    for (size_t i = 0; i < w.count; i++) {
        const tt_watched *p = w.procs[i];
        if (p->pid == getpid()) good_read = !p->problem && p->agg.events == 2;
        for (int how = 0; how < EVIL_COUNT; how++)
            if (p->pid == evil[how] && p->problem && !tt_watched_running(p)) named[how] = 1;
    }
    CHECK(good_read);
    CHECK(named[HUGE_STRING]);
    CHECK(named[HUGE_REGION]);
    CHECK(named[HUGE_STREAM]);
    CHECK(named[DEFS_PAST_END]);

    for (int how = 0; how < EVIL_COUNT; how++) { /* killed: their channels are removed here, not left */
        kill(evil[how], SIGKILL);
        waitpid(evil[how], NULL, 0);
        char name[64];
        snprintf(name, sizeof name, "/tracetop-%u-%ld", (unsigned)geteuid(), (long)evil[how]);
        shm_unlink(name);
    }
    close(pipefd[0]);
    close(pipefd[1]);
    tt_watch_free(&w);
    tt_live_close(good.live);
}

/* The live viewer's sink: calls that returned and were long enough, with
 * their depth and times; counter samples; nothing beyond its limit. */
static void test_sink(void)
{
    static producer p;
    memset(&p, 0, sizeof p);
    define_program(&p);
    tt_functions functions = {0};
    tt_agg_process a;
    tt_agg_sink sink = {.min_ticks = 10, .limit = 3};
    tt_agg_init(&a, &functions);
    a.sink = &sink;
    const char *why = NULL;
    CHECK(tt_agg_defs(&a, p.defs, p.defs_len, &why) == 0);
    chunk *c = &p.streams[0];
    start(c, 0, 0);
    enter(c, 10, 0);
    enter(c, 20, 1);
    leave(c, 25); /* too short to keep */
    enter(c, 30, 1);
    leave(c, 60);
    uint8_t *q = c->events + c->len;
    *q++ = TT_EV_COUNTER;
    q = tt_put_varint(q, 5);
    q = tt_put_varint(q, 6);
    double value = 2.5;
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    tt_put_u64(q, bits);
    q += 8;
    c->last += 5;
    c->len = (uint32_t)(q - c->events);
    leave(c, 100);
    tt_live_slice s = slice_of(c, 0, 0, 0);
    CHECK(tt_agg_slice(&a, &s, &why) == 0);
    CHECK_U64(sink.span_count, 2);
    CHECK(sink.spans[0].function == a.regions[1].function && sink.spans[0].depth == 1);
    CHECK_U64(sink.spans[0].begin, 30);
    CHECK_U64(sink.spans[0].end, 60);
    CHECK(sink.spans[1].function == a.regions[0].function && sink.spans[1].depth == 0);
    CHECK_U64(sink.spans[1].end, 100);
    CHECK_U64(sink.sample_count, 1);
    CHECK(sink.samples[0].name == 6 && sink.samples[0].value == 2.5);
    CHECK_U64(sink.samples[0].ticks, 65);
    CHECK_U64(tt_agg_total(a.threads[0], 1).calls, 2); /* counted all the same */

    /* Beyond the limit: counted, not kept; cleared, kept again. */
    start(c, 1, 200);
    for (int i = 0; i < 4; i++) {
        enter(c, 200 + 100 * (uint64_t)i, 1);
        leave(c, 250 + 100 * (uint64_t)i);
    }
    s = slice_of(c, 0, 0, 0);
    CHECK(tt_agg_slice(&a, &s, &why) == 0);
    CHECK_U64(sink.span_count, 3);
    CHECK_U64(sink.spans_lost, 3);
    tt_agg_sink_clear(&sink);
    CHECK_U64(sink.span_count + sink.spans_lost + sink.sample_count, 0);
    tt_agg_sink_free(&sink);
    tt_agg_free(&a);
    tt_functions_free(&functions);
}

/* An OBJECTS record at t (format.h). */
static void objects(chunk *c, uint64_t t, uint32_t region, uint32_t type, uint64_t created, uint64_t destroyed)
{
    uint8_t *q = c->events + c->len;
    *q++ = TT_EV_OBJECTS;
    q = tt_put_varint(q, t - c->last);
    q = tt_put_varint(q, region + 1);
    q = tt_put_varint(q, type);
    q = tt_put_varint(q, 56);
    q = tt_put_varint(q, created);
    q = tt_put_varint(q, destroyed);
    c->last = t;
    c->len = (uint32_t)(q - c->events);
}

static const tt_objrow *objrow_named(const tt_objview *o, const char *type)
{
    for (size_t i = 0; i < o->row_count; i++)
        if (strcmp(o->rows[i].type, type) == 0) return &o->rows[i];
    return NULL;
}

/* --objects: OBJECTS records, from any region and thread, counted per type
 * of the process; top's rows merge them by name, most alive first, with
 * rates per second between two builds; a reset keeps what is alive. */
static void test_objects(void)
{
    static producer p;
    memset(&p, 0, sizeof p);
    tt_error err;
    CHECK(tt_live_create("prog.py", "exp", &p.live, &err) == 0);
    define_program(&p);
    def_string(&p, 7, "list");
    def_string(&p, 8, "dict");
    tt_watch w;
    pid_t me = getpid();
    CHECK(tt_watch_init(&w, &me, 1) == 0);
    CHECK(tt_watch_scan(&w, &err) == 0);
    tt_objview o = {0};
    CHECK(tt_objview_build(&o, &w, 1000000000ull) == 0);
    CHECK(!o.counting && o.row_count == 0);

    /* MainThread: main makes 100 lists and frees 40, work makes 30 dicts;
     * the worker frees 10 of the lists, and makes 5 more in no region. */
    chunk *m = &p.streams[0], *worker = &p.streams[1];
    start(m, 0, 0);
    enter(m, 0, 0);
    objects(m, 10, 0, 7, 100, 40);
    enter(m, 20, 1);
    objects(m, 30, 1, 8, 30, 0);
    leave(m, 40);
    publish(&p, 0, 0);
    start(worker, 0, 0);
    uint8_t *q = worker->events;
    *q++ = TT_EV_OBJECTS;
    q = tt_put_varint(q, 50);
    q = tt_put_varint(q, 0); /* no region */
    q = tt_put_varint(q, 7);
    q = tt_put_varint(q, 56);
    q = tt_put_varint(q, 5);
    q = tt_put_varint(q, 10);
    worker->last = 50;
    worker->len = (uint32_t)(q - worker->events);
    publish(&p, 1, 0);
    tt_watch_consume(&w, SIZE_MAX);
    const tt_agg_process *a = &w.procs[0]->agg;
    CHECK_U64(a->objects, 3);
    CHECK(a->objtype_cap > 8);
    CHECK(a->objtypes[7].created == 105 && a->objtypes[7].destroyed == 50 && a->objtypes[7].alive == 55);
    CHECK(a->objtypes[8].created == 30 && a->objtypes[8].destroyed == 0 && a->objtypes[8].alive == 30);

    /* A second after the first build. */
    CHECK(tt_objview_build(&o, &w, 2000000000ull) == 0);
    CHECK(o.counting);
    CHECK_U64(o.row_count, 2);
    CHECK_STR(o.row_count ? o.rows[0].type : "", "list");
    const tt_objrow *list = objrow_named(&o, "list"), *dict = objrow_named(&o, "dict");
    CHECK(list && list->created == 105 && list->destroyed == 50 && list->alive == 55);
    /* A type first seen in this build has no rate yet. */
    CHECK(list && list->created_rate == 0 && dict && dict->created_rate == 0);

    /* A second later: 200 dicts made, 20 lists freed. */
    objects(m, 60, 1, 8, 200, 0);
    objects(m, 70, 0, 7, 0, 20);
    publish(&p, 0, 0);
    tt_watch_consume(&w, SIZE_MAX);
    CHECK(tt_objview_build(&o, &w, 2500000000ull) == 0); /* too soon for new rates */
    CHECK(objrow_named(&o, "dict") && objrow_named(&o, "dict")->created_rate == 0);
    CHECK(tt_objview_build(&o, &w, 3000000000ull) == 0);
    CHECK_STR(o.row_count ? o.rows[0].type : "", "dict"); /* 230 alive, lists 35 */
    list = objrow_named(&o, "list");
    dict = objrow_named(&o, "dict");
    CHECK(dict && dict->created_rate == 200.0 && dict->destroyed_rate == 0 && dict->alive == 230);
    CHECK(list && list->created_rate == 0 && list->destroyed_rate == 20.0 && list->alive == 35);

    /* A reset: counts from zero, alive kept; no rate across it. */
    tt_watch_reset(&w);
    CHECK(tt_objview_build(&o, &w, 4000000000ull) == 0);
    dict = objrow_named(&o, "dict");
    CHECK(dict && dict->created == 0 && dict->alive == 230 && dict->created_rate == 0);

    /* 25 sets made before top attached are freed: none alive, not -25;
     * then 10 made: at least those alive. */
    def_string(&p, 9, "set");
    objects(m, 80, 0, 9, 0, 25);
    publish(&p, 0, 0);
    tt_watch_consume(&w, SIZE_MAX);
    CHECK(a->objtypes[9].destroyed == 25 && a->objtypes[9].alive == 0);
    objects(m, 90, 0, 9, 10, 0);
    publish(&p, 0, 0);
    tt_watch_consume(&w, SIZE_MAX);
    CHECK(a->objtypes[9].alive == 10);

    /* A type id beyond what the channel defined is refused. */
    tt_functions functions = {0};
    tt_agg_process bad;
    tt_agg_init(&bad, &functions);
    const char *why = NULL;
    CHECK(tt_agg_defs(&bad, p.defs, p.defs_len, &why) == 0);
    start(m, 5, 0);
    objects(m, 10, 0, 1u << 20, 1, 0);
    tt_live_slice s = slice_of(m, 0, 0, 0);
    CHECK(tt_agg_slice(&bad, &s, &why) < 0);
    CHECK(why && strstr(why, "beyond"));
    tt_agg_free(&bad);
    tt_functions_free(&functions);

    tt_objview_free(&o);
    tt_watch_free(&w);
    tt_live_close(p.live);
}

/* A gap in the measurement (RECORDING_OFF to RECORDING_ON) is no call's
 * time: main and work, open across one of 1000 ticks, count 10 + 10 and
 * 5 + 5 of their 1020 and 1010. */
static void test_gap(void)
{
    static producer p;
    memset(&p, 0, sizeof p);
    define_program(&p);
    tt_functions functions = {0};
    tt_agg_process a;
    tt_agg_init(&a, &functions);
    const char *why = NULL;
    CHECK(tt_agg_defs(&a, p.defs, p.defs_len, &why) == 0);
    chunk *c = &p.streams[0];
    start(c, 0, 0);
    enter(c, 10, 0);
    enter(c, 15, 1);
    ev(c, TT_EV_RECORDING_OFF, 20, 0);
    ev(c, TT_EV_RECORDING_ON, 1020, 0);
    leave(c, 1025);
    leave(c, 1030);
    tt_live_slice all = slice_of(c, 0, 0, 0);
    CHECK(tt_agg_slice(&a, &all, &why) == 0);
    tt_agg_thread *th = a.threads[0];
    CHECK(th && th->depth == 0 && th->off_at == 0);
    CHECK_U64(tt_agg_total(th, 0).calls, 1);
    CHECK_U64(tt_agg_total(th, 0).inclusive, 20);
    CHECK_U64(tt_agg_total(th, 0).exclusive, 10);
    CHECK_U64(tt_agg_total(th, 1).calls, 1);
    CHECK_U64(tt_agg_total(th, 1).exclusive, 10);
    tt_agg_free(&a);
    tt_functions_free(&functions);
}

/* The last seconds, and CPU time shared out. MainThread (1000 ticks a
 * second): main calls work (10 to 2490), then time:sleep, a C function
 * (2500 to 3500), then rest (3500 to 4400, 4400 to 4900, and from 4900
 * on, running); the worker ends at once. The thread had used 2.6 s of CPU
 * time at 3000, holding the GIL 520 of 600 looks; then 0.3 s more at
 * 4000, holding it 120 of 200 looks. The process ends at 4900: its window ends there. */
static void test_window_and_cpu(void)
{
    static producer p;
    memset(&p, 0, sizeof p);
    tt_error err;
    CHECK(tt_live_create("prog.py", "exp", &p.live, &err) == 0);
    define_program(&p);
    def_string(&p, 7, "time:sleep");
    def_region_of(&p, 3, 7, 0, 0, TT_REGION_C);
    def_usage(&p, 0, 0, 0, 0, 0);
    def_usage(&p, 0, 3000, 2600000000ull, 600, 520);
    def_usage(&p, 0, 4000, 2900000000ull, 800, 640);
    tt_watch w;
    pid_t me = getpid();
    CHECK(tt_watch_init(&w, &me, 1) == 0);
    CHECK(tt_watch_scan(&w, &err) == 0);

    chunk *m = &p.streams[0], *worker = &p.streams[1];
    start(m, 0, 0);
    enter(m, 0, 0);
    enter(m, 10, 1);
    leave(m, 2490);
    enter(m, 2500, 3);
    leave(m, 3500);
    enter(m, 3500, 2);
    leave(m, 4400);
    enter(m, 4400, 2);
    publish(&p, 0, 0);
    start(worker, 0, 0);
    uint8_t *q = worker->events;
    *q++ = TT_EV_STREAM_END;
    q = tt_put_varint(q, 5);
    worker->len = (uint32_t)(q - worker->events);
    publish(&p, 1, 0);
    tt_watch_consume(&w, SIZE_MAX);

    /* t: from every thread to MainThread, then past the worker, which
     * ended, to every thread again. */
    tt_view v;
    tt_view_init(&v);
    tt_view_next_thread(&v, &w);
    tt_view_thread t = tt_view_scope_thread(&v, &w);
    CHECK(t.thread && t.thread->stream == 0);
    tt_view_next_thread(&v, &w);
    CHECK(!tt_view_scope_thread(&v, &w).thread && v.pid == 0);

    leave(m, 4900);
    enter(m, 4900, 2);
    uint8_t end[16], *e = end;
    *e++ = TT_DEF_PROCESS_END;
    for (int i = 0; i < 4; i++) e = tt_put_varint(e, 0);
    put_def(&p, end, (size_t)(e - end));
    publish(&p, 0, 0);
    tt_watch_consume(&w, SIZE_MAX);
    CHECK(!tt_watched_running(w.procs[0]));
    const tt_agg_thread *th = w.procs[0]->agg.threads[0];
    CHECK_U64(th->ring_count, 4); /* seconds 0 to 3 ended; 4 is the current one */
    CHECK_U64(th->second_start, 4000);

    /* Since top attached: work leads. CPU: to 3000, the GIL held 2.6 s,
     * all of Python code's 2.5 (main 0.02, work 2.48) and 0.1 of
     * time:sleep's 0.5, and as much CPU time; to 4000, held 0.6 s, rest's
     * 0.5 and 0.1 of time:sleep's 0.5, with half as much CPU time: rest
     * 0.25, time:sleep 0.05. */
    CHECK(tt_view_build(&v, &w) == 0);
    CHECK_STR(row_name(&v, &w, 0), "__main__:work");
    const tt_row *work = row_named(&v, &w, "__main__:work"), *rest = row_named(&v, &w, "__main__:rest");
    const tt_row *sleep = row_named(&v, &w, "time:sleep"), *main_row = row_named(&v, &w, "__main__:main");
    CHECK(work && work->own > 2.4799 && work->own < 2.4801 && work->cpu > 2.4799 && work->cpu < 2.4801);
    CHECK(main_row && main_row->cpu > 0.0199 && main_row->cpu < 0.0201);
    CHECK(sleep && sleep->own > 0.9999 && sleep->own < 1.0001 && sleep->cpu > 0.1499 && sleep->cpu < 0.1501);
    CHECK(rest && rest->own > 1.3999 && rest->own < 1.4001 && rest->cpu > 0.2499 && rest->cpu < 0.2501);
    CHECK(v.wall > 4.8999 && v.wall < 4.9001);

    /* The last second and the current one, from 3000 to 4900: rest leads,
     * work is gone; main's total is the 1.9 s. */
    tt_view_set_window(&v, 1);
    CHECK(tt_view_build(&v, &w) == 0);
    CHECK_STR(row_name(&v, &w, 0), "__main__:rest");
    CHECK(!row_named(&v, &w, "__main__:work"));
    rest = row_named(&v, &w, "__main__:rest");
    sleep = row_named(&v, &w, "time:sleep");
    main_row = row_named(&v, &w, "__main__:main");
    CHECK(v.seconds > 1.8999 && v.seconds < 1.9001 && v.wall > 1.8999 && v.wall < 1.9001);
    CHECK(rest && rest->own > 1.3999 && rest->own < 1.4001 && rest->calls == 3);
    CHECK(rest && rest->cpu > 0.2499 && rest->cpu < 0.2501);
    CHECK(rest && rest->cpu_percent > 13.15 && rest->cpu_percent < 13.16); /* 0.25 of 1.9 s */
    CHECK(sleep && sleep->own > 0.4999 && sleep->own < 0.5001 && sleep->cpu > 0.0499 && sleep->cpu < 0.0501);
    CHECK(main_row && main_row->total > 1.8999 && main_row->total < 1.9001 && main_row->own == 0);

    /* A window wider than what was seen: all of it. */
    tt_view_set_window(&v, 30);
    CHECK(tt_view_build(&v, &w) == 0);
    work = row_named(&v, &w, "__main__:work");
    CHECK(work && work->own > 2.4799 && work->own < 2.4801);

    tt_view_free(&v);
    tt_watch_free(&w);
    tt_live_close(p.live);
}

int main(void)
{
    test_objects();
    test_calls_and_times();
    test_gap();
    test_sink();
    test_watch_and_view();
    test_window_and_cpu();
    test_bad_channels_are_named_and_skipped();
    return check_report();
}

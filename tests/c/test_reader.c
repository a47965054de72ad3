/* test_reader.c -- the reader and the profile, on experiments written here
 * record by record (a small writer below), intact, cut and damaged. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "scratch.h"
#include "format.h"
#include "profile.h"
#include "tasklanes.h"
#include "reader.h"

/* ---- a test writer: records into a payload, payloads into chunk files ---- */

typedef struct rec {
    uint8_t b[1 << 16];
    size_t n;
} rec;

static void put_u8(rec *r, uint8_t v) { r->b[r->n++] = v; }
static void put_v(rec *r, uint64_t v) { r->n = (size_t)(tt_put_varint(r->b + r->n, v) - r->b); }
static void put_str(rec *r, const char *s)
{
    put_v(r, strlen(s));
    memcpy(r->b + r->n, s, strlen(s));
    r->n += strlen(s);
}

static void e_tag(rec *r, uint8_t tag, uint64_t dt) /* LEAVE, RECORDING_*, STREAM_END */
{
    put_u8(r, tag);
    put_v(r, dt);
}
static void e_id(rec *r, uint8_t tag, uint64_t dt, uint64_t id) /* ENTER, MARK */
{
    e_tag(r, tag, dt);
    put_v(r, id);
}
static void e_enter(rec *r, uint64_t dt, uint64_t region) { e_id(r, TT_EV_ENTER, dt, region); }
static void e_leave(rec *r, uint64_t dt) { e_tag(r, TT_EV_LEAVE, dt); }

static uint64_t rnd(uint64_t n);

/* An ENTER or a LEAVE in any form its dt allows (format.h), picked at
 * random, with the predictor of the chunk kept as a writer keeps it. */
static void e_enter_any(rec *r, uint64_t dt, uint32_t region, tt_predictor *predict)
{
    uint32_t *slot = tt_predict_slot(predict);
    if (*slot == region && dt < TT_EV_PREDICTED_DT_LIMIT && rnd(4)) {
        put_u8(r, (uint8_t)(TT_EV_ENTER_PREDICTED + (dt >> 8)));
        put_u8(r, (uint8_t)dt);
    } else if (dt < TT_EV_SHORT_DT_LIMIT && rnd(4)) {
        put_u8(r, (uint8_t)(TT_EV_ENTER_SHORT + (dt >> 8)));
        put_u8(r, (uint8_t)dt);
        put_v(r, region);
    } else if (dt < TT_EV_ENTER_MEDIUM_DT_LIMIT && rnd(4)) {
        int predicted = *slot == region && rnd(2);
        put_u8(r, (uint8_t)((predicted ? TT_EV_ENTER_PREDICTED_MEDIUM : TT_EV_ENTER_MEDIUM) + (dt >> 16)));
        put_u8(r, (uint8_t)dt);
        put_u8(r, (uint8_t)(dt >> 8));
        if (!predicted) put_v(r, region);
    } else {
        e_enter(r, dt, region);
    }
    tt_predict_enter(predict, slot, region);
}

static void e_leave_any(rec *r, uint64_t dt, tt_predictor *predict)
{
    if (dt < TT_EV_SHORT_DT_LIMIT && rnd(4)) {
        put_u8(r, (uint8_t)(TT_EV_LEAVE_SHORT + (dt >> 8)));
        put_u8(r, (uint8_t)dt);
    } else if (dt < TT_EV_MEDIUM_DT_LIMIT && rnd(4)) {
        put_u8(r, (uint8_t)(TT_EV_LEAVE_MEDIUM + (dt >> 16)));
        put_u8(r, (uint8_t)dt);
        put_u8(r, (uint8_t)(dt >> 8));
    } else {
        e_leave(r, dt);
    }
    tt_predict_leave(predict);
}

static void d_string(rec *r, uint64_t id, const char *s)
{
    put_u8(r, TT_DEF_STRING);
    put_v(r, id);
    put_str(r, s);
}
static void d_region(rec *r, uint64_t id, uint64_t name, uint64_t file, uint64_t line, uint8_t kind)
{
    put_u8(r, TT_DEF_REGION);
    put_v(r, id);
    put_v(r, name);
    put_v(r, file);
    put_v(r, line);
    put_u8(r, kind);
}
static void d_thread(rec *r, uint64_t stream, uint64_t name, uint64_t tid)
{
    put_u8(r, TT_DEF_THREAD);
    put_v(r, stream);
    put_v(r, name);
    put_v(r, tid);
}
static void d_process(rec *r, uint64_t pid, uint64_t ppid, uint64_t name, uint8_t clock, uint64_t tps)
{
    put_u8(r, TT_DEF_PROCESS);
    put_v(r, pid);
    put_v(r, ppid);
    put_v(r, name);
    put_u8(r, clock);
    put_v(r, tps);
}
static void d_sync(rec *r, uint64_t ticks, uint64_t mono, uint64_t real)
{
    put_u8(r, TT_DEF_CLOCK_SYNC);
    put_v(r, ticks);
    put_v(r, mono);
    put_v(r, real);
}
static void d_end(rec *r, uint64_t ticks, uint64_t events, uint64_t waits, uint64_t wait_ns)
{
    put_u8(r, TT_DEF_PROCESS_END);
    put_v(r, ticks);
    put_v(r, events);
    put_v(r, waits);
    put_v(r, wait_ns);
}

typedef struct tfile {
    FILE *f;
    uint32_t seq;      /* of the next chunk */
    long offsets[256]; /* where each chunk starts */
    long size;
    void *zstd;
    int compressed; /* chunks actually stored compressed */
} tfile;

static char root[] = "/tmp/tracetop-test-XXXXXX";

/* Paths under root: exp/trace/<process directory>/file. */
static void path_in(char *buf, size_t size, const char *exp, const char *process, const char *file)
{
    snprintf(buf, size, "%s/%s/trace/%s/%s", root, exp, process, file);
}

static void path_of(char *buf, size_t size, const char *exp, uint64_t pid, const char *file)
{
    char process[24];
    snprintf(process, sizeof process, "%" PRIu64, pid);
    path_in(buf, size, exp, process, file);
}

static void tf_open_in(tfile *tf, const char *exp, const char *process, const char *file, enum tt_file_kind kind)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, exp);
    mkdir(path, 0777);
    snprintf(path, sizeof path, "%s/%s/trace", root, exp);
    mkdir(path, 0777);
    snprintf(path, sizeof path, "%s/%s/trace/%s", root, exp, process);
    mkdir(path, 0777);
    path_in(path, sizeof path, exp, process, file);
    memset(tf, 0, sizeof *tf);
    tf->f = fopen(path, "wb");
    if (!tf->f) {
        perror(path);
        exit(2);
    }
    uint8_t h[TT_FILE_HEADER_SIZE];
    tt_file_header_encode(h, kind, TT_FORMAT_VERSION_PLAIN);
    fwrite(h, 1, sizeof h, tf->f);
    tf->size = sizeof h;
}

static void tf_open(tfile *tf, const char *exp, uint64_t pid, const char *file, enum tt_file_kind kind)
{
    char process[24];
    snprintf(process, sizeof process, "%" PRIu64, pid);
    tf_open_in(tf, exp, process, file, kind);
}

static void tf_raw(tfile *tf, const void *bytes, size_t n)
{
    fwrite(bytes, 1, n, tf->f);
    tf->size += (long)n;
}

/* Writes r as the next chunk (zstd-compressed when asked and it helps) and
 * empties r. */
static void tf_chunk_codec(tfile *tf, uint64_t base_ticks, rec *r, uint8_t flags, int zstd)
{
    static uint8_t packed[1 << 17];
    struct tt_chunk_header h = {.seq = tf->seq++,
                                .base_ticks = base_ticks,
                                .stored_size = (uint32_t)r->n,
                                .raw_size = (uint32_t)r->n,
                                .codec = TT_CODEC_NONE,
                                .flags = flags};
    const uint8_t *stored = r->b;
    if (zstd) {
        if (!tf->zstd) tf->zstd = tt_compress_ctx_new(TT_ZSTD_CHUNK_LEVEL);
        size_t n = tt_compress(tf->zstd, packed, sizeof packed, r->b, r->n);
        if (n) {
            h.codec = TT_CODEC_ZSTD;
            h.stored_size = (uint32_t)n;
            stored = packed;
            tf->compressed++;
        }
    }
    uint8_t header[TT_CHUNK_HEADER_SIZE];
    tt_chunk_header_encode(header, &h, stored);
    tf->offsets[h.seq] = tf->size;
    tf_raw(tf, header, sizeof header);
    tf_raw(tf, stored, h.stored_size);
    r->n = 0;
}

static void tf_chunk(tfile *tf, uint64_t base_ticks, rec *r, uint8_t flags)
{
    tf_chunk_codec(tf, base_ticks, r, flags, 0);
}

static void tf_close(tfile *tf)
{
    fclose(tf->f);
    tt_compress_ctx_free(tf->zstd);
}

/* Ticks per second: ticks are ns, or us for times that read well in ms. */
#define TICK_NS 1000000000u
#define TICK_US 1000000u

/* Regions 0 "__main__:a", 1 "__main__:b", 2 "builtins:len"; strings 6 "n",
 * 7 "mode"; thread 0 "MainThread"; ticks count from real time `real`. */
static void std_defs(rec *r, uint64_t pid, uint64_t real, uint64_t tps)
{
    d_string(r, 0, "");
    d_string(r, 1, "/home/u/prog.py");
    d_string(r, 2, "__main__:a");
    d_string(r, 3, "__main__:b");
    d_string(r, 4, "builtins:len");
    d_string(r, 5, "MainThread");
    d_string(r, 6, "n");
    d_string(r, 7, "mode");
    d_process(r, pid, 1, 1, TT_CLOCK_MONOTONIC, tps);
    d_sync(r, 0, 0, real);
    d_region(r, 0, 2, 1, 10, TT_REGION_PYTHON);
    d_region(r, 1, 3, 1, 20, TT_REGION_PYTHON);
    d_region(r, 2, 4, 0, 0, TT_REGION_C);
    d_thread(r, 0, 5, 4242);
}

/* A defs.tts with std_defs, ended normally (PROCESS_END) or not. */
static void write_std_defs(const char *exp, uint64_t pid, int ended, uint64_t tps)
{
    static rec r;
    tfile tf;
    tf_open(&tf, exp, pid, "defs.tts", TT_FILE_DEFS);
    std_defs(&r, pid, 1000000000000, tps);
    if (ended) d_end(&r, 1000, 10, 0, 0);
    tf_chunk(&tf, 0, &r, 0);
    tf_close(&tf);
}

static void truncate_file(const char *exp, uint64_t pid, const char *file, long size)
{
    char path[512];
    path_of(path, sizeof path, exp, pid, file);
    if (truncate(path, size) != 0) {
        perror(path);
        exit(2);
    }
}

/* Flips the bits of one byte of a file. */
static void flip_byte(const char *exp, uint64_t pid, const char *file, long offset)
{
    char path[512];
    path_of(path, sizeof path, exp, pid, file);
    FILE *f = fopen(path, "r+b");
    fseek(f, offset, SEEK_SET);
    int c = fgetc(f);
    fseek(f, offset, SEEK_SET);
    fputc(c ^ 0xff, f);
    fclose(f);
}

static long file_size_of(const char *exp, uint64_t pid, const char *file)
{
    char path[512];
    path_of(path, sizeof path, exp, pid, file);
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    return size;
}

/* ---- reading a stream whole ---- */

typedef struct stream_read {
    tt_event ev[8192];
    size_t n, synthesized;
    tt_stream_state state;
    char problem[512]; /* "" when complete */
    uint64_t events_read;
} stream_read;

static char exp_dir[512];

static const char *exp_path(const char *exp)
{
    snprintf(exp_dir, sizeof exp_dir, "%s/%s", root, exp);
    return exp_dir;
}

/* Reads stream `stream` of process `pi`; -1 when the trace does not open. */
static int read_stream(const char *exp, size_t pi, size_t stream, stream_read *out)
{
    tt_trace *t;
    tt_cursor *c;
    tt_error err;
    memset(out, 0, sizeof *out);
    if (tt_trace_open(exp_path(exp), &t, &err) != 0) {
        fprintf(stderr, "    open failed: %s\n", err.message);
        return -1;
    }
    if (tt_cursor_open(t, tt_trace_process(t, pi), stream, &c, &err) != 0) {
        fprintf(stderr, "    cursor failed: %s\n", err.message);
        tt_trace_close(t);
        return -1;
    }
    tt_event ev;
    while (tt_cursor_next(c, &ev)) {
        if (out->n < sizeof out->ev / sizeof out->ev[0]) out->ev[out->n++] = ev;
        out->synthesized += ev.synthesized;
    }
    CHECK(tt_cursor_next(c, &ev) == 0); /* stays at the end */
    out->state = tt_cursor_state(c);
    const char *problem = tt_cursor_problem(c);
    CHECK((problem == NULL) == (out->state == TT_STREAM_COMPLETE));
    snprintf(out->problem, sizeof out->problem, "%s", problem ? problem : "");
    out->events_read = tt_cursor_events_read(c);
    tt_cursor_close(c);

    /* Again, ENTER and LEAVE in bulk where the cursor gives them so (batches
     * of 1 to 7), the rest one at a time: the same events, problem and count. */
    CHECK(tt_cursor_open(t, tt_trace_process(t, pi), stream, &c, &err) == 0);
    size_t k = 0, differ = 0;
    for (size_t round = 0;; round++) {
        tt_call calls[7];
        size_t n = tt_cursor_next_calls(c, calls, 1 + round % 7);
        if (!n) {
            if (!tt_cursor_next(c, &ev)) break;
            const tt_event *e = &out->ev[k < out->n ? k : 0];
            differ += k < out->n && (e->kind != ev.kind || e->time != ev.time || e->depth != ev.depth ||
                                     e->synthesized != ev.synthesized ||
                                     ((ev.kind == TT_EV_ENTER || ev.kind == TT_EV_LEAVE) && e->region != ev.region));
            k++;
        }
        for (size_t i = 0; i < n; i++, k++) {
            const tt_event *e = &out->ev[k < out->n ? k : 0];
            differ += k < out->n && (e->kind != calls[i].kind || e->time != calls[i].time ||
                                     e->region != calls[i].region || e->depth != calls[i].depth || e->synthesized);
        }
    }
    CHECK_U64(differ, 0);
    if (out->n < sizeof out->ev / sizeof out->ev[0]) CHECK_U64(k, out->n);
    CHECK(tt_cursor_state(c) == out->state);
    CHECK_U64(tt_cursor_events_read(c), out->events_read);
    tt_cursor_close(c);
    tt_trace_close(t);
    return 0;
}

/* Every stream a cursor yields must be well nested, with times that never
 * decrease and depths that match. */
static int well_nested(const stream_read *s)
{
    uint32_t stack[1024];
    size_t depth = 0;
    for (size_t i = 0; i < s->n; i++) {
        const tt_event *e = &s->ev[i];
        if (i && e->time < s->ev[i - 1].time) return 0;
        if (e->kind == TT_EV_ENTER) stack[depth++] = e->region;
        if (e->kind == TT_EV_LEAVE && (depth == 0 || stack[--depth] != e->region)) return 0;
        if (e->depth != depth) return 0;
        if (e->kind == TT_EV_STREAM_END && (depth != 0 || i + 1 != s->n)) return 0;
    }
    return depth == 0;
}

/* ---- tests ---- */

static void test_round_trip(void)
{
    static rec r;
    tfile tf;
    const char *exp = "roundtrip";
    tf_open(&tf, exp, 4242, "defs.tts", TT_FILE_DEFS);
    std_defs(&r, 4242, 5000000000, TICK_NS);
    d_string(&r, 8, "worker-0");
    d_string(&r, 9, "worker-1");
    d_string(&r, 10, "python");
    d_string(&r, 11, "3.12");
    d_string(&r, 12, "user:load");
    d_string(&r, 13, "q");
    d_region(&r, 3, 12, 0, 0, TT_REGION_USER);
    d_thread(&r, 1, 8, 4343);
    d_thread(&r, 1, 9, 4343); /* renamed */
    put_u8(&r, TT_DEF_ATTRIBUTE);
    put_v(&r, 10);
    put_v(&r, 11);
    d_end(&r, 2000000, 77, 3, 999);
    tf_chunk(&tf, 0, &r, 0);
    tf_close(&tf);

    tf_open(&tf, exp, 4242, "0.tts", TT_FILE_EVENTS);
    e_enter(&r, 5, 0); /* t = 1000 + 5 */
    e_tag(&r, TT_EV_PARAM_INT, 1);
    put_v(&r, 6);
    put_v(&r, tt_zigzag(INT64_MIN));
    e_tag(&r, TT_EV_PARAM_UINT, 1);
    put_v(&r, 6);
    put_v(&r, UINT64_MAX);
    e_tag(&r, TT_EV_PARAM_STRING, 1);
    put_v(&r, 7);
    put_str(&r, "fast");
    e_tag(&r, TT_EV_COUNTER, 1);
    put_v(&r, 13);
    uint64_t bits;
    double value = -2.5;
    memcpy(&bits, &value, sizeof bits);
    r.n += 8;
    tt_put_u64(r.b + r.n - 8, bits);
    e_id(&r, TT_EV_MARK, 1, 7);
    e_tag(&r, TT_EV_RECORDING_OFF, 1);
    e_tag(&r, TT_EV_RECORDING_ON, 100);
    e_enter(&r, 1, 3);
    e_enter(&r, 1, 2);
    e_leave(&r, 10);
    e_leave(&r, 1);
    e_leave(&r, 1);
    e_tag(&r, TT_EV_STREAM_END, 0);
    tf_chunk(&tf, 1000, &r, 0);
    tf_close(&tf);

    tf_open(&tf, exp, 4242, "1.tts", TT_FILE_EVENTS);
    e_tag(&r, TT_EV_STREAM_END, 7);
    tf_chunk(&tf, 0, &r, 0);
    tf_close(&tf);

    tt_trace *t;
    tt_error err;
    if (!CHECK(tt_trace_open(exp_path(exp), &t, &err) == 0)) return;
    CHECK_U64(tt_trace_process_count(t), 1);
    CHECK_U64(tt_trace_problem_count(t), 0);
    const tt_process *p = tt_trace_process(t, 0);
    CHECK_U64(p->pid, 4242);
    CHECK_U64(p->ppid, 1);
    CHECK_STR(p->name, "/home/u/prog.py");
    CHECK(p->clock_kind == TT_CLOCK_MONOTONIC);
    CHECK_U64(p->ticks_per_second, 1000000000);
    CHECK(p->ended);
    CHECK_U64(p->end_time, 2000000);
    CHECK_U64(p->events, 77);
    CHECK_U64(p->waits, 3);
    CHECK_U64(p->wait_ns, 999);
    CHECK(p->defs_cut == NULL && p->defs_state == TT_STREAM_COMPLETE);
    CHECK_U64(p->start_realtime_ns, 5000000000);
    CHECK_U64(p->string_count, 14);
    CHECK_STR(p->strings[7], "mode");
    CHECK_STR(p->strings[14], "<undefined>");
    CHECK_U64(p->region_count, 4);
    CHECK_STR(p->regions[0].name, "__main__:a");
    CHECK_STR(p->regions[0].file, "/home/u/prog.py");
    CHECK_U64(p->regions[0].line, 10);
    CHECK(p->regions[0].kind == TT_REGION_PYTHON);
    CHECK_STR(p->regions[2].file, "");
    CHECK(p->regions[2].kind == TT_REGION_C);
    CHECK(p->regions[3].kind == TT_REGION_USER);
    CHECK_STR(p->regions[4].name, "<undefined>");
    CHECK_U64(p->thread_count, 2);
    CHECK_STR(p->threads[0].name, "MainThread");
    CHECK_U64(p->threads[0].native_tid, 4242);
    CHECK_STR(p->threads[1].name, "worker-1");
    CHECK(p->threads[1].defined && p->threads[1].present);
    CHECK_U64(p->attribute_count, 1);
    CHECK_STR(p->attributes[0].key, "python");
    CHECK_STR(p->attributes[0].value, "3.12");

    tt_cursor *c;
    if (CHECK(tt_cursor_open(t, p, 0, &c, &err) == 0)) {
        tt_event e[32];
        size_t n = 0;
        while (n < 32 && tt_cursor_next(c, &e[n])) {
            if (e[n].kind == TT_EV_PARAM_STRING) {
                CHECK(e[n].str_len == 4 && memcmp(e[n].str, "fast", 4) == 0);
            }
            n++;
        }
        CHECK_U64(n, 16);
        CHECK(tt_cursor_state(c) == TT_STREAM_COMPLETE);
        CHECK(tt_cursor_problem(c) == NULL);
        CHECK_U64(tt_cursor_events_read(c), 14);
        CHECK(e[0].kind == TT_EV_ENTER && e[0].time == 1005 && e[0].region == 0 && e[0].depth == 1);
        CHECK(e[1].kind == TT_EV_PARAM_INT && e[1].time == 1006 && e[1].name == 6 && e[1].int_value == INT64_MIN);
        CHECK(e[2].kind == TT_EV_PARAM_UINT && e[2].name == 6 && e[2].uint_value == UINT64_MAX);
        CHECK(e[3].kind == TT_EV_PARAM_STRING && e[3].name == 7);
        CHECK(e[4].kind == TT_EV_COUNTER && e[4].name == 13 && e[4].double_value == -2.5);
        CHECK(e[5].kind == TT_EV_MARK && e[5].name == 7 && e[5].time == 1010);
        /* The gap: region 0, open across it, left where it begins and entered again where it ends. */
        CHECK(e[6].kind == TT_EV_LEAVE && e[6].region == 0 && e[6].time == 1011 && e[6].depth == 0 && e[6].synthesized);
        CHECK(e[7].kind == TT_EV_RECORDING_OFF && e[7].time == 1011 && e[7].depth == 0);
        CHECK(e[8].kind == TT_EV_ENTER && e[8].region == 0 && e[8].time == 1111 && e[8].depth == 1 && e[8].resumed);
        CHECK(e[9].kind == TT_EV_RECORDING_ON && e[9].time == 1111 && e[9].depth == 1);
        CHECK(e[10].kind == TT_EV_ENTER && e[10].region == 3 && e[10].depth == 2 && !e[10].resumed);
        CHECK(e[11].kind == TT_EV_ENTER && e[11].region == 2 && e[11].depth == 3);
        CHECK(e[12].kind == TT_EV_LEAVE && e[12].region == 2 && e[12].time == 1123 && e[12].depth == 2);
        CHECK(e[13].kind == TT_EV_LEAVE && e[13].region == 3 && !e[13].synthesized);
        CHECK(e[14].kind == TT_EV_LEAVE && e[14].region == 0 && e[14].depth == 0);
        CHECK(e[15].kind == TT_EV_STREAM_END && e[15].time == 1125);
        tt_cursor_close(c);
    }
    if (CHECK(tt_cursor_open(t, p, 1, &c, &err) == 0)) {
        tt_event e;
        CHECK(tt_cursor_next(c, &e) == 1 && e.kind == TT_EV_STREAM_END && e.time == 7);
        CHECK(tt_cursor_next(c, &e) == 0);
        CHECK(tt_cursor_state(c) == TT_STREAM_COMPLETE);
        tt_cursor_close(c);
    }
    CHECK(tt_cursor_open(t, p, 2, &c, &err) == -1);
    CHECK_STR(err.message, "process 4242 has no stream 2");
    tt_trace_close(t);
}

/* 40 chunks, every other one compressed when the build has zstd. */
static void test_multi_chunk(void)
{
    static rec r;
    tfile tf;
    const char *exp = "multichunk";
    write_std_defs(exp, 7, 1, TICK_NS);
    tf_open(&tf, exp, 7, "0.tts", TT_FILE_EVENTS);
    for (int chunk = 0; chunk < 40; chunk++) {
        for (int i = 0; i < 50; i++) {
            e_enter(&r, 1, 0);
            e_enter(&r, 2, 1);
            e_leave(&r, 3);
            e_leave(&r, 4);
        }
        if (chunk == 39) e_tag(&r, TT_EV_STREAM_END, 0);
        tf_chunk_codec(&tf, (uint64_t)chunk * 500, &r, 0, chunk % 2);
    }
    int have_zstd = tf.zstd != NULL; /* the core's build says, not ours */
    tf_close(&tf);
    CHECK_U64(tf.compressed, have_zstd ? 20 : 0);

    static stream_read s;
    if (read_stream(exp, 0, 0, &s) != 0) return;
    CHECK(s.state == TT_STREAM_COMPLETE);
    CHECK_U64(s.n, 40 * 200 + 1);
    CHECK_U64(s.events_read, 40 * 200 + 1);
    CHECK(well_nested(&s));
    int times_ok = 1;
    static const uint64_t at[4] = {1, 3, 6, 10};
    for (size_t i = 0; i + 1 < s.n; i++) times_ok &= s.ev[i].time == (i / 4) * 10 + at[i % 4];
    CHECK(times_ok);
}

/* Two processes: one clock fitted through two syncs, one by its rate; the
 * epoch is the earlier start; times before it clamp to 0. */
static void test_clock_sync(void)
{
    static rec r;
    tfile tf;
    const char *exp = "clock";
    /* Process 20: ticks at 0.5 ns by the two syncs (its stated rate is wrong). */
    tf_open(&tf, exp, 20, "defs.tts", TT_FILE_DEFS);
    d_string(&r, 0, "p20");
    d_process(&r, 20, 1, 0, TT_CLOCK_TSC, 3000000000);
    d_sync(&r, 1000, 5000, 2000000000);
    d_sync(&r, 2000, 5400, 2000000400); /* not the last: ignored */
    d_sync(&r, 3000, 6000, 2000001000);
    d_end(&r, 5000, 0, 0, 0);
    tf_chunk(&tf, 0, &r, 0);
    tf_close(&tf);
    tf_open(&tf, exp, 20, "0.tts", TT_FILE_EVENTS);
    e_id(&r, TT_EV_MARK, 0, 0);    /* ticks 0: before the first sync */
    e_id(&r, TT_EV_MARK, 2000, 0); /* ticks 2000 */
    tf_chunk(&tf, 0, &r, 0);
    tf_close(&tf);

    /* Process 10 starts 1 us earlier (the epoch): 2 ticks per ns by its rate. */
    tf_open(&tf, exp, 10, "defs.tts", TT_FILE_DEFS);
    d_string(&r, 0, "p10");
    d_process(&r, 10, 1, 0, TT_CLOCK_TSC, 2000000000);
    d_sync(&r, 100, 77, 1999999000);
    tf_chunk(&tf, 0, &r, 0);
    tf_close(&tf);
    tf_open(&tf, exp, 10, "0.tts", TT_FILE_EVENTS);
    e_id(&r, TT_EV_MARK, 0, 0);    /* 50 ns before the epoch: 0 */
    e_id(&r, TT_EV_MARK, 4100, 0); /* 2000 ns after */
    tf_chunk(&tf, 0, &r, 0);
    tf_close(&tf);

    tt_trace *t;
    tt_error err;
    if (!CHECK(tt_trace_open(exp_path(exp), &t, &err) == 0)) return;
    CHECK_U64(tt_trace_process_count(t), 2);
    const tt_process *p10 = tt_trace_process(t, 0), *p20 = tt_trace_process(t, 1);
    CHECK_U64(p10->pid, 10);
    CHECK_U64(p20->pid, 20);
    CHECK(!p10->ended && p20->ended);
    CHECK_U64(p20->end_time, 1000 + 2000);
    CHECK_U64(tt_process_time(p20, 1000), 1000);
    CHECK_U64(tt_process_time(p20, 0), 500);
    CHECK_U64(tt_process_time(p10, 0), 0);
    tt_trace_close(t);

    static stream_read s;
    if (read_stream(exp, 1, 0, &s) == 0) {
        CHECK(s.n == 2 && s.ev[0].time == 500 && s.ev[1].time == 1500);
        CHECK(s.state == TT_STREAM_CUT);
    }
    if (read_stream(exp, 0, 0, &s) == 0) CHECK(s.n == 2 && s.ev[0].time == 0 && s.ev[1].time == 2000);
}

/* Writes a 3-chunk stream: a, b | leave, b | leave, leave, end. */
static void write_three_chunks(const char *exp, tfile *tf)
{
    static rec r;
    write_std_defs(exp, 5, 0, TICK_NS);
    tf_open(tf, exp, 5, "0.tts", TT_FILE_EVENTS);
    e_enter(&r, 0, 0);
    e_enter(&r, 10, 1);
    tf_chunk(tf, 100, &r, 0);
    e_leave(&r, 10);
    e_enter(&r, 10, 1);
    tf_chunk(tf, 110, &r, 0);
    e_leave(&r, 10);
    e_leave(&r, 10);
    e_tag(&r, TT_EV_STREAM_END, 0);
    tf_chunk(tf, 130, &r, 0);
    tf_close(tf);
}

static void test_truncation(void)
{
    const char *exp = "truncated";
    tfile tf;
    static stream_read s;
    write_three_chunks(exp, &tf);
    if (read_stream(exp, 0, 0, &s) != 0) return;
    CHECK(s.state == TT_STREAM_COMPLETE && s.n == 7 && s.synthesized == 0);

    long last = tf.offsets[2];
    int all_ok = 1;
    for (long size = tf.size - 1; size >= last; size--) {
        truncate_file(exp, 5, "0.tts", size);
        if (read_stream(exp, 0, 0, &s) != 0) {
            all_ok = 0;
            continue;
        }
        char expected[128];
        const char *why = size == last                         ? "no end-of-stream record"
                          : size < last + TT_CHUNK_HEADER_SIZE ? "truncated chunk header"
                                                               : "truncated chunk";
        snprintf(expected, sizeof expected,
                 "process 5 thread \"MainThread\" (stream 0): cut after 2 chunks at byte %ld (%s)", last, why);
        int ok = s.state == TT_STREAM_CUT && s.n == 6 && s.events_read == 4 && s.synthesized == 2 && well_nested(&s) &&
                 s.ev[4].time == 130 && s.ev[5].time == 130 && s.ev[4].region == 1 && s.ev[5].region == 0 &&
                 strcmp(s.problem, expected) == 0;
        if (!ok) fprintf(stderr, "    cut at %ld: state %d, %zu events, \"%s\"\n", size, s.state, s.n, s.problem);
        all_ok &= ok;
    }
    CHECK(all_ok);

    /* Cut inside the first chunk, and inside the file header. */
    truncate_file(exp, 5, "0.tts", tf.offsets[0] + TT_CHUNK_HEADER_SIZE + 3);
    if (read_stream(exp, 0, 0, &s) == 0) {
        CHECK(s.state == TT_STREAM_CUT && s.n == 0);
        CHECK_CONTAINS(s.problem, "cut after 0 chunks at byte 16 (truncated chunk)");
    }
    truncate_file(exp, 5, "0.tts", 5);
    if (read_stream(exp, 0, 0, &s) == 0) {
        CHECK(s.state == TT_STREAM_CUT && s.n == 0);
        CHECK_CONTAINS(s.problem, "cut after 0 chunks at byte 0 (truncated file header)");
    }
}

static void test_damage(void)
{
    const char *exp = "damaged";
    tfile tf;
    static stream_read s;
    write_three_chunks(exp, &tf);
    long middle = tf.offsets[1], end = tf.offsets[2];

    /* A byte of the middle chunk's payload: a checksum mismatch there. */
    flip_byte(exp, 5, "0.tts", end - 1);
    if (read_stream(exp, 0, 0, &s) == 0) {
        char expected[128];
        snprintf(expected, sizeof expected,
                 "process 5 thread \"MainThread\" (stream 0): corrupt: checksum mismatch in chunk 1 at byte %ld",
                 middle);
        CHECK(s.state == TT_STREAM_CORRUPT);
        CHECK_STR(s.problem, expected);
        CHECK(s.n == 4 && s.events_read == 2 && s.synthesized == 2 && well_nested(&s));
    }
    flip_byte(exp, 5, "0.tts", end - 1);

    /* Any byte of it: never read as intact, never more than the first chunk. */
    int all_ok = 1;
    for (long at = middle; at < end; at++) {
        flip_byte(exp, 5, "0.tts", at);
        int ok = read_stream(exp, 0, 0, &s) == 0 && s.state != TT_STREAM_COMPLETE && s.events_read == 2 &&
                 well_nested(&s);
        /* Only a bad size field can look like a cut: the chunk seems to run
         * past the end, or to be followed by nothing intact. */
        if (at >= middle + TT_CHUNK_HEADER_SIZE || at < middle + 16 || at >= middle + 24)
            ok &= s.state == TT_STREAM_CORRUPT;
        if (!ok) fprintf(stderr, "    flip at %ld: state %d, %zu events, \"%s\"\n", at, s.state, s.n, s.problem);
        all_ok &= ok;
        flip_byte(exp, 5, "0.tts", at);
    }
    CHECK(all_ok);

    /* Damage in a last chunk that ends where the file does is no unfinished
     * write, which leaves the file short of the chunk's end or a longer
     * PARTIAL snapshot's tail behind it. */
    flip_byte(exp, 5, "0.tts", tf.size - 1);
    if (read_stream(exp, 0, 0, &s) == 0) {
        char expected[160];
        snprintf(expected, sizeof expected, "corrupt: checksum mismatch in chunk 2 at byte %ld", end);
        CHECK(s.state == TT_STREAM_CORRUPT);
        CHECK_CONTAINS(s.problem, expected);
        CHECK(s.events_read == 4);
    }
    /* With the tail of a longer PARTIAL snapshot behind it, it may be one. */
    truncate_file(exp, 5, "0.tts", tf.size + 8);
    if (read_stream(exp, 0, 0, &s) == 0) {
        char expected[160];
        snprintf(expected, sizeof expected, "cut after 2 chunks at byte %ld (unfinished last chunk: checksum mismatch)",
                 end);
        CHECK(s.state == TT_STREAM_CUT);
        CHECK_CONTAINS(s.problem, expected);
        CHECK(s.events_read == 4);
    }
    truncate_file(exp, 5, "0.tts", tf.size);
    flip_byte(exp, 5, "0.tts", tf.size - 1);

    /* A bad file header. */
    flip_byte(exp, 5, "0.tts", 0);
    if (read_stream(exp, 0, 0, &s) == 0) {
        CHECK(s.state != TT_STREAM_COMPLETE && s.n == 0);
        CHECK_CONTAINS(s.problem, "(stream 0): corrupt: not a tracetop trace file at byte 0");
    }
}

/* A stream that cannot be read: its file missing from a process that ended
 * (every stream of one wrote its file), or no regular file (a FIFO, which
 * would block its reader). Left out, and said in one line for the process. */
static void test_lost_streams(void)
{
    static rec r;
    tfile tf;
    const char *exp = "lost";
    write_std_defs(exp, 6, 1, TICK_NS);
    tt_trace *t;
    tt_error err;
    if (CHECK(tt_trace_open(exp_path(exp), &t, &err) == 0)) {
        int corrupt = -1;
        CHECK_U64(tt_trace_problem_count(t), 1);
        CHECK_STR(tt_trace_problem(t, 0, &corrupt),
                  "process 6: 1 of 1 thread lost, their events unread: thread \"MainThread\" (stream 0): 0.tts is "
                  "missing");
        CHECK(corrupt == 1 && !tt_trace_process(t, 0)->threads[0].present);
        tt_trace_close(t);
    }

    /* A process that did not end may have died before a thread's first write. */
    write_std_defs(exp, 6, 0, TICK_NS);
    if (CHECK(tt_trace_open(exp_path(exp), &t, &err) == 0)) {
        CHECK_U64(tt_trace_problem_count(t), 0);
        tt_trace_close(t);
    }

    /* A FIFO where stream 1 would be, beside stream 0's file: only stream 1 is lost. */
    write_std_defs(exp, 6, 1, TICK_NS);
    tf_open(&tf, exp, 6, "0.tts", TT_FILE_EVENTS);
    e_tag(&r, TT_EV_STREAM_END, 0);
    tf_chunk(&tf, 0, &r, 0);
    tf_close(&tf);
    char path[512];
    path_of(path, sizeof path, exp, 6, "1.tts");
    CHECK(mkfifo(path, 0600) == 0);
    if (CHECK(tt_trace_open(exp_path(exp), &t, &err) == 0)) {
        int corrupt = -1;
        const tt_process *p = tt_trace_process(t, 0);
        CHECK_U64(tt_trace_problem_count(t), 1);
        CHECK_STR(tt_trace_problem(t, 0, &corrupt),
                  "process 6: 1 of 2 threads lost, their events unread: thread \"stream 1\" (stream 1): 1.tts is not "
                  "a regular file");
        CHECK(corrupt == 1 && p->thread_count == 2 && p->threads[0].present && !p->threads[1].present);
        CHECK(tt_trace_whole(t));
        CHECK_U64(tt_trace_keep_thread(t, "MainThread"), 1);
        CHECK(!tt_trace_whole(t)); /* what is not read of it is not lost */
        tt_trace_close(t);
    }
}

static void test_seq_gap(void)
{
    static rec r;
    static stream_read s;
    tfile tf;
    const char *exp = "gap";
    write_std_defs(exp, 5, 0, TICK_NS);
    tf_open(&tf, exp, 5, "0.tts", TT_FILE_EVENTS);
    e_enter(&r, 0, 0);
    tf_chunk(&tf, 0, &r, 0);
    e_enter(&r, 1, 1);
    tf_chunk(&tf, 0, &r, 0);
    tf.seq++; /* chunk 2 lost */
    e_leave(&r, 1);
    tf_chunk(&tf, 0, &r, 0);
    tf_close(&tf);
    if (read_stream(exp, 0, 0, &s) != 0) return;
    char expected[160];
    snprintf(expected, sizeof expected,
             "process 5 thread \"MainThread\" (stream 0): corrupt: chunk sequence gap (found chunk 3) in chunk 2 at "
             "byte %ld",
             tf.offsets[3]);
    CHECK(s.state == TT_STREAM_CORRUPT);
    CHECK_STR(s.problem, expected);
    CHECK(s.n == 4 && s.synthesized == 2);
}

static void test_open_errors(void)
{
    tt_trace *t = (tt_trace *)&t;
    tt_error err;
    char expected[2048], dir[256];

    snprintf(dir, sizeof dir, "%s/nonexistent", root);
    CHECK(tt_trace_open(dir, &t, &err) == -1 && t == NULL);
    snprintf(expected, sizeof expected, "%s: No such file or directory", dir);
    CHECK_STR(err.message, expected);

    snprintf(dir, sizeof dir, "%s/plain", root);
    mkdir(dir, 0777);
    CHECK(tt_trace_open(dir, &t, &err) == -1);
    snprintf(expected, sizeof expected, "%s: not a tracetop experiment (no trace directory)", dir);
    CHECK_STR(err.message, expected);

    char path[700];
    snprintf(path, sizeof path, "%s/MANIFEST.md", dir);
    fclose(fopen(path, "w"));
    CHECK(tt_trace_open(dir, &t, &err) == -1);
    snprintf(expected, sizeof expected, "no trace in %s (missing %s/trace)", dir, dir);
    CHECK_STR(err.message, expected);

    snprintf(path, sizeof path, "%s/trace", dir);
    mkdir(path, 0777);
    CHECK(tt_trace_open(dir, &t, &err) == -1);
    snprintf(expected, sizeof expected, "no trace in %s (%s/trace holds no process)", dir, dir);
    CHECK_STR(err.message, expected);

    snprintf(path, sizeof path, "%s/trace/77", dir);
    mkdir(path, 0777);
    CHECK(tt_trace_open(dir, &t, &err) == -1);
    snprintf(expected, sizeof expected,
             "no readable trace in %s: process 77 left out: cannot open %s/trace/77/defs.tts: No such file or "
             "directory",
             dir, dir);
    CHECK_STR(err.message, expected);

    /* Names that are not process directories are passed over. */
    snprintf(path, sizeof path, "%s/trace/077", dir);
    mkdir(path, 0777);
    snprintf(path, sizeof path, "%s/trace/77.x", dir);
    mkdir(path, 0777);

    /* A readable process next to it opens, and the other is a problem. */
    write_std_defs("plain", 78, 0, TICK_NS);
    if (CHECK(tt_trace_open(dir, &t, &err) == 0)) {
        int corrupt = -1;
        CHECK_U64(tt_trace_process_count(t), 1);
        CHECK_U64(tt_trace_problem_count(t), 1);
        CHECK_CONTAINS(tt_trace_problem(t, 0, &corrupt), "process 77 left out: cannot open");
        CHECK(corrupt == 0);
        tt_trace_close(t);
    }

    /* A later session of a pid writes to <pid>.<k>: another process, by its start. */
    static rec r;
    tfile tf;
    tf_open_in(&tf, "plain", "78.1", "defs.tts", TT_FILE_DEFS);
    std_defs(&r, 78, 999, TICK_NS);
    tf_chunk(&tf, 0, &r, 0);
    tf_close(&tf);
    if (CHECK(tt_trace_open(dir, &t, &err) == 0)) {
        CHECK_U64(tt_trace_process_count(t), 2);
        CHECK_CONTAINS(tt_trace_process(t, 0)->dir, "/trace/78.1");
        CHECK_U64(tt_trace_process(t, 0)->start_realtime_ns, 999);
        CHECK_CONTAINS(tt_trace_process(t, 1)->dir, "/trace/78");
        tt_trace_close(t);
    }
}

static void test_partial(void)
{
    static rec r;
    static stream_read s;
    tfile tf;
    const char *exp = "partial";
    static const uint8_t stale[] = {0x12, 0x99, 0x00, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49,
                                    0x12, 0x99, 0x00, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49,
                                    0x12, 0x99, 0x00, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49};
    write_std_defs(exp, 5, 0, TICK_NS);

    /* Stale bytes after a partial chunk: the end of what was written. */
    tf_open(&tf, exp, 5, "0.tts", TT_FILE_EVENTS);
    e_enter(&r, 0, 0);
    tf_chunk(&tf, 0, &r, 0);
    e_enter(&r, 5, 1);
    e_leave(&r, 5);
    tf_chunk(&tf, 0, &r, TT_CHUNK_PARTIAL);
    tf_raw(&tf, stale, sizeof stale);
    tf_close(&tf);
    if (read_stream(exp, 0, 0, &s) == 0) {
        char expected[160];
        snprintf(expected, sizeof expected,
                 "process 5 thread \"MainThread\" (stream 0): cut after 2 chunks at byte %ld (stale bytes after a "
                 "partial chunk)",
                 tf.offsets[1] + TT_CHUNK_HEADER_SIZE + 5);
        CHECK(s.state == TT_STREAM_CUT);
        CHECK_STR(s.problem, expected);
        CHECK(s.n == 4 && s.synthesized == 1 && s.ev[3].time == 10 && well_nested(&s));
    }

    /* A valid chunk after a partial one is read on. */
    tf_open(&tf, exp, 5, "0.tts", TT_FILE_EVENTS);
    e_enter(&r, 0, 0);
    tf_chunk(&tf, 0, &r, TT_CHUNK_PARTIAL);
    e_leave(&r, 5);
    e_tag(&r, TT_EV_STREAM_END, 0);
    tf_chunk(&tf, 0, &r, 0);
    tf_close(&tf);
    if (read_stream(exp, 0, 0, &s) == 0) CHECK(s.state == TT_STREAM_COMPLETE && s.n == 3);

    /* The same bytes after a complete chunk: the tail of a longer partial
     * snapshot the full chunk was written over, so a cut too. */
    tf_open(&tf, exp, 5, "0.tts", TT_FILE_EVENTS);
    e_enter(&r, 0, 0);
    tf_chunk(&tf, 0, &r, 0);
    tf_raw(&tf, stale, sizeof stale);
    tf_close(&tf);
    if (read_stream(exp, 0, 0, &s) == 0) {
        CHECK(s.state == TT_STREAM_CUT);
        CHECK_CONTAINS(s.problem, "cut after 1 chunk at byte 51 (unfinished last chunk: bad chunk magic)");
        CHECK(s.n == 2 && s.synthesized == 1);
    }

    /* But more of them than one unfinished chunk could leave is damage. */
    tf_open(&tf, exp, 5, "0.tts", TT_FILE_EVENTS);
    e_enter(&r, 0, 0);
    tf_chunk(&tf, 0, &r, 0);
    for (size_t i = 0; i <= TT_CHUNK_PAYLOAD_SIZE / sizeof stale + 1; i++) tf_raw(&tf, stale, sizeof stale);
    tf_close(&tf);
    if (read_stream(exp, 0, 0, &s) == 0) {
        CHECK(s.state == TT_STREAM_CORRUPT);
        CHECK_CONTAINS(s.problem, "corrupt: bad chunk magic in chunk 1 at byte 51");
    }
}

static void test_bad_records(void)
{
    static rec r;
    static stream_read s;
    tfile tf;
    const char *exp = "records";
    write_std_defs(exp, 5, 1, TICK_NS);

    /* LEAVE with nothing open. */
    tf_open(&tf, exp, 5, "0.tts", TT_FILE_EVENTS);
    e_enter(&r, 0, 0);
    e_leave(&r, 1);
    e_leave(&r, 1);
    e_enter(&r, 1, 0);
    tf_chunk(&tf, 0, &r, 0);
    tf_close(&tf);
    if (read_stream(exp, 0, 0, &s) == 0) {
        CHECK(s.state == TT_STREAM_CORRUPT);
        CHECK_STR(s.problem,
                  "process 5 thread \"MainThread\" (stream 0): corrupt: LEAVE without an open region in chunk 0 at "
                  "byte 16");
        CHECK(s.n == 2 && s.synthesized == 0);
    }

    /* An unknown tag, and a record cut by the end of its chunk. */
    tf_open(&tf, exp, 5, "0.tts", TT_FILE_EVENTS);
    e_enter(&r, 0, 0);
    put_u8(&r, 0x7f);
    tf_chunk(&tf, 0, &r, 0);
    tf_close(&tf);
    if (read_stream(exp, 0, 0, &s) == 0) {
        CHECK(s.state == TT_STREAM_CORRUPT && s.n == 2 && s.synthesized == 1);
        CHECK_CONTAINS(s.problem, "corrupt: unknown event record in chunk 0 at byte 16");
    }
    tf_open(&tf, exp, 5, "0.tts", TT_FILE_EVENTS);
    e_enter(&r, 0, 0);
    put_u8(&r, TT_EV_ENTER);
    put_v(&r, 1);
    tf_chunk(&tf, 0, &r, 0);
    tf_close(&tf);
    if (read_stream(exp, 0, 0, &s) == 0)
        CHECK_CONTAINS(s.problem, "corrupt: event record runs past the end of its chunk in chunk 0");

    /* The definitions are complete (PROCESS_END): an undefined region is damage. */
    tf_open(&tf, exp, 5, "0.tts", TT_FILE_EVENTS);
    e_enter(&r, 0, 0);
    e_enter(&r, 1, 99);
    tf_chunk(&tf, 0, &r, 0);
    tf_close(&tf);
    if (read_stream(exp, 0, 0, &s) == 0) {
        CHECK(s.state == TT_STREAM_CORRUPT && s.n == 2);
        CHECK_CONTAINS(s.problem, "corrupt: undefined region in chunk 0");
    }

    /* An MPI message on a communicator the complete definitions do not have. */
    tf_open(&tf, exp, 5, "0.tts", TT_FILE_EVENTS);
    e_enter(&r, 0, 0);
    e_tag(&r, TT_EV_MPI_SEND, 1);
    put_v(&r, 1); /* receiver */
    put_v(&r, 7); /* tag */
    put_v(&r, 0); /* communicator */
    put_v(&r, 8); /* bytes */
    tf_chunk(&tf, 0, &r, 0);
    tf_close(&tf);
    if (read_stream(exp, 0, 0, &s) == 0) {
        CHECK(s.state == TT_STREAM_CORRUPT && s.n == 2);
        CHECK_CONTAINS(s.problem, "corrupt: undefined communicator in chunk 0");
    }

    /* Nothing after STREAM_END: in its chunk, or in the file. */
    tf_open(&tf, exp, 5, "0.tts", TT_FILE_EVENTS);
    e_enter(&r, 0, 0);
    e_tag(&r, TT_EV_STREAM_END, 1);
    e_leave(&r, 1);
    tf_chunk(&tf, 0, &r, 0);
    tf_close(&tf);
    if (read_stream(exp, 0, 0, &s) == 0) {
        CHECK(s.state == TT_STREAM_CORRUPT);
        CHECK_CONTAINS(s.problem, "corrupt: data after the end-of-stream record in chunk 0");
        /* Regions open at STREAM_END are closed before it. */
        CHECK(s.n == 3 && s.ev[1].synthesized && s.ev[2].kind == TT_EV_STREAM_END && well_nested(&s));
    }
    tf_open(&tf, exp, 5, "0.tts", TT_FILE_EVENTS);
    e_tag(&r, TT_EV_STREAM_END, 1);
    tf_chunk(&tf, 0, &r, 0);
    e_tag(&r, TT_EV_STREAM_END, 1);
    tf_chunk(&tf, 0, &r, 0);
    tf_close(&tf);
    if (read_stream(exp, 0, 0, &s) == 0)
        CHECK_CONTAINS(s.problem, "corrupt: data after the end-of-stream record in chunk 0");

    /* All chunks fine, but no STREAM_END. */
    tf_open(&tf, exp, 5, "0.tts", TT_FILE_EVENTS);
    e_enter(&r, 0, 0);
    tf_chunk(&tf, 0, &r, 0);
    tf_close(&tf);
    if (read_stream(exp, 0, 0, &s) == 0) {
        CHECK(s.state == TT_STREAM_CUT && s.n == 2 && s.synthesized == 1);
        char expected[128];
        snprintf(expected, sizeof expected,
                 "process 5 thread \"MainThread\" (stream 0): cut after 1 chunk at byte %ld (no end-of-stream record)",
                 tf.size);
        CHECK_STR(s.problem, expected);
    }
}

/* Definitions cut by a crash: what was written is used, the rest stands in. */
static void test_defs_cut(void)
{
    static rec r;
    static stream_read s;
    tfile tf, defs;
    const char *exp = "defscut";
    tf_open(&defs, exp, 9, "defs.tts", TT_FILE_DEFS);
    std_defs(&r, 9, 1000, TICK_NS);
    tf_chunk(&defs, 0, &r, 0);
    d_string(&r, 8, "worker");
    d_thread(&r, 1, 8, 1);
    tf_chunk(&defs, 0, &r, 0);
    tf_close(&defs);
    tf_open(&tf, exp, 9, "0.tts", TT_FILE_EVENTS);
    e_enter(&r, 0, 0);
    e_enter(&r, 1, 3); /* region 3: its definition was lost */
    e_id(&r, TT_EV_MARK, 1, 50);
    tf_chunk(&tf, 0, &r, 0);
    tf_close(&tf);
    tf_open(&tf, exp, 9, "1.tts", TT_FILE_EVENTS);
    tf_close(&tf);
    truncate_file(exp, 9, "defs.tts", defs.offsets[1] + 3);

    tt_trace *t;
    tt_error err;
    if (!CHECK(tt_trace_open(exp_path(exp), &t, &err) == 0)) return;
    const tt_process *p = tt_trace_process(t, 0);
    char expected[128];
    snprintf(expected, sizeof expected, "process 9: definitions cut after 1 chunk at byte %ld (truncated chunk header)",
             defs.offsets[1]);
    CHECK_STR(p->defs_cut, expected);
    CHECK(p->defs_state == TT_STREAM_CUT);
    CHECK_U64(p->thread_count, 2);
    CHECK(!p->threads[1].defined && p->threads[1].present);
    CHECK_STR(p->threads[1].name, "stream 1");
    tt_trace_close(t);

    if (read_stream(exp, 0, 0, &s) == 0) {
        CHECK(s.state == TT_STREAM_CUT && s.n == 5);
        CHECK(s.ev[1].region == 3); /* region_count: the placeholder */
        CHECK(s.ev[2].kind == TT_EV_MARK && s.ev[2].name == 8);
    }

    /* Cut anywhere: an open that fails says why; one that works reads on. */
    char path[512];
    path_of(path, sizeof path, exp, 9, "defs.tts");
    tf_open(&defs, exp, 9, "defs.tts", TT_FILE_DEFS);
    std_defs(&r, 9, 1000, TICK_NS);
    tf_chunk(&defs, 0, &r, 0);
    d_end(&r, 10, 1, 0, 0);
    tf_chunk(&defs, 0, &r, 0);
    tf_close(&defs);
    int all_ok = 1;
    for (long size = defs.size; size >= 0; size--) {
        truncate_file(exp, 9, "defs.tts", size);
        int opened = tt_trace_open(exp_path(exp), &t, &err) == 0;
        if (opened) {
            const tt_process *q = tt_trace_process(t, 0);
            /* Cut at a chunk boundary, the definitions look intact (no PROCESS_END tells). */
            all_ok &= size >= defs.offsets[1] &&
                      (q->defs_cut == NULL) == (size == defs.size || size == defs.offsets[1]);
            tt_trace_close(t);
            all_ok &= read_stream(exp, 0, 0, &s) == 0 && well_nested(&s);
        } else {
            all_ok &= size < defs.offsets[1] && strstr(err.message, "no readable trace in") != NULL &&
                      strstr(err.message, "process 9 left out: no PROCESS record in its definitions") != NULL;
        }
    }
    CHECK(all_ok);

    /* Damage in the definitions: corrupt, and noted as such. */
    tf_open(&defs, exp, 9, "defs.tts", TT_FILE_DEFS);
    std_defs(&r, 9, 1000, TICK_NS);
    tf_chunk(&defs, 0, &r, 0);
    d_string(&r, 8, "worker");
    tf_chunk(&defs, 0, &r, 0);
    d_end(&r, 10, 1, 0, 0);
    tf_chunk(&defs, 0, &r, 0);
    tf_close(&defs);
    flip_byte(exp, 9, "defs.tts", defs.offsets[2] - 1);
    if (CHECK(tt_trace_open(exp_path(exp), &t, &err) == 0)) {
        const tt_process *q = tt_trace_process(t, 0);
        CHECK(q->defs_state == TT_STREAM_CORRUPT && !q->ended);
        CHECK_CONTAINS(q->defs_cut, "process 9: definitions corrupt: checksum mismatch in chunk 1 at byte");
        tt_profile *prof;
        if (CHECK(tt_profile_build(t, &prof, &err) == 0)) {
            CHECK(prof->corrupt);
            CHECK_U64(prof->problem_count, 3); /* definitions, and both streams cut */
            tt_profile_free(prof);
        }
        tt_trace_close(t);
    }

    /* Ids out of order in the definitions are damage. */
    tf_open(&defs, exp, 9, "defs.tts", TT_FILE_DEFS);
    std_defs(&r, 9, 1000, TICK_NS);
    d_string(&r, 10, "skipped 8 and 9");
    tf_chunk(&defs, 0, &r, 0);
    tf_close(&defs);
    if (CHECK(tt_trace_open(exp_path(exp), &t, &err) == 0)) {
        CHECK_CONTAINS(tt_trace_process(t, 0)->defs_cut,
                       "process 9: definitions corrupt: string 10 defined out of order in chunk 0 at byte 16");
        tt_trace_close(t);
    }
}

static const tt_profile_region *find_region(const tt_profile *p, const char *name)
{
    for (size_t i = 0; i < p->region_count; i++)
        if (strcmp(p->regions[i].name, name) == 0) return &p->regions[i];
    return NULL;
}

static void test_profile(void)
{
    enum { US = 1000 };
    static rec r;
    tfile tf;
    const char *exp = "profile";
    write_std_defs(exp, 3, 1, TICK_US);
    /* Ticks are us. Thread 0: a 0..100 { b 10..60 { a 20..50 } len 70..80 }; then a a a recursion. */
    tf_open(&tf, exp, 3, "0.tts", TT_FILE_EVENTS);
    e_enter(&r, 0, 0);
    e_enter(&r, 10, 1);
    e_enter(&r, 10, 0);
    e_leave(&r, 30);
    e_leave(&r, 10);
    e_enter(&r, 10, 2);
    e_leave(&r, 10);
    e_leave(&r, 20);
    tf_chunk(&tf, 0, &r, 0);
    e_enter(&r, 0, 0); /* 1000 */
    e_enter(&r, 10, 0);
    e_enter(&r, 10, 0);
    e_leave(&r, 10);
    e_leave(&r, 10);
    e_leave(&r, 10); /* 1050 */
    e_tag(&r, TT_EV_STREAM_END, 0);
    tf_chunk(&tf, 1000, &r, 0);
    tf_close(&tf);
    /* Thread 1 of another process with the same region names: merged. Cut. */
    write_std_defs(exp, 4, 0, TICK_US);
    tf_open(&tf, exp, 4, "0.tts", TT_FILE_EVENTS);
    e_enter(&r, 0, 1);
    e_enter(&r, 5, 2);
    e_leave(&r, 5);
    e_enter(&r, 10, 2);
    tf_chunk(&tf, 0, &r, 0);
    tf_close(&tf);

    tt_trace *t;
    tt_profile *p;
    tt_error err;
    if (!CHECK(tt_trace_open(exp_path(exp), &t, &err) == 0)) return;
    if (!CHECK(tt_profile_build(t, &p, &err) == 0)) {
        tt_trace_close(t);
        return;
    }
    CHECK_U64(p->thread_count, 2);
    CHECK_U64(p->region_count, 3);
    CHECK_U64(p->events, 15 + 4);
    CHECK_U64(p->total_ns, (1050 + 20) * US);
    CHECK(!p->corrupt);
    CHECK_U64(p->problem_count, 1);
    char expected[128];
    snprintf(expected, sizeof expected,
             "process 4 thread \"MainThread\" (stream 0): cut after 1 chunk at byte %ld (no end-of-stream record)",
             tf.size);
    CHECK_STR(p->problems[0], expected);

    const tt_profile_region *a = find_region(p, "__main__:a"), *b = find_region(p, "__main__:b"),
                            *len = find_region(p, "builtins:len");
    if (CHECK(a && b && len)) {
        /* a: outer 100 (40 own), inner 30; then 50 for three nested, each 10..20 own. */
        CHECK_U64(a->visits, 5);
        CHECK_U64(a->inclusive_ns, (100 + 50) * US);
        CHECK_U64(a->exclusive_ns, (40 + 30 + 50) * US);
        CHECK_STR(a->file, "/home/u/prog.py");
        CHECK_U64(a->line, 10);
        CHECK_U64(b->visits, 2);
        CHECK_U64(b->inclusive_ns, (50 + 20) * US);
        CHECK_U64(b->exclusive_ns, (20 + 15) * US);
        /* b in thread 1 is cut at 20 with 5 in len; len twice there: 5, then
         * open from 20 to the cut at 20. */
        CHECK_U64(len->visits, 3);
        CHECK_U64(len->inclusive_ns, (10 + 5) * US);
        CHECK_U64(len->exclusive_ns, (10 + 5) * US);
        CHECK(len->kind == TT_REGION_C);
    }

    const tt_profile_thread *th = &p->threads[0];
    CHECK(th->process == 0 && th->stream == 0);
    CHECK_U64(th->begin_ns, 0);
    CHECK_U64(th->end_ns, 1050 * US);
    CHECK_U64(th->events, 15);
    CHECK_U64(th->node_count, 6);
    CHECK(th->top_region != SIZE_MAX && strcmp(p->regions[th->top_region].name, "__main__:a") == 0);
    if (th->node_count == 6) {
        const tt_profile_node *n = th->nodes;
        /* 0 a, 1 a/b, 2 a/b/a, 3 a/len, 4 a/a, 5 a/a/a */
        CHECK(n[0].parent == UINT32_MAX && n[0].region == 0 && n[0].first_child == 1);
        CHECK(n[1].parent == 0 && n[1].region == 1 && n[1].first_child == 2 && n[1].next_sibling == 3);
        CHECK(n[2].parent == 1 && n[2].region == 0 && n[2].first_child == UINT32_MAX);
        CHECK(n[3].parent == 0 && n[3].region == 2 && n[3].next_sibling == 4);
        CHECK(n[4].parent == 0 && n[4].region == 0 && n[4].first_child == 5 && n[4].next_sibling == UINT32_MAX);
        CHECK(n[5].parent == 4 && n[5].region == 0);
        CHECK(n[0].visits == 2 && n[0].inclusive_ns == 150 * US && n[0].exclusive_ns == 60 * US);
        CHECK(n[1].visits == 1 && n[1].inclusive_ns == 50 * US && n[1].exclusive_ns == 20 * US);
        CHECK(n[2].visits == 1 && n[2].inclusive_ns == 30 * US && n[2].exclusive_ns == 30 * US);
        CHECK(n[3].visits == 1 && n[3].inclusive_ns == 10 * US && n[3].exclusive_ns == 10 * US);
        CHECK(n[4].visits == 1 && n[4].inclusive_ns == 30 * US && n[4].exclusive_ns == 20 * US);
        CHECK(n[5].visits == 1 && n[5].inclusive_ns == 10 * US && n[5].exclusive_ns == 10 * US);
    }
    th = &p->threads[1];
    CHECK(th->process == 1 && th->begin_ns == 0 && th->end_ns == 20 * US && th->events == 4);

    char *text = tt_profile_render_text(p, 0);
    if (CHECK(text != NULL)) {
        CHECK_CONTAINS(text, "tracetop summary \xe2\x80\x94 2 processes, 2 threads, 19 events, 1.070 ms measured\n");
        CHECK_CONTAINS(text, "process 3 \"/home/u/prog.py\" (ended normally)\n");
        CHECK_CONTAINS(text, "process 4 \"/home/u/prog.py\" (did not end normally)\n");
        CHECK_CONTAINS(text, "\nTop regions by exclusive time\n"
                             "   excl ms   excl %   incl ms  visits  region        location\n"
                             "     0.120    11.2%     0.150       5  __main__:a    prog.py:10\n"
                             "     0.035     3.3%     0.070       2  __main__:b    prog.py:20\n"
                             "     0.015     1.4%     0.015       3  builtins:len  -\n");
        CHECK_CONTAINS(text, "\nTop regions by inclusive time\n"
                             "   incl ms   incl %   excl ms  visits  region        location\n"
                             "     0.150    14.0%     0.120       5  __main__:a    prog.py:10\n");
        CHECK_CONTAINS(text, "Threads\n"
                             "  process  thread      events   span ms    cpu ms   cpu%   GIL%  top region (excl)\n"
                             "  3        MainThread      15     1.050         -      -      -  __main__:a\n"
                             "  4        MainThread       4     0.020         -      -      -  __main__:b\n");
        free(text);
    }
    text = tt_profile_render_text(p, 1);
    if (CHECK(text != NULL)) {
        /* One row per table; of the threads, the longest. */
        CHECK_CONTAINS(text, "   0.120    11.2%     0.150       5  __main__:a  prog.py:10\n\nTop regions by inclusive");
        CHECK_CONTAINS(text, "\n  3        MainThread      15     1.050         -      -      -  __main__:a\n  (1 more "
                             "threads not shown)\n");
        free(text);
    }
    tt_profile_free(p);
    tt_trace_close(t);
}

/* ---- random streams against a model ----
 *
 * The cursor decodes most ENTER and LEAVE records on a fast path and the
 * rest on a general one; these streams mix both (fields of every length,
 * undefined regions, chunks that start back in time, times before the epoch
 * and past the end of the time range) and check every event against what
 * the reader's contract says it must be. */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rnd(uint64_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state % n;
}

/* A delta of 1 to 5 varint bytes, mostly of 2 as a TSC makes them. */
static uint64_t rnd_dt(void)
{
    switch (rnd(16)) {
    case 0:
        return rnd(128);
    case 1:
        return rnd(1u << 21);
    case 2:
        return rnd(1u << 28);
    case 3:
        return (1u << 28) + rnd(1u << 30);
    case 4:
        return TT_EV_SHORT_DT_LIMIT + rnd(TT_EV_ENTER_MEDIUM_DT_LIMIT); /* the medium forms' */
    default:
        return 128 + rnd(3000);
    }
}

/* Definitions of process pid: `regions` regions named "m:f<i % names>"
 * (so names repeat when names < regions) and a clock of dns ns per dticks
 * ticks, fitted through two syncs at ticks `sync_ticks` and later. Not
 * ended: region ids past the definitions are the placeholder, not damage. */
static void random_defs(const char *exp, uint64_t pid, uint64_t real, uint64_t sync_ticks, uint64_t dticks,
                        uint64_t dns, unsigned regions, unsigned names)
{
    static rec r;
    tfile tf;
    tf_open(&tf, exp, pid, "defs.tts", TT_FILE_DEFS);
    d_string(&r, 0, "");
    d_string(&r, 1, "prog.py");
    d_string(&r, 2, "MainThread");
    d_string(&r, 3, "worker");
    for (unsigned i = 0; i < names; i++) {
        char name[16];
        snprintf(name, sizeof name, "m:f%u", i);
        d_string(&r, 4 + i, name);
    }
    d_process(&r, pid, 1, 1, TT_CLOCK_TSC, 1000000000);
    d_sync(&r, sync_ticks, 1000, real);
    d_sync(&r, sync_ticks + dticks, 1000 + dns, real + dns);
    for (unsigned i = 0; i < regions; i++) d_region(&r, i, 4 + i % names, 1, i + 1, TT_REGION_PYTHON);
    d_thread(&r, 0, 2, 1);
    d_thread(&r, 1, 3, 2);
    tf_chunk(&tf, 0, &r, 0);
    tf_close(&tf);
}

typedef struct model_event {
    uint8_t kind;
    int synthesized;
    uint64_t ticks;
    uint32_t region, depth;
} model_event;

typedef struct model {
    model_event ev[8000];
    size_t n;
} model;

/* Writes stream `stream` of process pid: about n records from start_ticks,
 * ENTERs of ids below id_limit (region_count of them defined), LEAVEs,
 * MARKs; chunks of about chunk_bytes, each starting back in time now and
 * then; STREAM_END after closing everything when `end`, else cut with
 * regions open. *m gets the events a cursor must yield, less their times. */
static void random_stream(const char *exp, uint64_t pid, size_t stream, size_t n, uint64_t start_ticks,
                          uint32_t id_limit, uint32_t region_count, size_t chunk_bytes, int end, model *m)
{
    static rec r;
    tfile tf;
    char file[32];
    snprintf(file, sizeof file, "%zu.tts", stream);
    tf_open(&tf, exp, pid, file, TT_FILE_EVENTS);
    uint32_t stack[64], depth = 0, turn[64] = {0};
    uint64_t base = start_ticks, ticks = start_ticks;
    static tt_predictor predict; /* as a writer keeps it: every form is written (format.h) */
    memset(&predict, 0, sizeof predict);
    m->n = 0;
    for (size_t i = 0; i < n; i++) {
        if (r.n > chunk_bytes) {
            tf_chunk(&tf, base, &r, 0);
            memset(&predict, 0, sizeof predict);
            base = ticks = rnd(4) == 0 && ticks > 5000 ? ticks - rnd(5000) : ticks;
        }
        uint64_t dt = rnd_dt();
        ticks += dt;
        model_event *e = &m->ev[m->n++];
        if (depth > 0 && (rnd(100) < 48 || depth == 64)) {
            e_leave_any(&r, dt, &predict);
            *e = (model_event){TT_EV_LEAVE, 0, ticks, stack[--depth], depth};
        } else if (rnd(100) < 3) {
            e_id(&r, TT_EV_MARK, dt, 0);
            *e = (model_event){TT_EV_MARK, 0, ticks, 0, depth};
        } else {
            /* Mostly a few callees in turn, as programs call; now and then any. */
            uint32_t id = rnd(4) ? (depth * 37 + turn[depth]++ % 3) % id_limit : (uint32_t)rnd(id_limit);
            e_enter_any(&r, dt, id, &predict);
            stack[depth++] = id < region_count ? id : region_count;
            *e = (model_event){TT_EV_ENTER, 0, ticks, stack[depth - 1], depth};
        }
    }
    while (end && depth > 0) {
        ticks += 7;
        e_leave_any(&r, 7, &predict);
        m->ev[m->n++] = (model_event){TT_EV_LEAVE, 0, ticks, stack[--depth], depth};
    }
    while (depth > 0) {
        depth--;
        m->ev[m->n++] = (model_event){TT_EV_LEAVE, 1, ticks, stack[depth], depth};
    }
    if (end) {
        e_tag(&r, TT_EV_STREAM_END, 0);
        m->ev[m->n++] = (model_event){TT_EV_STREAM_END, 0, ticks, 0, 0};
    }
    tf_chunk(&tf, base, &r, 0);
    tf_close(&tf);
}

/* Reads the stream and checks it event by event against the model: times
 * are tt_process_time of the ticks, never going back; a synthesized LEAVE
 * is at the last time. */
static void check_stream(const char *exp, size_t pi, size_t stream, const model *m, int end)
{
    static stream_read s;
    if (read_stream(exp, pi, stream, &s) != 0) return;
    tt_trace *t;
    tt_error err;
    if (!CHECK(tt_trace_open(exp_path(exp), &t, &err) == 0)) return;
    const tt_process *p = tt_trace_process(t, pi);
    CHECK(s.state == (end ? TT_STREAM_COMPLETE : TT_STREAM_CUT));
    CHECK_U64(s.n, m->n);
    size_t bad = 0;
    uint64_t last = 0;
    for (size_t i = 0; i < s.n && i < m->n; i++) {
        const tt_event *e = &s.ev[i];
        const model_event *x = &m->ev[i];
        uint64_t time = x->synthesized ? last : tt_process_time(p, x->ticks);
        if (time < last) time = last;
        last = time;
        int ok = e->kind == x->kind && e->time == time && e->depth == x->depth && e->synthesized == x->synthesized;
        if (x->kind == TT_EV_ENTER || x->kind == TT_EV_LEAVE) ok &= e->region == x->region;
        if (!ok && bad++ == 0)
            fprintf(stderr,
                    "    event %zu: kind %u time %" PRIu64 " region %u depth %u, expected %u %" PRIu64 " %u %u\n", i,
                    e->kind, e->time, e->region, e->depth, x->kind, time, x->region, x->depth);
    }
    CHECK_U64(bad, 0);
    CHECK(well_nested(&s));
    tt_trace_close(t);
}

static void test_random_streams(void)
{
    static model m;
    const char *exp = "random";
    /* 0.3725... ns per tick, 300 regions (2-byte ids) and more used. The
     * first chunk starts before the first sync, and so before the epoch. */
    random_defs(exp, 11, 1000000000000, 1u << 20, 1ull << 32, 1600000000, 300, 300);
    for (int round = 0; round < 8; round++) {
        int end = round % 2;
        random_stream(exp, 11, 0, 7000, (1u << 20) - 50000, 320, 300, round < 4 ? 4000 : 200, end, &m);
        check_stream(exp, 0, 0, &m, end);
    }

    /* About 2^20 ns per tick: times pass UINT64_MAX at about 2^44 ticks,
     * inside the stream, and clamp there. */
    const char *slow = "random-slow-clock";
    random_defs(slow, 12, 1000000000000, 0, 1000, 1048576000 + 333, 10, 10);
    uint64_t limit = (uint64_t)(18446744073709551615.0 / 1048576.333);
    random_stream(slow, 12, 0, 7000, limit - (1u << 22), 10, 10, 4000, 1, &m);
    check_stream(slow, 0, 0, &m, 1);
}

/* ---- the profile against a model ----
 *
 * The definition profile.h gives, computed the plain way, frame by frame
 * from the cursor's events: a node's calls' durations summed in ticks and
 * converted to ns once, its exclusive time that minus its children's, a
 * region's inclusive time the sum over its nodes entered with none of its
 * calls open. tt_profile_build must agree on every number. */

typedef struct ref_node {
    uint32_t region, parent, first_child, next_sibling, last_child, merged;
    int outermost;
    uint64_t visits, ticks, inclusive, exclusive;
} ref_node;

typedef struct ref_region {
    const char *name;
    uint64_t visits, inclusive, exclusive, thread_excl;
    uint32_t active;
} ref_region;

typedef struct ref_profile {
    ref_region regions[512];
    size_t region_count;
    ref_node nodes[8192];
    size_t node_count;
} ref_profile;

static uint32_t ref_merged(ref_profile *rp, const char *name)
{
    for (size_t i = 0; i < rp->region_count; i++)
        if (strcmp(rp->regions[i].name, name) == 0) return (uint32_t)i;
    rp->regions[rp->region_count] = (ref_region){.name = name};
    return (uint32_t)rp->region_count++;
}

/* The model's tree of one stream (rp->nodes) and its share of the regions;
 * then checks thread th of prof against it. */
static void check_thread(ref_profile *rp, const tt_process *p, const stream_read *s, const tt_profile *prof,
                         const tt_profile_thread *th)
{
    struct {
        uint32_t node, region;
        uint64_t enter;
    } frames[128];
    size_t depth = 0;
    uint32_t last_root = UINT32_MAX;
    rp->node_count = 0;
    for (size_t i = 0; i < rp->region_count; i++) rp->regions[i].thread_excl = 0;
    for (size_t i = 0; i < s->n; i++) {
        const tt_event *e = &s->ev[i];
        if (e->kind == TT_EV_ENTER) {
            uint32_t parent = depth ? frames[depth - 1].node : UINT32_MAX, node = UINT32_MAX;
            for (uint32_t k = 0; k < rp->node_count && node == UINT32_MAX; k++)
                if (rp->nodes[k].parent == parent && rp->nodes[k].region == e->region) node = k;
            uint32_t region = ref_merged(rp, p->regions[e->region].name);
            if (node == UINT32_MAX) {
                node = (uint32_t)rp->node_count++;
                rp->nodes[node] = (ref_node){
                    e->region, parent, UINT32_MAX, UINT32_MAX, UINT32_MAX, region, rp->regions[region].active == 0,
                    0,         0,      0,          0};
                uint32_t *last = parent == UINT32_MAX ? &last_root : &rp->nodes[parent].last_child;
                if (*last != UINT32_MAX)
                    rp->nodes[*last].next_sibling = node;
                else if (parent != UINT32_MAX)
                    rp->nodes[parent].first_child = node;
                *last = node;
            }
            rp->nodes[node].visits++;
            rp->regions[region].visits++;
            rp->regions[region].active++;
            frames[depth].node = node;
            frames[depth].region = region;
            frames[depth++].enter = e->ticks;
        } else if (e->kind == TT_EV_LEAVE) {
            depth--;
            rp->nodes[frames[depth].node].ticks += e->ticks - frames[depth].enter;
            rp->regions[frames[depth].region].active--;
        }
    }
    for (size_t k = 0; k < rp->node_count; k++) {
        ref_node *n = &rp->nodes[k];
        n->inclusive = tt_process_duration(p, n->ticks);
        n->exclusive += n->inclusive;
        if (n->parent != UINT32_MAX) rp->nodes[n->parent].exclusive -= n->inclusive;
    }
    for (size_t k = 0; k < rp->node_count; k++) {
        ref_node *n = &rp->nodes[k];
        ref_region *r = &rp->regions[n->merged];
        r->exclusive += n->exclusive;
        r->thread_excl += n->exclusive;
        if (n->outermost) r->inclusive += n->inclusive;
    }

    CHECK_U64(th->events, s->events_read);
    CHECK_U64(th->begin_ns, s->n ? s->ev[0].time : 0);
    CHECK_U64(th->end_ns, s->n ? s->ev[s->n - 1].time : 0);
    CHECK_U64(th->node_count, rp->node_count);
    size_t bad = 0, top = SIZE_MAX;
    for (size_t i = 0; i < th->node_count && i < rp->node_count; i++) {
        const tt_profile_node *a = &th->nodes[i];
        const ref_node *b = &rp->nodes[i];
        bad += a->region != b->region || a->parent != b->parent || a->first_child != b->first_child ||
               a->next_sibling != b->next_sibling || a->visits != b->visits || a->inclusive_ns != b->inclusive ||
               a->exclusive_ns != b->exclusive;
    }
    CHECK_U64(bad, 0);
    uint64_t best = 0;
    for (size_t i = 0; i < rp->region_count; i++)
        if (rp->regions[i].thread_excl > best) best = rp->regions[i].thread_excl, top = i;
    CHECK(top == SIZE_MAX ? th->top_region == SIZE_MAX
                          : strcmp(prof->regions[th->top_region].name, rp->regions[top].name) == 0);
}

static void test_profile_model(void)
{
    static model m;
    static stream_read s;
    static ref_profile rp;
    const char *exp = "profile-model";
    /* Process 21: 200 regions under 150 names, so some names are shared by
     * two regions (merged, and recursion through both counted once); two
     * threads, one cut. Process 22: regions of the same names, merged with
     * those of 21. */
    random_defs(exp, 21, 1000000000000, 1000, 1ull << 32, 1600000000, 200, 150);
    random_stream(exp, 21, 0, 7000, 1u << 20, 210, 200, 3000, 1, &m);
    random_stream(exp, 21, 1, 5000, 1u << 21, 60, 200, 3000, 0, &m);
    random_defs(exp, 22, 1000000500000, 1000, 1000, 1000, 40, 40);
    random_stream(exp, 22, 0, 4000, 5000, 40, 40, 3000, 1, &m);

    tt_trace *t;
    tt_profile *prof;
    tt_error err;
    if (!CHECK(tt_trace_open(exp_path(exp), &t, &err) == 0)) return;
    if (!CHECK(tt_profile_build(t, &prof, &err) == 0)) {
        tt_trace_close(t);
        return;
    }
    rp.region_count = 0;
    CHECK_U64(prof->thread_count, 3);
    uint64_t events = 0, total = 0;
    for (size_t i = 0; i < prof->thread_count; i++) {
        const tt_profile_thread *th = &prof->threads[i];
        if (read_stream(exp, th->process, th->stream, &s) != 0) continue;
        check_thread(&rp, tt_trace_process(t, th->process), &s, prof, th);
        events += s.events_read;
        total += th->end_ns - th->begin_ns;
    }
    CHECK_U64(prof->events, events);
    CHECK_U64(prof->total_ns, total);
    CHECK_U64(prof->region_count, rp.region_count);
    size_t bad = 0;
    for (size_t i = 0; i < prof->region_count && i < rp.region_count; i++) {
        const tt_profile_region *a = &prof->regions[i];
        const ref_region *b = &rp.regions[i];
        bad += strcmp(a->name, b->name) != 0 || a->visits != b->visits || a->inclusive_ns != b->inclusive ||
               a->exclusive_ns != b->exclusive;
    }
    CHECK_U64(bad, 0);
    CHECK_U64(prof->problem_count, 1); /* the cut thread */
    tt_profile_free(prof);
    tt_trace_close(t);
}

/* A garbage collection inside a call, and a thread's usage records: the
 * reader's GC event and usage table, the profile's sums. */
static void test_gc_and_usage(void)
{
    static rec r;
    tfile tf;
    const char *exp = "gcusage";
    tf_open(&tf, exp, 4242, "defs.tts", TT_FILE_DEFS);
    std_defs(&r, 4242, 5000000000, TICK_NS);
    d_string(&r, 8, "gc:collection(gen2)");
    d_region(&r, 3, 8, 0, 0, TT_REGION_GC);
    /* stream 0 at ticks 1000 and 1100: 30 ns of CPU, then 80 with 2 of 4 GIL samples */
    put_u8(&r, TT_DEF_THREAD_USAGE);
    put_v(&r, 0), put_v(&r, 1000), put_v(&r, 30), put_v(&r, 2), put_v(&r, 1);
    put_u8(&r, TT_DEF_THREAD_USAGE);
    put_v(&r, 0), put_v(&r, 1100), put_v(&r, 80), put_v(&r, 4), put_v(&r, 2);
    d_end(&r, 2000, 5, 0, 0);
    tf_chunk(&tf, 0, &r, 0);
    tf_close(&tf);

    tf_open(&tf, exp, 4242, "0.tts", TT_FILE_EVENTS);
    e_enter(&r, 0, 0);  /* t = 1000 */
    e_enter(&r, 10, 3); /* the collection starts at 1010 */
    e_tag(&r, TT_EV_GC, 40);
    put_u8(&r, 2), put_v(&r, 5), put_v(&r, 1), put_v(&r, 40);
    e_leave(&r, 0);
    e_leave(&r, 50); /* a's 100 ns, 40 of them the collection's */
    e_tag(&r, TT_EV_STREAM_END, 0);
    tf_chunk(&tf, 1000, &r, 0);
    tf_close(&tf);

    tt_trace *t;
    tt_error err;
    if (!CHECK(tt_trace_open(exp_path(exp), &t, &err) == 0)) return;
    const tt_process *p = tt_trace_process(t, 0);
    CHECK(p->regions[3].kind == TT_REGION_GC);
    CHECK_U64(p->threads[0].usage_count, 2);
    CHECK(p->threads[0].usage[1].time == 1100 && p->threads[0].usage[1].cpu_ns == 80 &&
          p->threads[0].usage[1].samples == 4 && p->threads[0].usage[1].gil_samples == 2);
    static stream_read s;
    if (CHECK(read_stream(exp, 0, 0, &s) == 0)) {
        CHECK(well_nested(&s));
        CHECK(s.n == 6 && s.ev[2].kind == TT_EV_GC && s.ev[2].time == 1050 && s.ev[2].generation == 2 &&
              s.ev[2].collected == 5 && s.ev[2].uncollectable == 1 && s.ev[2].duration_ns == 40);
    }

    tt_profile *prof;
    if (CHECK(tt_profile_build(t, &prof, &err) == 0)) {
        CHECK(prof->gc[2].collections == 1 && prof->gc[2].longest_ns == 40 && prof->gc[2].total_ns == 40 &&
              prof->gc[2].collected == 5 && prof->gc[0].collections == 0);
        CHECK(prof->regions[0].exclusive_ns == 60 && prof->regions[0].inclusive_ns == 100);
        CHECK(prof->threads[0].has_usage && prof->threads[0].cpu_ns == 80 && prof->threads[0].gil_samples == 2);
        char *text = tt_profile_render_text(prof, 0);
        CHECK_CONTAINS(text, "\nGarbage collection: 1 collection (gen0 0, gen1 0, gen2 1), 0.000 ms in total (40.0%), "
                             "longest pause 0.000 ms\n  5 objects collected, 1 uncollectable\n");
        CHECK_CONTAINS(text, "  4242     MainThread       6     0.000     0.000   80.0   50.0  __main__:a\n");
        free(text);
        tt_profile_free(prof);
    }
    tt_trace_close(t);
}

static void d_pair(rec *r, uint8_t tag, uint64_t a, uint64_t b)
{
    put_u8(r, tag);
    put_v(r, a);
    if (tag == TT_DEF_TASK) put_v(r, b);
}

/* TASK_NAMED: a task and its name in place. */
static void d_task_named(rec *r, uint64_t id, const char *name)
{
    put_u8(r, TT_DEF_TASK_NAMED);
    put_v(r, id);
    put_str(r, name);
}

/* Two asyncio tasks in one stream: alpha resumed twice (its first step
 * ends awaiting sleep inside worker), beta once, renamed gamma (alpha by
 * a string id, beta and gamma in place: both forms of TASK): the
 * reader's TASK_RESUME events and names, the lanes' steps, suspended time,
 * await time per coroutine, top region, windows and the summary's text. */
static void test_tasks(void)
{
    static rec r;
    tfile tf;
    const char *exp = "tasks";
    tf_open(&tf, exp, 4242, "defs.tts", TT_FILE_DEFS);
    std_defs(&r, 4242, 5000000000, TICK_NS);
    d_string(&r, 8, "__main__:worker");
    d_string(&r, 9, "asyncio.tasks:sleep");
    d_string(&r, 10, "Context.run");
    d_string(&r, 11, "alpha");
    d_region(&r, 3, 8, 1, 30, TT_REGION_PYTHON);
    d_region(&r, 4, 9, 1, 40, TT_REGION_PYTHON);
    d_region(&r, 5, 10, 0, 0, TT_REGION_C);
    d_pair(&r, TT_DEF_COROUTINE, 3, 0);
    d_pair(&r, TT_DEF_COROUTINE, 4, 0);
    d_pair(&r, TT_DEF_TASK, 0, 11);
    d_task_named(&r, 1, "beta");
    d_task_named(&r, 1, "gamma");
    d_end(&r, 2000, 5, 0, 0);
    tf_chunk(&tf, 0, &r, 0);
    tf_close(&tf);

    tf_open(&tf, exp, 4242, "0.tts", TT_FILE_EVENTS);
    e_enter(&r, 0, 5); /* t = 1000: the loop's Context.run */
    e_id(&r, TT_EV_TASK_RESUME, 0, 0);
    e_enter(&r, 0, 3);  /* alpha's step: 1000 .. 1040 */
    e_enter(&r, 10, 2); /* len 1010 .. 1020, finished before the await */
    e_leave(&r, 10);
    e_enter(&r, 10, 4); /* sleep 1030 .. 1040, suspends */
    e_leave(&r, 10);
    e_leave(&r, 0);
    e_leave(&r, 10);
    e_enter(&r, 50, 5); /* 1100 */
    e_id(&r, TT_EV_TASK_RESUME, 0, 1);
    e_enter(&r, 0, 3); /* beta's step: 1100 .. 1120 */
    e_leave(&r, 20);
    e_leave(&r, 10);
    e_enter(&r, 70, 5); /* 1200 */
    e_id(&r, TT_EV_TASK_RESUME, 0, 0);
    e_enter(&r, 0, 3);  /* alpha again: 1200 .. 1240, 160 ns suspended */
    e_enter(&r, 10, 1); /* b 1210 .. 1230 */
    e_leave(&r, 20);
    e_leave(&r, 10);
    e_leave(&r, 10);
    e_tag(&r, TT_EV_STREAM_END, 0);
    tf_chunk(&tf, 1000, &r, 0);
    tf_close(&tf);

    tt_trace *t;
    tt_error err;
    if (!CHECK(tt_trace_open(exp_path(exp), &t, &err) == 0)) return;
    const tt_process *p = tt_trace_process(t, 0);
    CHECK_U64(p->task_count, 2);
    CHECK(strcmp(p->task_names[0], "alpha") == 0 && strcmp(p->task_names[1], "gamma") == 0);
    CHECK(p->regions[3].awaits && p->regions[4].awaits && !p->regions[5].awaits);
    static stream_read s;
    if (CHECK(read_stream(exp, 0, 0, &s) == 0)) {
        CHECK(well_nested(&s));
        CHECK(s.ev[1].kind == TT_EV_TASK_RESUME && s.ev[1].task == 0 && s.ev[1].time == 1000);
        CHECK(s.ev[2].kind == TT_EV_ENTER && s.ev[2].region == 3);
    }
    tt_tasks *tasks;
    if (CHECK(tt_tasks_build(t, &tasks, &err) == 0)) {
        CHECK_U64(tasks->lane_count, 2);
        const tt_task_lane *a = &tasks->lanes[0], *b = &tasks->lanes[1];
        CHECK(strcmp(tt_task_lane_name(tasks, a), "alpha") == 0 && strcmp(tt_task_lane_name(tasks, b), "gamma") == 0);
        CHECK(a->step_count == 2 && a->steps[0].begin == 1000 && a->steps[0].end == 1040 && a->steps[1].begin == 1200 &&
              a->steps[1].end == 1240 && a->steps[0].region == 3);
        CHECK(a->running_ns == 80 && a->suspended_ns == 160 && a->top_region == 3 && a->top_ns == 40);
        CHECK(b->step_count == 1 && b->running_ns == 20 && b->suspended_ns == 0);
        /* the chain that awaited: worker and sleep, not len, which had returned */
        CHECK_U64(tasks->await_count, 2);
        CHECK(tasks->awaits[0].region == 3 && tasks->awaits[0].suspended_ns == 160 &&
              tasks->awaits[0].suspensions == 1);
        CHECK(tasks->awaits[1].region == 4 && tasks->awaits[1].suspended_ns == 160);
        uint64_t pairs[4];
        CHECK(tt_task_lane_window(a, 0, 5000, 0, pairs, 2) == 2 && pairs[0] == 1000 && pairs[1] == 1040 &&
              pairs[2] == 1200 && pairs[3] == 1240);
        CHECK(tt_task_lane_window(a, 0, 5000, 200, pairs, 2) == 1 && pairs[0] == 1000 && pairs[1] == 1240);
        CHECK(tt_task_lane_window(a, 1100, 5000, 0, pairs, 2) == 1 && pairs[0] == 1200);
        CHECK(tt_task_lane_window(a, 0, 5000, 0, pairs, 1) == 2 && pairs[0] == 1000);
        char *text = tt_tasks_render_text(tasks, 25);
        CHECK_CONTAINS(text, "Asyncio tasks: 2 tasks, 3 steps, 0.000 ms running, 0.000 ms suspended (awaiting)\n");
        CHECK_CONTAINS(text,
                       "  alpha  MainThread       2         0.000         0.000  __main__:worker  __main__:worker\n");
        CHECK_CONTAINS(text, "  asyncio.tasks:sleep         0.000            1\n");
        free(text);
        tt_tasks_free(tasks);
    }
    tt_trace_close(t);
}

/* ---- the tasks against a model ----
 *
 * Random streams of calls with TASK_RESUME records, steps nested in steps
 * (an eager task's first step runs inside the step that made it), times
 * often equal: tasklanes.h's definition computed the plain way, event by
 * event from the cursor's events, and tt_tasks_build must agree on every
 * number. Its exclusive time per region comes from the call tree in
 * segments (tasklanes.h), not per event: the model is per event. */

#define MODEL_TASKS 6
#define MODEL_REGIONS 40

typedef struct ref_lane {
    uint64_t steps, running, suspended, last_end;
    uint64_t exclusive[3 + MODEL_REGIONS];
    uint32_t chain[128];
    size_t chain_len;
} ref_lane;

typedef struct ref_tasks {
    ref_lane lanes[MODEL_TASKS];
    uint64_t awaited[3 + MODEL_REGIONS], suspensions[3 + MODEL_REGIONS];
} ref_tasks;

static void ref_tasks_stream(ref_tasks *m, const tt_process *p, const stream_read *s)
{
    struct {
        uint32_t lane, depth;
        uint64_t begin;
    } open[128];
    size_t open_count = 0;
    uint32_t regions[128], pending = UINT32_MAX, depth = 0, returns = 0;
    uint64_t last = 0;
    for (size_t i = 0; i < s->n; i++) {
        const tt_event *e = &s->ev[i];
        if (open_count && depth >= open[open_count - 1].depth && depth)
            m->lanes[open[open_count - 1].lane].exclusive[regions[depth - 1]] += e->time - last;
        last = e->time;
        if (e->kind == TT_EV_TASK_RESUME) {
            pending = e->task < p->task_count ? e->task : UINT32_MAX;
            continue;
        }
        if (e->kind == TT_EV_ENTER) {
            regions[e->depth - 1] = e->region;
            returns = 0;
            if (pending != UINT32_MAX) {
                ref_lane *l = &m->lanes[pending];
                if (l->steps && e->time >= l->last_end) {
                    l->suspended += e->time - l->last_end;
                    for (size_t k = 0; k < l->chain_len; k++) {
                        m->awaited[l->chain[k]] += e->time - l->last_end;
                        m->suspensions[l->chain[k]]++;
                    }
                }
                open[open_count].lane = pending;
                open[open_count].depth = e->depth;
                open[open_count++].begin = e->time;
            }
            pending = UINT32_MAX;
        } else if (e->kind == TT_EV_LEAVE) {
            returns++;
            if (open_count && open[open_count - 1].depth == e->depth + 1) {
                ref_lane *l = &m->lanes[open[--open_count].lane];
                l->steps++;
                l->running += e->time - open[open_count].begin;
                l->last_end = e->time;
                l->chain_len = 0;
                for (uint32_t d = e->depth; d < e->depth + returns; d++)
                    if (p->regions[regions[d]].awaits) l->chain[l->chain_len++] = regions[d];
            }
        }
        depth = e->depth;
    }
}

/* Stream `stream` of process pid: `events` calls and resumes at random, to a depth of 60 at most; cut (no
 * STREAM_END) unless `end`. */
static void random_task_stream(const char *exp, uint64_t pid, size_t stream, size_t events, int end)
{
    static rec r;
    tfile tf;
    char name[16];
    snprintf(name, sizeof name, "%zu.tts", stream);
    tf_open(&tf, exp, pid, name, TT_FILE_EVENTS);
    r.n = 0;
    uint32_t depth = 0;
    int pending = 0;
    for (size_t i = 0; i < events; i++) {
        uint64_t dt = rnd(3) ? rnd(40) : 0;
        uint64_t choice = rnd(16);
        if (pending || (depth < 60 && choice < 7) || depth == 0) {
            if (!pending && depth < 60 && choice == 0) {
                e_id(&r, TT_EV_TASK_RESUME, dt, rnd(MODEL_TASKS));
                pending = 1;
                continue;
            }
            e_enter(&r, dt, 3 + rnd(MODEL_REGIONS));
            depth++;
            pending = 0;
        } else {
            e_leave(&r, dt);
            depth--;
        }
    }
    if (end) {
        for (; depth; depth--) e_leave(&r, rnd(5));
        e_tag(&r, TT_EV_STREAM_END, 0);
    }
    tf_chunk(&tf, 1000, &r, 0);
    tf_close(&tf);
}

static void test_tasks_model(void)
{
    static rec r;
    static stream_read s;
    static ref_tasks m;
    tfile tf;
    const char *exp = "tasks-model";
    tf_open(&tf, exp, 4343, "defs.tts", TT_FILE_DEFS);
    std_defs(&r, 4343, 5000000000, TICK_NS);
    static char names[MODEL_REGIONS + MODEL_TASKS][24];
    for (uint32_t i = 0; i < MODEL_REGIONS + MODEL_TASKS; i++) {
        snprintf(names[i], sizeof names[i], i < MODEL_REGIONS ? "m:f%u" : "task-%u", i);
        d_string(&r, 8 + i, names[i]);
    }
    for (uint32_t i = 0; i < MODEL_REGIONS; i++) {
        d_region(&r, 3 + i, 8 + i, 1, 10 + i, TT_REGION_PYTHON);
        if (i % 3) d_pair(&r, TT_DEF_COROUTINE, 3 + i, 0);
    }
    d_thread(&r, 1, 5, 4344);
    for (uint32_t k = 0; k < MODEL_TASKS; k++) d_pair(&r, TT_DEF_TASK, k, 8 + MODEL_REGIONS + k);
    d_end(&r, 2000, 5, 0, 0);
    tf_chunk(&tf, 0, &r, 0);
    tf_close(&tf);
    random_task_stream(exp, 4343, 0, 7000, 1);
    random_task_stream(exp, 4343, 1, 6000, 0);

    tt_trace *t;
    tt_error err;
    if (!CHECK(tt_trace_open(exp_path(exp), &t, &err) == 0)) return;
    const tt_process *p = tt_trace_process(t, 0);
    memset(&m, 0, sizeof m);
    for (size_t stream = 0; stream < 2; stream++) {
        if (!CHECK(read_stream(exp, 0, stream, &s) == 0)) continue;
        /* Each stream starts with no step open: the lanes' chains go on. */
        ref_tasks_stream(&m, p, &s);
    }
    tt_tasks *tasks;
    tt_profile *alone, *with;
    if (CHECK(tt_profile_build_tasks(t, SIZE_MAX, &with, &tasks, &err) == 0)) {
        size_t bad = 0, lanes = 0, steps = 0, nested = 0;
        for (uint32_t k = 0; k < MODEL_TASKS; k++) {
            const ref_lane *l = &m.lanes[k];
            if (!l->steps) continue;
            const tt_task_lane *a = lanes < tasks->lane_count ? &tasks->lanes[lanes] : NULL;
            lanes++;
            steps += l->steps;
            uint32_t top = UINT32_MAX;
            for (uint32_t g = 0; g < 3 + MODEL_REGIONS; g++)
                if (l->exclusive[g] && (top == UINT32_MAX || l->exclusive[g] > l->exclusive[top])) top = g;
            bad += !a || a->task != k || a->step_count != l->steps || a->running_ns != l->running ||
                   a->suspended_ns != l->suspended ||
                   (top != UINT32_MAX && (a->top_region != top || a->top_ns != l->exclusive[top]));
            for (size_t i = 1; a && i < a->step_count; i++) nested += a->steps[i].begin < a->steps[i - 1].end;
        }
        CHECK_U64(bad, 0);
        CHECK_U64(tasks->lane_count, lanes);
        CHECK(steps > 100);
        size_t awaits = 0;
        for (uint32_t g = 0; g < 3 + MODEL_REGIONS; g++) {
            if (!m.suspensions[g]) continue;
            awaits++;
            size_t i = 0;
            while (i < tasks->await_count && tasks->awaits[i].region != g) i++;
            CHECK(i < tasks->await_count && tasks->awaits[i].suspended_ns == m.awaited[g] &&
                  tasks->awaits[i].suspensions == m.suspensions[g]);
        }
        CHECK_U64(tasks->await_count, awaits);
        tt_tasks_free(tasks);
        /* The profile made with the tasks is the profile made alone. */
        if (CHECK(tt_profile_build(t, &alone, &err) == 0)) {
            CHECK_U64(with->thread_count, alone->thread_count);
            for (size_t i = 0; i < with->thread_count && i < alone->thread_count; i++)
                CHECK(with->threads[i].node_count == alone->threads[i].node_count &&
                      memcmp(with->threads[i].nodes, alone->threads[i].nodes,
                             with->threads[i].node_count * sizeof *with->threads[i].nodes) == 0);
            tt_profile_free(alone);
        }
        tt_profile_free(with);
    }
    tt_trace_close(t);
}

/* ---- TREE chunks (format.h): the nodes in columns ---- */

/* The tree of a(b, b) then a: node 1 a (root's child), 2 b (under 1). */
enum { TREE_NODES = 2 };
static const uint64_t tree_parent[TREE_NODES] = {0, 1}, tree_region[TREE_NODES] = {0, 1};
static const uint64_t tree_visits[TREE_NODES] = {2, 2}, tree_inclusive[TREE_NODES] = {300, 70};

/* A stream of those calls and STREAM_END, then its tree: TREE, then the
 * nodes in blocks of `split` and the rest, the second block in a chunk of
 * its own when `apart`; `flags` on the TREE chunks; `below` in place of
 * node 2's n - parent (-1: the true 1), `count` in place of the second
 * block's (0: the true one). */
static void write_tree(const char *exp, uint8_t flags, int64_t below, uint64_t count, int apart, int zstd)
{
    static rec r;
    tfile tf;
    write_std_defs(exp, 9, 1, TICK_NS);
    tf_open(&tf, exp, 9, "0.tts", TT_FILE_EVENTS);
    e_enter(&r, 0, 0);
    e_enter(&r, 10, 1);
    e_leave(&r, 30);
    e_enter(&r, 10, 1);
    e_leave(&r, 40);
    e_leave(&r, 110);
    e_enter(&r, 10, 0);
    e_leave(&r, 100);
    e_tag(&r, TT_EV_STREAM_END, 0);
    tf_chunk(&tf, 0, &r, 0);
    put_u8(&r, TT_DEF_TREE);
    put_v(&r, TREE_NODES);
    put_v(&r, 9);   /* events */
    put_v(&r, 310); /* end ticks */
    for (int i = 0; i < 1 + 5 * 3; i++) put_v(&r, 0);
    for (size_t first = 0; first < TREE_NODES; first++) {
        put_u8(&r, TT_DEF_TREE_NODE);
        put_v(&r, first == 1 && count ? count : 1);
        put_v(&r, first == 1 && below >= 0 ? (uint64_t)below : first + 1 - tree_parent[first]);
        put_v(&r, tree_region[first] << 1); /* no asyncio fields */
        put_v(&r, tree_visits[first]);
        put_v(&r, tree_inclusive[first]);
        if (apart && first == 0) tf_chunk_codec(&tf, 310, &r, flags, zstd);
    }
    tf_chunk_codec(&tf, 310, &r, flags, zstd);
    tf_close(&tf);
}

/* 1 with the tree as written, 0 without one, as tt_stream_tree_read says
 * (the records trusted when `trust`: tt_trace_trust_records). */
static int tree_read_trusting(const char *exp, int trust, int *same)
{
    tt_trace *t;
    tt_error err;
    if (tt_trace_open(exp_path(exp), &t, &err) != 0) return -1;
    if (trust) tt_trace_trust_records(t);
    tt_stream_tree tree;
    int found = tt_stream_tree_read(t, tt_trace_process(t, 0), 0, &tree, &err);
    *same = found == 1 && tree.node_count == TREE_NODES && tree.events == 9 && tree.end_ticks == 310;
    for (size_t n = 0; *same && n < TREE_NODES; n++)
        *same = tree.nodes[n].parent == (uint32_t)(tree_parent[n] - 1) && tree.nodes[n].region == tree_region[n] &&
                tree.nodes[n].visits == tree_visits[n] && tree.nodes[n].inclusive_ticks == tree_inclusive[n];
    if (found == 1) tt_stream_tree_free(&tree);
    tt_trace_close(t);
    return found;
}

static int tree_read(const char *exp, int *same) { return tree_read_trusting(exp, 0, same); }

static void test_tree_chunks(void)
{
    const uint8_t columns = TT_CHUNK_TREE | TT_CHUNK_TREE_COLUMNS;
    int same;
    /* In one chunk, in two, compressed: the same tree. */
    write_tree("tree_one", columns, -1, 0, 0, 0);
    CHECK(tree_read("tree_one", &same) == 1 && same);
    write_tree("tree_two", columns, -1, 0, 1, 0);
    CHECK(tree_read("tree_two", &same) == 1 && same);
    write_tree("tree_zstd", columns, -1, 0, 1, 1);
    CHECK(tree_read("tree_zstd", &same) == 1 && same);
    /* An earlier writer's TREE chunk (no TT_CHUNK_TREE_COLUMNS): no tree,
     * the stream is read back; its records read the same either way. */
    write_tree("tree_rows", TT_CHUNK_TREE, -1, 0, 0, 0);
    CHECK(tree_read("tree_rows", &same) == 0);
    static stream_read s;
    if (read_stream("tree_rows", 0, 0, &s) == 0) {
        CHECK(s.state == TT_STREAM_COMPLETE);
        CHECK_U64(s.n, 9);
    }
    /* n - parent 2 for node 2: the root, a parent like any (another tree);
     * 0 (itself) or past the root, or more nodes than TREE announced: no
     * tree. */
    write_tree("tree_root", columns, 2, 0, 0, 0);
    CHECK(tree_read("tree_root", &same) == 1 && !same);
    write_tree("tree_self", columns, 0, 0, 0, 0);
    CHECK(tree_read("tree_self", &same) == 0);
    write_tree("tree_past", columns, 3, 0, 0, 0);
    CHECK(tree_read("tree_past", &same) == 0);
    write_tree("tree_more", columns, -1, 2, 0, 0);
    CHECK(tree_read("tree_more", &same) == 0);
    /* A damaged chunk of records: the stream is read back, unless its
     * records are trusted (the end of the run that wrote it), whose tree
     * read goes over them by their headers; a damaged tree either way. */
    write_tree("tree_records_damaged", columns, -1, 0, 0, 0);
    flip_byte("tree_records_damaged", 9, "0.tts", TT_FILE_HEADER_SIZE + TT_CHUNK_HEADER_SIZE + 2);
    CHECK(tree_read("tree_records_damaged", &same) == 0);
    CHECK(tree_read_trusting("tree_records_damaged", 1, &same) == 1 && same);
    write_tree("tree_damaged", columns, -1, 0, 1, 0);
    flip_byte("tree_damaged", 9, "0.tts", file_size_of("tree_damaged", 9, "0.tts") - 2);
    CHECK(tree_read_trusting("tree_damaged", 1, &same) == 0);
}

/* ---- chunks flagged TT_CHUNK_COUNTED (format.h) ---- */

/* write_tree's calls in three chunks, the second holding an OBJECTS record
 * (5 "mode" objects made in b, 2 destroyed) and flagged `counted`, then
 * their tree with `reads`. */
static void write_counted(const char *exp, uint8_t counted, uint64_t reads)
{
    static rec r;
    tfile tf;
    write_std_defs(exp, 9, 1, TICK_NS);
    tf_open(&tf, exp, 9, "0.tts", TT_FILE_EVENTS);
    e_enter(&r, 0, 0);
    e_enter(&r, 10, 1);
    e_leave(&r, 30);
    tf_chunk(&tf, 0, &r, 0);
    e_enter(&r, 10, 1);
    put_u8(&r, TT_EV_OBJECTS);
    put_v(&r, 0);     /* dt */
    put_v(&r, 1 + 1); /* region b + 1 */
    put_v(&r, 7);     /* type "mode" */
    put_v(&r, 48);
    put_v(&r, 5);
    put_v(&r, 2);
    e_leave(&r, 40);
    e_leave(&r, 110);
    tf_chunk(&tf, 40, &r, counted);
    e_enter(&r, 10, 0);
    e_leave(&r, 100);
    e_tag(&r, TT_EV_STREAM_END, 0);
    tf_chunk(&tf, 200, &r, 0);
    put_u8(&r, TT_DEF_TREE);
    put_v(&r, TREE_NODES);
    put_v(&r, 10); /* events */
    put_v(&r, 310);
    put_v(&r, reads);
    for (int i = 0; i < 5 * 3; i++) put_v(&r, 0);
    put_u8(&r, TT_DEF_TREE_NODE);
    put_v(&r, TREE_NODES);
    for (size_t n = 0; n < TREE_NODES; n++) put_v(&r, n + 1 - tree_parent[n]);
    for (size_t n = 0; n < TREE_NODES; n++) put_v(&r, tree_region[n] << 1);
    for (size_t n = 0; n < TREE_NODES; n++) put_v(&r, tree_visits[n]);
    for (size_t n = 0; n < TREE_NODES; n++) put_v(&r, tree_inclusive[n]);
    tf_chunk(&tf, 310, &r, TT_CHUNK_TREE | TT_CHUNK_TREE_COLUMNS);
    tf_close(&tf);
}

/* The summary of exp, and its thread's records_read (malloc'd text; NULL on failure). */
static char *counted_summary(const char *exp, uint64_t *records_read)
{
    tt_trace *t;
    tt_error err;
    if (!CHECK(tt_trace_open(exp_path(exp), &t, &err) == 0)) return NULL;
    tt_profile *p;
    char *text = NULL;
    if (CHECK(tt_profile_build(t, &p, &err) == 0)) {
        CHECK(p->problem_count == 0 && p->thread_count == 1 && p->object_count == 1);
        if (p->thread_count == 1) *records_read = p->threads[0].records_read;
        if (p->object_count == 1)
            CHECK(p->objects[0].created == 5 && p->objects[0].destroyed == 2 &&
                  strcmp(p->regions[p->objects[0].region].name, "__main__:b") == 0);
        text = tt_profile_render_text(p, 0);
        tt_profile_free(p);
    }
    tt_trace_close(t);
    return text;
}

static void test_counted_chunks(void)
{
    /* Flagged: the tree and the flagged chunk's 4 records alone. Not
     * flagged (an earlier writer), or reads one more than the flagged
     * chunks hold (steps the writer could not follow): every record. The
     * same profile from all three. */
    write_counted("counted", TT_CHUNK_COUNTED, 1);
    write_counted("counted_unflagged", 0, 1);
    write_counted("counted_more", TT_CHUNK_COUNTED, 2);
    uint64_t flagged = 0, unflagged = 0, more = 0;
    char *a = counted_summary("counted", &flagged), *b = counted_summary("counted_unflagged", &unflagged),
         *c = counted_summary("counted_more", &more);
    CHECK_U64(flagged, 4);
    CHECK_U64(unflagged, 10);
    CHECK_U64(more, 10);
    if (CHECK(a && b && c)) {
        CHECK_STR(a, b);
        CHECK_STR(a, c);
        CHECK_CONTAINS(a, "Objects: 5 created, 2 destroyed, 3 alive at the end\n");
    }
    free(a);
    free(b);
    free(c);
}

/* Gaps in the measurement (format.h: RECORDING_OFF to RECORDING_ON): the
 * calls open across one are left where it begins and entered again
 * (resumed) where it ends; a return inside it gives nothing; a call made
 * inside it ends it; a stream that ends inside it closes nothing again.
 * The profile counts the parts, not the gap, once per call; "measured"
 * leaves the process's MEASUREMENT_OFF out; a range kept inside a gap
 * begins where it ends. Ticks are us. */
static void test_gaps(void)
{
    enum { US = 1000 };
    static rec r;
    tfile tf;
    const char *exp = "gaps";
    tf_open(&tf, exp, 9, "defs.tts", TT_FILE_DEFS);
    std_defs(&r, 9, 1000000000000, TICK_US);
    put_u8(&r, TT_DEF_MEASUREMENT_OFF);
    put_v(&r, 40);
    put_v(&r, 100);
    d_end(&r, 1000, 10, 0, 0);
    tf_chunk(&tf, 0, &r, 0);
    tf_close(&tf);

    tf_open(&tf, exp, 9, "0.tts", TT_FILE_EVENTS);
    e_enter(&r, 0, 0);                 /* a 0 */
    e_enter(&r, 10, 1);                /* b 10 */
    e_leave(&r, 10);                   /* 20 */
    e_enter(&r, 10, 1);                /* b 30 */
    e_enter(&r, 5, 2);                 /* len 35 */
    e_tag(&r, TT_EV_RECORDING_OFF, 5); /* 40 */
    e_leave(&r, 20);                   /* len returned inside the gap, 60 */
    e_tag(&r, TT_EV_RECORDING_ON, 40); /* 100 */
    e_leave(&r, 10);                   /* b 110 */
    e_leave(&r, 10);                   /* a 120 */
    e_tag(&r, TT_EV_STREAM_END, 0);
    tf_chunk(&tf, 0, &r, 0);
    tf_close(&tf);
    tf_open(&tf, exp, 9, "1.tts", TT_FILE_EVENTS);
    e_enter(&r, 0, 0);                  /* a 0 */
    e_tag(&r, TT_EV_RECORDING_OFF, 10); /* 10 */
    e_enter(&r, 10, 1);                 /* b 20: ends the gap */
    e_leave(&r, 10);                    /* 30 */
    e_tag(&r, TT_EV_RECORDING_OFF, 10); /* 40 */
    e_tag(&r, TT_EV_STREAM_END, 10);    /* 50, inside the gap */
    tf_chunk(&tf, 0, &r, 0);
    tf_close(&tf);

    static stream_read s;
    if (read_stream(exp, 0, 0, &s) == 0) {
        CHECK(s.state == TT_STREAM_COMPLETE);
        CHECK_U64(s.n, 15);
        CHECK_U64(s.events_read, 11);
        CHECK(well_nested(&s));
        const tt_event *e = s.ev;
        CHECK(e[4].kind == TT_EV_ENTER && e[4].region == 2 && e[4].time == 35 * US && e[4].depth == 3);
        CHECK(e[5].kind == TT_EV_LEAVE && e[5].region == 2 && e[5].time == 40 * US && e[5].synthesized);
        CHECK(e[6].kind == TT_EV_LEAVE && e[6].region == 1 && e[6].time == 40 * US && e[6].depth == 1);
        CHECK(e[7].kind == TT_EV_LEAVE && e[7].region == 0 && e[7].time == 40 * US && e[7].depth == 0);
        CHECK(e[8].kind == TT_EV_RECORDING_OFF && e[8].time == 40 * US && e[8].depth == 0);
        CHECK(e[9].kind == TT_EV_ENTER && e[9].region == 0 && e[9].time == 100 * US && e[9].resumed);
        CHECK(e[10].kind == TT_EV_ENTER && e[10].region == 1 && e[10].depth == 2 && e[10].resumed);
        CHECK(e[11].kind == TT_EV_RECORDING_ON && e[11].time == 100 * US && e[11].depth == 2);
        CHECK(e[12].kind == TT_EV_LEAVE && e[12].region == 1 && e[12].time == 110 * US && !e[12].synthesized);
        CHECK(e[13].kind == TT_EV_LEAVE && e[13].region == 0 && e[13].time == 120 * US && e[13].depth == 0);
        CHECK(e[14].kind == TT_EV_STREAM_END);
    }
    if (read_stream(exp, 0, 1, &s) == 0) {
        CHECK(s.state == TT_STREAM_COMPLETE);
        CHECK_U64(s.n, 9);
        CHECK(well_nested(&s));
        const tt_event *e = s.ev;
        CHECK(e[1].kind == TT_EV_LEAVE && e[1].region == 0 && e[1].time == 10 * US && e[1].synthesized);
        CHECK(e[2].kind == TT_EV_RECORDING_OFF && e[2].time == 10 * US);
        CHECK(e[3].kind == TT_EV_ENTER && e[3].region == 0 && e[3].time == 20 * US && e[3].resumed);
        CHECK(e[4].kind == TT_EV_ENTER && e[4].region == 1 && e[4].depth == 2 && !e[4].resumed);
        CHECK(e[6].kind == TT_EV_LEAVE && e[6].region == 0 && e[6].time == 40 * US && e[6].synthesized);
        CHECK(e[7].kind == TT_EV_RECORDING_OFF && e[8].kind == TT_EV_STREAM_END && e[8].time == 50 * US);
    }

    tt_trace *t;
    tt_profile *p;
    tt_error err;
    if (!CHECK(tt_trace_open(exp_path(exp), &t, &err) == 0)) return;
    const tt_process *proc = tt_trace_process(t, 0);
    CHECK_U64(proc->gap_count, 1);
    CHECK_U64(tt_process_off_ns(proc, 0, 50 * US), 10 * US);
    if (CHECK(tt_profile_build(t, &p, &err) == 0)) {
        /* Spans 120 and 50, less the gap: 60 and 40. */
        CHECK_U64(p->total_ns, 100 * US);
        const tt_profile_region *a = find_region(p, "__main__:a"), *b = find_region(p, "__main__:b"),
                                *len = find_region(p, "builtins:len");
        if (CHECK(a && b && len)) {
            CHECK_U64(a->visits, 2);
            CHECK_U64(a->inclusive_ns, (40 + 20 + 10 + 20) * US);
            CHECK_U64(a->exclusive_ns, (30 + 20) * US);
            CHECK_U64(b->visits, 3);
            CHECK_U64(b->inclusive_ns, (10 + 10 + 10 + 10) * US);
            CHECK_U64(b->exclusive_ns, 35 * US);
            CHECK_U64(len->visits, 1);
            CHECK_U64(len->inclusive_ns, 5 * US);
        }
        tt_profile_free(p);
    }
    tt_trace_keep_range(t, 50 * US, 115 * US);
    tt_cursor *c;
    if (CHECK(tt_cursor_open(t, proc, 0, &c, &err) == 0)) {
        tt_event e[16];
        size_t n = 0;
        while (n < 16 && tt_cursor_next(c, &e[n])) n++;
        CHECK_U64(n, 5);
        CHECK(e[0].kind == TT_EV_ENTER && e[0].region == 0 && e[0].time == 100 * US && e[0].depth == 1);
        CHECK(e[1].kind == TT_EV_ENTER && e[1].region == 1 && e[1].depth == 2);
        CHECK(e[2].kind == TT_EV_RECORDING_ON);
        CHECK(e[3].kind == TT_EV_LEAVE && e[3].region == 1 && e[3].time == 110 * US);
        CHECK(e[4].kind == TT_EV_LEAVE && e[4].region == 0 && e[4].time == 115 * US && e[4].synthesized);
        tt_cursor_close(c);
    }
    tt_trace_close(t);
}

/* Zeros from byte `from` to `to` of a file: the hole of the chunks a ring
 * dropped (format.h), as a reader finds it, whether punched or not. */
static void zero_range(const char *exp, uint64_t pid, const char *file, long from, long to)
{
    char path[512];
    path_of(path, sizeof path, exp, pid, file);
    FILE *f = fopen(path, "r+b");
    fseek(f, from, SEEK_SET);
    for (long i = from; i < to; i++) fputc(0, f);
    fclose(f);
}

/* A ring (--keep): std_defs with the "keep" attribute (or without: then the
 * zeros are damage); stream 0 had `a` and `b` open where its chunk 1
 * began, whose OPEN names `b` alone (a stack deeper than it holds); stream
 * 1's records were all dropped, its tree alone left. */
static void write_ring(const char *exp, int keep)
{
    static rec r;
    tfile tf;
    tf_open(&tf, exp, 9, "defs.tts", TT_FILE_DEFS);
    std_defs(&r, 9, 1000000000000, TICK_NS);
    d_string(&r, 8, "keep");
    d_string(&r, 9, "1048576");
    put_u8(&r, TT_DEF_ATTRIBUTE);
    put_v(&r, keep ? 8 : 6);
    put_v(&r, 9);
    d_thread(&r, 1, 5, 4243);
    d_end(&r, 1000, 8, 0, 0);
    tf_chunk(&tf, 0, &r, 0);
    tf_close(&tf);

    tf_open(&tf, exp, 9, "0.tts", TT_FILE_EVENTS);
    e_enter(&r, 10, 0);
    e_enter(&r, 10, 1);
    tf_chunk(&tf, 100, &r, 0);
    e_tag(&r, TT_EV_OPEN, 0);
    put_v(&r, 300); /* since: the stream began at 100 */
    put_v(&r, 1);
    put_v(&r, 1);
    e_leave(&r, 5); /* b */
    e_leave(&r, 5); /* a: its ENTER dropped with chunk 0, no event */
    e_enter(&r, 5, 2);
    e_leave(&r, 5);
    e_tag(&r, TT_EV_STREAM_END, 5);
    tf_chunk(&tf, 400, &r, 0);
    put_u8(&r, 0);
    tf_chunk(&tf, 0, &r, TT_CHUNK_TREE | TT_CHUNK_TREE_COLUMNS);
    tf_close(&tf);
    zero_range(exp, 9, "0.tts", TT_FILE_HEADER_SIZE, tf.offsets[1]);

    tf_open(&tf, exp, 9, "1.tts", TT_FILE_EVENTS);
    e_enter(&r, 10, 0);
    e_leave(&r, 10);
    e_tag(&r, TT_EV_STREAM_END, 5);
    tf_chunk(&tf, 100, &r, 0);
    put_u8(&r, 0);
    tf_chunk(&tf, 0, &r, TT_CHUNK_TREE | TT_CHUNK_TREE_COLUMNS);
    tf_close(&tf);
    zero_range(exp, 9, "1.tts", TT_FILE_HEADER_SIZE, tf.offsets[1]);
}

static void test_ring(void)
{
    static stream_read s;
    write_ring("ring", 1);
    if (read_stream("ring", 0, 0, &s) != 0) return;
    CHECK(s.state == TT_STREAM_COMPLETE && well_nested(&s));
    CHECK_U64(s.n, 5);
    CHECK(s.ev[0].kind == TT_EV_ENTER && s.ev[0].region == 1 && s.ev[0].synthesized && s.ev[0].resumed);
    CHECK(s.ev[0].time == s.ev[1].time - 5 && s.ev[0].depth == 1);
    CHECK(s.ev[1].kind == TT_EV_LEAVE && s.ev[1].region == 1 && !s.ev[1].synthesized);
    CHECK(s.ev[2].kind == TT_EV_ENTER && s.ev[2].region == 2 && s.ev[2].time == s.ev[1].time + 10);
    CHECK(s.ev[4].kind == TT_EV_STREAM_END);
    CHECK_U64(s.events_read, 5); /* OPEN is no event; the LEAVE without its ENTER is read */
    if (read_stream("ring", 0, 1, &s) != 0) return;
    CHECK(s.state == TT_STREAM_COMPLETE && s.n == 0);

    tt_trace *t;
    tt_error err;
    CHECK(tt_trace_open(exp_path("ring"), &t, &err) == 0);
    const tt_process *p = tt_trace_process(t, 0);
    CHECK_U64(p->keep, 1048576);
    CHECK_U64(p->dropped_chunks, 2);
    CHECK_U64(p->dropped_ns, 300);
    tt_cursor *c;
    tt_event ev;
    CHECK(tt_cursor_open(t, p, 0, &c, &err) == 0 && tt_cursor_next(c, &ev) == 1);
    CHECK_U64(tt_cursor_began(c), tt_process_time(p, 100));
    tt_cursor_close(c);
    tt_trace_close(t);

    /* Without "keep" the zeros are no chunks dropped: the stream stops there. */
    write_ring("ring-damaged", 0);
    if (read_stream("ring-damaged", 0, 0, &s) != 0) return;
    CHECK(s.state != TT_STREAM_COMPLETE && s.n == 0);
}

int main(void)
{
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 2;
    }
    test_round_trip();
    test_multi_chunk();
    test_clock_sync();
    test_truncation();
    test_damage();
    test_seq_gap();
    test_lost_streams();
    test_open_errors();
    test_partial();
    test_bad_records();
    test_defs_cut();
    test_profile();
    test_random_streams();
    test_profile_model();
    test_gc_and_usage();
    test_tasks();
    test_tasks_model();
    test_tree_chunks();
    test_counted_chunks();
    test_gaps();
    test_ring();
    scratch_remove(root);
    return check_report();
}

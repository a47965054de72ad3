/* session.c -- starting and stopping a measurement of this process. */
#include "session.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "crash.h"
#include "file.h"

/* Guards the `closed` handshake between a thread's exit and a session's
 * stop, which may run at the same time on different threads. */
static pthread_mutex_t lifecycle_lock = PTHREAD_MUTEX_INITIALIZER;

/* The last epoch given to a session (session.h). */
static _Atomic uint64_t last_epoch;

/* The directory `name` in `dirfd` opened without following a link; -1
 * when it is not one only this user may change: another could put links
 * there where the writer creates its files. */
static int private_dir(int dirfd, const char *name, const char *path, struct stat *st, tt_error *err)
{
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fstat(fd, st) != 0) {
        tt_fail_errno(err, "cannot open %s", path);
        if (fd >= 0) close(fd);
        return -1;
    }
    if (!tt_dir_is_private(st)) {
        close(fd);
        return tt_fail(err, "cannot use %s: it is not a directory of this user's that only it may change", path);
    }
    return fd;
}

/* EXP/trace/<pid>, or <pid>.1, <pid>.2 ... when a session of this process
 * (or of an earlier process with the same pid) already wrote there; made
 * owner-only, and its device and inode noted, which the writer checks each
 * time it opens it again (writer.c: open_dir). */
static char *make_trace_dir(tt_session *s, const char *experiment, tt_error *err)
{
    size_t cap = strlen(experiment) + 64;
    char *path = malloc(cap);
    if (!path) return tt_fail(err, "out of memory"), NULL;
    snprintf(path, cap, "%s/trace", experiment);
    if (mkdir(path, TT_DIR_MODE) != 0 && errno != EEXIST)
        return tt_fail_errno(err, "cannot create %s", path), free(path), NULL;
    struct stat st;
    int trace = private_dir(AT_FDCWD, path, path, &st, err);
    if (trace < 0) return free(path), NULL;
    for (unsigned n = 0;; n++) {
        char name[48];
        if (n == 0)
            snprintf(name, sizeof name, "%ld", (long)getpid());
        else
            snprintf(name, sizeof name, "%ld.%u", (long)getpid(), n);
        snprintf(path, cap, "%s/trace/%s", experiment, name);
        if (mkdirat(trace, name, TT_DIR_MODE) == 0) {
            int fd = private_dir(trace, name, path, &st, err);
            close(trace);
            if (fd < 0) return free(path), NULL;
            close(fd);
            s->trace_dev = (uint64_t)st.st_dev;
            s->trace_ino = (uint64_t)st.st_ino;
            return path;
        }
        if (errno != EEXIST) {
            tt_fail_errno(err, "cannot create %s", path);
            close(trace);
            free(path);
            return NULL;
        }
    }
}

void tt_session_define(void *session, const uint8_t *record, size_t len)
{
    tt_session *s = session;
    pthread_mutex_lock(&s->defs_lock);
    tt_chunk *c = atomic_load_explicit(&s->defs.chunk, memory_order_relaxed);
    uint32_t used = atomic_load_explicit(&c->used, memory_order_relaxed);
    if (used + len > TT_CHUNK_PAYLOAD_SIZE) {
        c = tt_stream_rotate(&s->defs);
        used = 0;
    }
    memcpy(c->data + used, record, len);
    atomic_store_explicit(&c->used, used + (uint32_t)len, memory_order_release);
    pthread_mutex_unlock(&s->defs_lock);
}

int tt_session_try_define(tt_session *s, const uint8_t *records, size_t len)
{
    if (pthread_mutex_trylock(&s->defs_lock) != 0) return -1;
    tt_chunk *c = atomic_load_explicit(&s->defs.chunk, memory_order_relaxed);
    uint32_t used = c ? atomic_load_explicit(&c->used, memory_order_relaxed) : 0;
    if (c && used + len > TT_CHUNK_PAYLOAD_SIZE) {
        c = tt_stream_try_rotate(&s->defs);
        used = 0;
    }
    if (c && len <= TT_CHUNK_PAYLOAD_SIZE) {
        memcpy(c->data + used, records, len);
        atomic_store_explicit(&c->used, used + (uint32_t)len, memory_order_release);
    }
    pthread_mutex_unlock(&s->defs_lock);
    return c ? 0 : -1;
}

static void define_clock_sync(tt_session *s)
{
    tt_clock_sync sync;
    tt_clock_sync_now(&sync);
    uint8_t rec[TT_RECORD_MAX_FIXED], *p = rec;
    *p++ = TT_DEF_CLOCK_SYNC;
    p = tt_put_varint(p, sync.ticks);
    p = tt_put_varint(p, sync.monotonic_ns);
    p = tt_put_varint(p, sync.realtime_ns);
    tt_session_define(s, rec, (size_t)(p - rec));
}

void tt_session_define_gap(tt_session *s, uint64_t from, uint64_t to)
{
    uint8_t rec[TT_RECORD_MAX_FIXED], *p = rec;
    *p++ = TT_DEF_MEASUREMENT_OFF;
    p = tt_put_varint(p, from);
    p = tt_put_varint(p, to);
    tt_session_define(s, rec, (size_t)(p - rec));
}

void tt_session_clock_sync(tt_session *s)
{
    /* The writer must never wait for a lock whose holder may be waiting
     * for the writer (a program thread rotating defs on a full budget). */
    if (pthread_mutex_trylock(&s->defs_lock) != 0) return;
    tt_chunk *c = atomic_load_explicit(&s->defs.chunk, memory_order_relaxed);
    int fits = c && atomic_load_explicit(&c->used, memory_order_relaxed) + TT_RECORD_MAX_FIXED <= TT_CHUNK_PAYLOAD_SIZE;
    pthread_mutex_unlock(&s->defs_lock);
    if (fits) define_clock_sync(s);
}

static uint32_t intern(tt_session *s, const char *str)
{
    return tt_registry_string(s->registry, str ? str : "", str ? strlen(str) : 0);
}

static void define_process(tt_session *s)
{
    uint8_t rec[TT_RECORD_MAX_FIXED + 10], *p = rec;
    uint32_t name = intern(s, s->config.name);
    *p++ = TT_DEF_PROCESS;
    p = tt_put_varint(p, (uint64_t)getpid());
    p = tt_put_varint(p, (uint64_t)getppid());
    p = tt_put_varint(p, name);
    *p++ = tt_clock_tsc ? TT_CLOCK_TSC : TT_CLOCK_MONOTONIC; /* enum tt_clock_kind */
    p = tt_put_varint(p, tt_clock_ticks_per_second());
    tt_session_define(s, rec, (size_t)(p - rec));
    for (size_t i = 0; i < s->config.attribute_count; i++)
        tt_session_attribute(s, s->config.attributes[2 * i], s->config.attributes[2 * i + 1]);
}

void tt_session_attribute(tt_session *s, const char *key, const char *value)
{
    uint8_t rec[TT_RECORD_MAX_FIXED], *p = rec;
    uint32_t k = intern(s, key), v = intern(s, value);
    *p++ = TT_DEF_ATTRIBUTE;
    p = tt_put_varint(p, k);
    p = tt_put_varint(p, v);
    tt_session_define(s, rec, (size_t)(p - rec));
}

static void stream_init(tt_session *s, tt_stream *st, enum tt_file_kind kind, tt_chunk *first, uint64_t since)
{
    memset(st, 0, sizeof *st);
    st->session = s;
    st->kind = kind;
    st->fd = -1;
    st->epoch = atomic_load_explicit(&s->epoch, memory_order_relaxed);
    st->last_ticks = st->began = since;
    first->stream = st;
    first->seq = st->next_seq++;
    first->base_ticks = st->last_ticks;
    first->flags = 0;
    atomic_store_explicit(&first->used, 0, memory_order_relaxed);
    atomic_store_explicit(&st->chunk, first, memory_order_release);
}

int tt_session_start(const tt_session_config *config, tt_registry *registry, tt_session **out, tt_error *err)
{
    tt_clock_init();
    tt_session *s = calloc(1, sizeof *s);
    if (!s) return tt_fail(err, "out of memory");
    s->config = *config;
    s->registry = registry;
    atomic_store_explicit(&s->epoch, atomic_fetch_add(&last_epoch, 1) + 1, memory_order_relaxed);
    if (tt_pool_init(&s->pool, config->memory, err) < 0) goto fail_session;
    if (!(s->trace_dir = make_trace_dir(s, config->directory, err))) goto fail_pool;
    if (config->live && tt_live_create(config->name, config->directory, &s->live, err) < 0) goto fail_live;
    pthread_mutex_init(&s->defs_lock, NULL);
    stream_init(s, &s->defs, TT_FILE_DEFS, tt_pool_try_get(&s->pool), 0);
    if (tt_writer_start(&s->writer, s, err) < 0) goto fail_dir;

    /* Replay first: ids must reach the trace in order, and defining the
     * process may intern new strings. */
    tt_registry_set_sink(registry, tt_session_define, s);
    tt_registry_replay(registry);
    define_process(s);
    define_clock_sync(s);
    /* On disk before the program goes on: a process that dies at once
     * still leaves a trace that says what it was. */
    tt_writer_flush(&s->writer);
    tt_crash_catch();
    s->config.name = NULL; /* the caller's strings are not kept */
    s->config.attributes = NULL;
    s->config.attribute_count = 0;
    *out = s;
    return 0;

fail_dir:
    tt_pool_put(&s->pool, atomic_load(&s->defs.chunk));
    pthread_mutex_destroy(&s->defs_lock);
    tt_live_close(s->live);
fail_live:
    rmdir(s->trace_dir);
    free(s->trace_dir);
fail_pool:
    tt_pool_destroy(&s->pool);
fail_session:
    free(s);
    return -1;
}

tt_stream *tt_session_new_stream(tt_session *s, uint64_t native_tid, const char *name, size_t name_len)
{
    return tt_session_new_stream_open(s, native_tid, name, name_len, NULL);
}

/* Pushes the calls open before the measurement, and says how many of them
 * are regions: called before the writer can see the stream. */
static void open_at_start(tt_session *s, tt_stream *st, const tt_open_calls *open)
{
    uint64_t regions = 0;
    for (uint32_t i = 0; i < open->depth; i++) {
        uint32_t entry = open->stack[i];
        if (entry < TT_STACK_OWN) {
            tt_stream_enter(st, open->since, entry);
            regions += tt_stream_top(st) == entry; /* recorded (stream.h: not when its tree is lost) */
        } else {
            tt_stream_skip(st, entry);
        }
    }
    if (!regions) return;
    uint8_t rec[TT_RECORD_MAX_FIXED], *p = rec;
    *p++ = TT_DEF_OPEN_AT_START;
    p = tt_put_varint(p, st->index);
    p = tt_put_varint(p, regions);
    tt_session_define(s, rec, (size_t)(p - rec));
}

tt_stream *tt_session_new_stream_open(tt_session *s, uint64_t native_tid, const char *name, size_t name_len,
                                      const tt_open_calls *open)
{
    tt_stream *st = malloc(sizeof *st);
    if (!st) return NULL;
    tt_chunk *first = tt_pool_try_get(&s->pool);
    if (!first) {
        if (s->config.blocking_begin) s->config.blocking_begin();
        first = tt_pool_get_wait(&s->pool);
        if (s->config.blocking_end) s->config.blocking_end();
    }
    stream_init(s, st, TT_FILE_EVENTS, first, open ? open->since : tt_clock_now());
    st->native_tid = native_tid;
    tt_sampler_stream_init(st);
    if (tt_calltree_init(&st->tree) < 0) {
        tt_pool_put(&s->pool, first);
        free(st);
        return NULL;
    }
    st->fast_used_limit = TT_FAST_USED_LIMIT; /* the tree has room for the first chunk's calls */

    /* Defined before the writer can see the stream, so its file never
     * reaches disk ahead of its name. */
    uint32_t name_id = tt_registry_string(s->registry, name, name_len);
    st->index = s->stream_count++;
    uint8_t rec[TT_RECORD_MAX_FIXED], *p = rec;
    *p++ = TT_DEF_THREAD;
    p = tt_put_varint(p, st->index);
    p = tt_put_varint(p, name_id);
    p = tt_put_varint(p, native_tid);
    tt_session_define(s, rec, (size_t)(p - rec));
    if (open) open_at_start(s, st, open);

    pthread_mutex_lock(&lifecycle_lock);
    st->next = s->streams;
    s->streams = st;
    pthread_mutex_unlock(&lifecycle_lock);
    return st;
}

void tt_session_suspend(tt_session *s, uint64_t at)
{
    /* The time first: whoever sees the new epoch sees it too. */
    atomic_store_explicit(&s->suspended_at, at, memory_order_relaxed);
    atomic_store_explicit(&s->epoch, atomic_fetch_add(&last_epoch, 1) + 1, memory_order_release);
}

void tt_session_resync(tt_stream *st)
{
    tt_session *s = st->session;
    uint64_t epoch = atomic_load_explicit(&s->epoch, memory_order_acquire);
    uint64_t at = atomic_load_explicit(&s->suspended_at, memory_order_relaxed);
    tt_stream_leave_all(st, at);
    st->epoch = epoch;
}

/* Called with lifecycle_lock held. */
static void close_stream(tt_stream *st, uint64_t now)
{
    if (!atomic_load_explicit(&st->chunk, memory_order_relaxed)) return;
    if (st->epoch != atomic_load_explicit(&st->session->epoch, memory_order_acquire)) tt_session_resync(st);
    tt_sampler_stream_end(st);
    tt_stream_close(st, now);
    tt_calltree_free(&st->tree);
    tt_stream_free_skips(st);
}

void tt_session_thread_ended(tt_stream *stream)
{
    pthread_mutex_lock(&lifecycle_lock);
    close_stream(stream, tt_clock_now());
    stream->ended = stream->session != NULL;
    pthread_mutex_unlock(&lifecycle_lock);
}

int tt_session_trylock_streams(void) { return pthread_mutex_trylock(&lifecycle_lock) == 0; }
void tt_session_unlock_streams(void) { pthread_mutex_unlock(&lifecycle_lock); }
void tt_session_lock_streams(void) { pthread_mutex_lock(&lifecycle_lock); }

int tt_session_stop(tt_session *s, tt_session_stats *stats, tt_error *err)
{
    uint64_t now = tt_clock_now();
    memset(stats, 0, sizeof *stats);
    pthread_mutex_lock(&lifecycle_lock);
    stats->events = s->freed_events;
    stats->streams = s->freed;
    for (tt_stream *st = s->streams; st; st = st->next) {
        close_stream(st, now);
        stats->events += st->events;
        stats->streams++;
    }
    pthread_mutex_unlock(&lifecycle_lock);

    uint8_t rec[TT_RECORD_MAX_FIXED + 20], *p = rec;
    *p++ = TT_DEF_PROCESS_END;
    p = tt_put_varint(p, now);
    p = tt_put_varint(p, stats->events);
    p = tt_put_varint(p, s->pool.waits);
    p = tt_put_varint(p, s->pool.wait_ns);
    tt_session_define(s, rec, (size_t)(p - rec));
    define_clock_sync(s);
    tt_registry_set_sink(s->registry, NULL, NULL);

    pthread_mutex_lock(&s->defs_lock);
    tt_chunk *last = atomic_load_explicit(&s->defs.chunk, memory_order_relaxed);
    atomic_store_explicit(&s->defs.chunk, NULL, memory_order_release);
    pthread_mutex_unlock(&s->defs_lock);
    tt_writer_submit(&s->writer, last);

    int rc = tt_writer_stop(&s->writer, err);
    /* The streams the writer did not free stay allocated (see the header);
     * their session does not. */
    pthread_mutex_lock(&lifecycle_lock);
    for (tt_stream *st = s->streams; st; st = st->next) st->session = NULL;
    pthread_mutex_unlock(&lifecycle_lock);
    tt_crash_release();
    tt_live_close(s->live);
    stats->bytes = s->writer.bytes;
    stats->chunks = s->writer.chunks;
    stats->waits = s->pool.waits;
    stats->wait_ns = s->pool.wait_ns;
    stats->stalls = s->writer.stalls;
    stats->stalled_ns = s->writer.stalled_ns;
    stats->stall = s->writer.stall;
    stats->error_errno = rc < 0 ? s->writer.error_errno : 0;
    stats->dropped = s->writer.ring.dropped;
    stats->keep_errno = s->writer.ring.unsupported;
    tt_pool_destroy(&s->pool);
    pthread_mutex_destroy(&s->defs_lock);
    tt_sampler_free(&s->sampler);
    free(s->trace_dir);
    free(s);
    return rc;
}

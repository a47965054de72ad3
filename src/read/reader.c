/* reader.c -- reading an experiment's native trace (see reader.h).
 *
 * Three layers:
 *   chunk_file   one .tts file, chunk by chunk: header, sequence, checksum,
 *                codec. Decides where the intact part of a file ends and
 *                whether what follows is a cut or damage.
 *   definitions  defs.tts of each process -> tt_process (tables, clock).
 *   cursor       a stream file -> well-nested events in ns since the epoch.
 * Records inside a chunk are decoded by records.c.
 */
#define _GNU_SOURCE /* SEEK_DATA */
#include "reader.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"
#include "grow.h"
#include "records.h"

/* Stream numbers are thread indexes. A larger one, in a definition or a file
 * name, is not something the writer makes, and would size the thread table. */
#define MAX_STREAMS (1u << 20)

static const char UNDEFINED[] = "<undefined>";

/* The reason in a problem line ("checksum mismatch"); sized so that the
 * lines built around it fit their buffers. */
#define WHY_SIZE 160

/* ---- string arena: the definitions' strings live as long as the trace ---- */

typedef struct arena_block {
    struct arena_block *next;
    size_t used, cap;
    char data[];
} arena_block;

#define ARENA_BLOCK_SIZE (64u * 1024u)

/* A NUL-terminated copy of len bytes, or NULL when memory runs out. */
static char *arena_strndup(arena_block **arena, const void *s, size_t len)
{
    arena_block *b = *arena;
    if (!b || b->cap - b->used < len + 1) {
        size_t cap = len + 1 > ARENA_BLOCK_SIZE ? len + 1 : ARENA_BLOCK_SIZE;
        b = malloc(sizeof *b + cap);
        if (!b) return NULL;
        b->used = 0;
        b->cap = cap;
        /* A string bigger than a block gets a block of its own, placed behind
         * the current one so that the current one's free room stays in use. */
        if (*arena && cap > ARENA_BLOCK_SIZE) {
            b->next = (*arena)->next;
            (*arena)->next = b;
        } else {
            b->next = *arena;
            *arena = b;
        }
    }
    char *out = b->data + b->used;
    memcpy(out, s, len);
    out[len] = '\0';
    b->used += len + 1;
    return out;
}

static void arena_free(arena_block *b)
{
    while (b) {
        arena_block *next = b->next;
        free(b);
        b = next;
    }
}

/* ---- chunk_file: one .tts file read chunk by chunk ---- */

typedef struct chunk_file {
    FILE *f;
    uint64_t file_size;    /* when opened */
    uint64_t offset;       /* where the next chunk starts */
    uint64_t chunk_offset; /* where the chunk just read starts */
    uint32_t chunks;       /* intact chunks read, = the seq expected next */
    uint32_t dropped;      /* chunks dropped from its start (cf_skip_dropped) */
    int after_partial;     /* the chunk just read is a PARTIAL snapshot */
    uint32_t crc;          /* the checksum of the chunk just read */

    struct tt_chunk_header h; /* of the chunk just read ... */
    const uint8_t *payload;   /* ... and its h.raw_size decoded bytes */
    uint8_t *stored, *decoded;
    size_t stored_cap, decoded_cap;

    /* Once stopped, no more chunks: state is COMPLETE at a clean end of file,
     * else CUT or CORRUPT with what and where in why/problem_*. */
    int stopped;
    tt_stream_state state;
    int newer; /* stopped at its header: a newer tracetop wrote it (why says so) */
    char why[WHY_SIZE];
    uint32_t problem_chunk;
    uint64_t problem_offset;
} chunk_file;

static int cf_stop_at(chunk_file *cf, tt_stream_state state, uint32_t chunk, uint64_t offset, const char *why)
{
    cf->stopped = 1;
    cf->state = state;
    cf->problem_chunk = chunk;
    cf->problem_offset = offset;
    snprintf(cf->why, sizeof cf->why, "%s", why);
    return 0;
}

/* Stops where the next chunk would start. Returns 0, for `return cf_stop(...)`
 * from cf_next. */
static int cf_stop(chunk_file *cf, tt_stream_state state, const char *why)
{
    return cf_stop_at(cf, state, cf->chunks, cf->offset, why);
}

/* Is there an intact chunk header, the one expected after the chunk at
 * cf->offset, where that chunk's header (intact or not) says it ends? */
static int intact_chunk_follows(chunk_file *cf, const uint8_t *header)
{
    uint64_t next = cf->offset + TT_CHUNK_HEADER_SIZE + tt_get_u32(header + 16);
    uint8_t bytes[TT_CHUNK_HEADER_SIZE];
    struct tt_chunk_header h;
    const char *why;
    return next + TT_CHUNK_HEADER_SIZE <= cf->file_size && fseeko(cf->f, (off_t)next, SEEK_SET) == 0 &&
           fread(bytes, 1, sizeof bytes, cf->f) == sizeof bytes && tt_chunk_header_decode(bytes, &h, &why) == 0 &&
           h.seq == cf->chunks + 1;
}

/* The bytes at cf->offset are not a valid next chunk: damage, or the point
 * where the writing stopped? The writer rewrites only the end of a file,
 * the chunk it is filling (PARTIAL snapshots, then the full chunk over
 * them; writer.c), so a crash leaves unfinished or stale bytes there and
 * nowhere else. Bad bytes are damage when intact data follows them, when
 * more follows than one unfinished chunk could leave, or when they are a
 * chunk whose length, by its header, ends exactly where the file does: the
 * writer's write that stopped partway leaves the file short of the chunk's
 * end, or, written over a longer PARTIAL snapshot, that snapshot's tail
 * behind it. Otherwise the file was cut there. After a PARTIAL chunk
 * nothing more can have been complete. */
static int cf_stale(chunk_file *cf) { return cf_stop(cf, TT_STREAM_CUT, "stale bytes after a partial chunk"); }

static int cf_invalid(chunk_file *cf, const uint8_t *header, const char *why)
{
    if (cf->after_partial) return cf_stale(cf);
    uint64_t left = cf->file_size - cf->offset;
    if (intact_chunk_follows(cf, header) || left > TT_CHUNK_HEADER_SIZE + TT_CHUNK_PAYLOAD_SIZE ||
        left == TT_CHUNK_HEADER_SIZE + (uint64_t)tt_get_u32(header + 16))
        return cf_stop(cf, TT_STREAM_CORRUPT, why);
    char unfinished[sizeof cf->why];
    snprintf(unfinished, sizeof unfinished, "unfinished last chunk: %s", why);
    return cf_stop(cf, TT_STREAM_CUT, unfinished);
}

static int cf_read_error(chunk_file *cf)
{
    char why[96];
    snprintf(why, sizeof why, "read error (%s)", strerror(errno));
    return cf_stop(cf, TT_STREAM_CORRUPT, why);
}

/* Ends the file at the chunk just read, whose records are damaged. */
static void cf_damage_chunk(chunk_file *cf, const char *why)
{
    cf_stop_at(cf, TT_STREAM_CORRUPT, cf->chunks - 1, cf->chunk_offset, why);
}

/* Makes *buf hold at least `need` bytes; its content is not kept. */
static int reserve_bytes(uint8_t **buf, size_t *cap, size_t need)
{
    if (*buf && need <= *cap) return 0;
    /* Most chunks are the writer's size: allocate that once and keep it. */
    size_t n = need > TT_CHUNK_PAYLOAD_SIZE ? need : TT_CHUNK_PAYLOAD_SIZE;
    free(*buf);
    *buf = malloc(n);
    *cap = *buf ? n : 0;
    return *buf ? 0 : -1;
}

/* Opens a file and checks its header. Fails only when the file cannot be
 * opened; a bad header stops the file (cf->stopped) with what is wrong. */
static int cf_open(chunk_file *cf, const char *path, enum tt_file_kind want, tt_error *err)
{
    memset(cf, 0, sizeof *cf);
    struct stat st;
    int fd = tt_open_regular(path, &st);
    if (fd < 0 || !(cf->f = fdopen(fd, "rb"))) {
        if (fd < 0 && errno == EINVAL)
            tt_fail(err, "cannot open %s: not a regular file", path);
        else
            tt_fail_errno(err, "cannot open %s", path);
        if (fd >= 0) close(fd);
        return -1;
    }
    cf->file_size = (uint64_t)st.st_size;

    uint8_t header[TT_FILE_HEADER_SIZE];
    enum tt_file_kind kind;
    const char *why;
    int rc;
    size_t n = fread(header, 1, sizeof header, cf->f);
    if (n < sizeof header) {
        if (ferror(cf->f))
            cf_read_error(cf);
        else
            cf_stop(cf, TT_STREAM_CUT, "truncated file header");
    } else if ((rc = tt_file_header_decode(header, n, &kind, &why)) != 0) {
        cf->newer = rc == TT_FILE_NEWER;
        cf_stop(cf, TT_STREAM_CORRUPT, why);
    } else if (kind != want) {
        cf_stop(cf, TT_STREAM_CORRUPT, "wrong kind of trace file");
    } else {
        cf->offset = TT_FILE_HEADER_SIZE;
    }
    return 0;
}

/* In a ring (format.h), skips the zeros where a file's oldest chunks were
 * dropped, to its first chunk kept, whose seq becomes the one expected:
 * the chunks before it were dropped, not lost. SEEK_DATA passes over the
 * holes; the zeros of the blocks a hole only began are read through. */
static void cf_skip_dropped(chunk_file *cf)
{
    if (cf->stopped) return;
    int fd = fileno(cf->f);
    uint64_t at = cf->offset;
    uint8_t buf[4096];
    while (at < cf->file_size) {
        off_t data = lseek(fd, (off_t)at, SEEK_DATA);
        if (data < 0 && errno == ENXIO) {
            at = cf->file_size; /* zeros to the end */
            break;
        }
        if (data > (off_t)at) at = (uint64_t)data;
        ssize_t n = pread(fd, buf, sizeof buf, (off_t)at);
        if (n <= 0) break;
        ssize_t i = 0;
        while (i < n && !buf[i]) i++;
        at += (uint64_t)i;
        if (i < n) break;
    }
    uint8_t header[TT_CHUNK_HEADER_SIZE];
    struct tt_chunk_header h;
    const char *why;
    if (at != cf->offset && pread(fd, header, sizeof header, (off_t)at) == (ssize_t)sizeof header &&
        tt_chunk_header_decode(header, &h, &why) == 0)
        cf->chunks = cf->dropped = h.seq;
    cf->offset = at;
    /* lseek moved the descriptor under the stream's buffer: placed again. */
    if (fseeko(cf->f, (off_t)at, SEEK_SET) != 0) cf_read_error(cf);
}

static void cf_close(chunk_file *cf)
{
    if (cf->f) fclose(cf->f);
    free(cf->stored);
    free(cf->decoded);
}

/* Reads the next chunk: 1 with cf->h and cf->payload set, 0 when the file
 * ends here (cf->state says how). A chunk that runs past the end of the file
 * is a cut; one that is there but wrong is damage or a cut (cf_invalid). */
static int cf_next(chunk_file *cf)
{
    if (cf->stopped) return 0;

    uint8_t header[TT_CHUNK_HEADER_SIZE];
    size_t n = fread(header, 1, sizeof header, cf->f);
    if (n < sizeof header) {
        if (ferror(cf->f)) return cf_read_error(cf);
        if (n == 0) return cf_stop(cf, TT_STREAM_COMPLETE, "");
        return cf_stop(cf, TT_STREAM_CUT, "truncated chunk header");
    }

    struct tt_chunk_header h;
    const char *why;
    if (tt_chunk_header_decode(header, &h, &why) != 0) return cf_invalid(cf, header, why);
    if (reserve_bytes(&cf->stored, &cf->stored_cap, h.stored_size) != 0)
        return cf_stop(cf, TT_STREAM_CUT, "out of memory");
    n = fread(cf->stored, 1, h.stored_size, cf->f);
    if (n < h.stored_size) {
        if (ferror(cf->f)) return cf_read_error(cf);
        return cf_stop(cf, TT_STREAM_CUT, "truncated chunk");
    }
    if (!tt_chunk_verify(header, cf->stored)) return cf_invalid(cf, header, "checksum mismatch");
    /* Checked after the checksum: an intact chunk out of sequence is no
     * unfinished write but a lost chunk. */
    if (h.seq != cf->chunks) {
        if (cf->after_partial) return cf_stale(cf);
        char gap[64];
        snprintf(gap, sizeof gap, "chunk sequence gap (found chunk %" PRIu32 ")", h.seq);
        return cf_stop(cf, TT_STREAM_CORRUPT, gap);
    }

    if (h.codec == TT_CODEC_NONE) {
        cf->payload = cf->stored;
    } else {
        if (reserve_bytes(&cf->decoded, &cf->decoded_cap, h.raw_size) != 0)
            return cf_stop(cf, TT_STREAM_CUT, "out of memory");
        if (tt_payload_decode(&h, cf->stored, cf->decoded, &why) != 0) return cf_invalid(cf, header, why);
        cf->payload = cf->decoded;
    }

    cf->h = h;
    cf->crc = tt_get_u32(header + TT_CHUNK_CRC_OFFSET);
    cf->chunk_offset = cf->offset;
    cf->offset += TT_CHUNK_HEADER_SIZE + h.stored_size;
    cf->chunks++;
    cf->after_partial = (h.flags & TT_CHUNK_PARTIAL) != 0;
    return 1;
}

/* What stopped the file, in words: "cut after 17 chunks at byte 1114112
 * (truncated chunk)" or "corrupt: checksum mismatch in chunk 5 at byte 327712". */
static void cf_describe(const chunk_file *cf, char *buf, size_t size)
{
    if (cf->newer)
        snprintf(buf, size, "%s", cf->why);
    else if (cf->state == TT_STREAM_CUT)
        snprintf(buf, size, "cut after %" PRIu32 " chunk%s at byte %" PRIu64 " (%s)", cf->chunks,
                 cf->chunks == 1 ? "" : "s", cf->problem_offset, cf->why);
    else if (cf->problem_offset < TT_FILE_HEADER_SIZE)
        snprintf(buf, size, "corrupt: %s at byte 0", cf->why);
    else
        snprintf(buf, size, "corrupt: %s in chunk %" PRIu32 " at byte %" PRIu64, cf->why, cf->problem_chunk,
                 cf->problem_offset);
}

/* ---- the trace ---- */

typedef struct trace_problem {
    char *line;
    int corrupt;
} trace_problem;

struct tt_trace {
    size_t process_count, process_cap;
    tt_process *processes;
    size_t problem_count, problem_cap;
    trace_problem *problems;
    arena_block *arena; /* every string of every process */
    uint64_t from, to;  /* the range kept (tt_trace_keep_range) */
    tt_read_progress *progress;
    int trust_records; /* tt_trace_trust_records */
    int narrowed;      /* a thread or regions left out (tt_trace_whole) */
};

/* "a/b" in a malloc'd string, or NULL when memory runs out. */
static char *path_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *path = malloc(a + 1 + b + 1);
    if (!path) return NULL;
    memcpy(path, dir, a);
    path[a] = '/';
    memcpy(path + a + 1, name, b + 1);
    return path;
}

/* Parses a decimal number the way the writer prints them (no sign, no
 * leading zeros) at *p: 0 with *p moved past it, or -1. */
static int parse_number(const char **p, uint64_t *out)
{
    const char *q = *p;
    uint64_t v = 0;
    if (*q < '0' || *q > '9' || (q[0] == '0' && q[1] >= '0' && q[1] <= '9')) return -1;
    for (; *q >= '0' && *q <= '9'; q++) {
        if (v > (UINT64_MAX - 9) / 10) return -1;
        v = v * 10 + (uint64_t)(*q - '0');
    }
    *p = q;
    *out = v;
    return 0;
}

/* A stream file name, "<n>.tts": 0 and *n set, or -1. */
static int parse_stream_name(const char *name, uint64_t *n)
{
    return parse_number(&name, n) == 0 && strcmp(name, ".tts") == 0 ? 0 : -1;
}

/* A process directory name: "<pid>", or "<pid>.<k>" for the k-th later
 * measurement session of the same pid (session.c). 0 with both set, or -1. */
static int parse_process_name(const char *name, uint64_t *pid, uint64_t *session)
{
    *session = 0;
    if (parse_number(&name, pid) != 0) return -1;
    if (*name == '.' && (++name, parse_number(&name, session) != 0 || *session == 0)) return -1;
    return *name ? -1 : 0;
}

static void process_free(tt_process *p)
{
    for (size_t i = 0; i < p->comm_count; i++) free(p->comms[i].members);
    free(p->comms);
    free(p->dir);
    free(p->strings);
    free(p->regions);
    free(p->left_out);
    for (size_t i = 0; i < p->thread_count; i++) free(p->threads[i].usage);
    free(p->threads);
    free(p->attributes);
    free(p->task_names);
    free(p->gaps);
}

/* ---- definitions: defs.tts -> tt_process ---- */

enum { LOAD_OK = 0, LOAD_DAMAGE = -1, LOAD_NOMEM = -2 };

typedef struct clock_sync {
    uint64_t ticks, monotonic_ns, realtime_ns;
} clock_sync;

typedef struct proc_loader {
    tt_trace *t;
    tt_process *p;
    size_t string_cap, region_cap, thread_cap, attribute_cap, comm_cap, task_cap, gap_cap;
    int have_process;
    unsigned syncs;
    clock_sync first_sync, last_sync;
    char why[WHY_SIZE]; /* LOAD_DAMAGE: what is wrong */
} proc_loader;

static int damage(proc_loader *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int damage(proc_loader *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->why, sizeof l->why, fmt, ap);
    va_end(ap);
    return LOAD_DAMAGE;
}

/* Makes streams 0 .. n-1 exist in the thread table. */
static int ensure_threads(proc_loader *l, size_t n)
{
    tt_process *p = l->p;
    if (n <= p->thread_count) return LOAD_OK;
    if (TT_RESERVE(p->threads, l->thread_cap, n) != 0) return LOAD_NOMEM;
    memset(p->threads + p->thread_count, 0, (n - p->thread_count) * sizeof *p->threads);
    p->thread_count = n;
    return LOAD_OK;
}

static int apply_comm(proc_loader *l, const tt_def_record *d)
{
    tt_process *p = l->p;
    uint64_t id = d->mpi_comm.id, listed = d->mpi_comm.listed;
    if (id != p->comm_count || id >= UINT32_MAX) return damage(l, "communicator %" PRIu64 " defined out of order", id);
    if (d->mpi_comm.kind < TT_COMM_WORLD || d->mpi_comm.kind > TT_COMM_DERIVED || d->mpi_comm.parent > id ||
        (listed != 0 && listed != d->mpi_comm.size) || listed > TT_MPI_COMM_LISTED_MAX)
        return damage(l, "communicator %" PRIu64 " is malformed", id);
    if (TT_RESERVE(p->comms, l->comm_cap, p->comm_count + 1) != 0) return LOAD_NOMEM;
    tt_comm c = {.kind = d->mpi_comm.kind,
                 .parent = d->mpi_comm.parent ? (uint32_t)(d->mpi_comm.parent - 1) : UINT32_MAX,
                 .seq = d->mpi_comm.seq,
                 .size = d->mpi_comm.size,
                 .listed = (size_t)listed};
    if (listed && !(c.members = malloc(listed * sizeof *c.members))) return LOAD_NOMEM;
    const uint8_t *q = d->mpi_comm.members;
    for (size_t i = 0; i < listed; i++) {
        uint64_t member;
        if (tt_get_varint(&q, d->mpi_comm.members_end, &member) != 0 || member > UINT32_MAX) {
            free(c.members);
            return damage(l, "communicator %" PRIu64 " has a member out of range", id);
        }
        c.members[i] = (uint32_t)member;
    }
    p->comms[p->comm_count++] = c;
    return LOAD_OK;
}

/* A THREAD_USAGE record, kept in ticks until the clock is known
 * (finish_trace). Its stream is defined before it (session.c). */
static int apply_usage(proc_loader *l, const tt_def_record *d)
{
    tt_process *p = l->p;
    uint64_t stream = d->thread_usage.stream;
    if (stream >= p->thread_count || !p->threads[stream].defined)
        return damage(l, "usage of an undefined thread stream %" PRIu64, stream);
    if (d->thread_usage.gil_samples > d->thread_usage.samples)
        return damage(l, "usage of thread stream %" PRIu64 " has more GIL samples than samples", stream);
    tt_thread *th = &p->threads[stream];
    if (TT_RESERVE(th->usage, th->usage_cap, th->usage_count + 1) != 0) return LOAD_NOMEM;
    th->usage[th->usage_count++] = (tt_thread_usage){d->thread_usage.ticks, d->thread_usage.cpu_ns,
                                                     d->thread_usage.samples, d->thread_usage.gil_samples};
    return LOAD_OK;
}

/* Applies one definition. Ids must come dense and in order and refer only to
 * strings already defined (format.h); anything else is damage, not guessed at. */
static int apply_def(proc_loader *l, const tt_def_record *d)
{
    tt_process *p = l->p;
    switch (d->tag) {
    case TT_DEF_STRING: {
        /* Ids stay below UINT32_MAX: events carry them as uint32_t, with
         * the count itself as the placeholder. */
        if (d->string.id != p->string_count || d->string.id >= UINT32_MAX)
            return damage(l, "string %" PRIu64 " defined out of order", d->string.id);
        if (TT_RESERVE(p->strings, l->string_cap, p->string_count + 1) != 0) return LOAD_NOMEM;
        const char *s = arena_strndup(&l->t->arena, d->string.bytes, d->string.len);
        if (!s) return LOAD_NOMEM;
        p->strings[p->string_count++] = s;
        return LOAD_OK;
    }
    case TT_DEF_REGION:
        if (d->region.id != p->region_count || d->region.id >= UINT32_MAX)
            return damage(l, "region %" PRIu64 " defined out of order", d->region.id);
        if (d->region.name >= p->string_count || d->region.file >= p->string_count)
            return damage(l, "region %" PRIu64 " refers to an undefined string", d->region.id);
        if (d->region.line > UINT32_MAX || d->region.kind < TT_REGION_PYTHON || d->region.kind > TT_REGION_KIND_LAST)
            return damage(l, "region %" PRIu64 " has a bad line or kind", d->region.id);
        if (TT_RESERVE(p->regions, l->region_cap, p->region_count + 1) != 0) return LOAD_NOMEM;
        p->regions[p->region_count++] = (tt_region){
            .name = p->strings[d->region.name],
            .file = p->strings[d->region.file],
            .line = (uint32_t)d->region.line,
            .kind = d->region.kind,
        };
        return LOAD_OK;
    case TT_DEF_THREAD: {
        /* Threads register concurrently, so their definitions need not come
         * in stream order; a stream defined again was renamed. */
        if (d->thread.stream >= MAX_STREAMS)
            return damage(l, "thread stream number %" PRIu64 " out of range", d->thread.stream);
        if (d->thread.name >= p->string_count)
            return damage(l, "thread %" PRIu64 " refers to an undefined string", d->thread.stream);
        int rc = ensure_threads(l, (size_t)d->thread.stream + 1);
        if (rc != LOAD_OK) return rc;
        tt_thread *th = &p->threads[d->thread.stream];
        th->name = p->strings[d->thread.name];
        th->native_tid = d->thread.native_tid;
        th->defined = 1;
        return LOAD_OK;
    }
    case TT_DEF_PROCESS:
        if (l->have_process) return damage(l, "a second PROCESS record");
        if (d->process.name >= p->string_count) return damage(l, "PROCESS refers to an undefined string");
        if (d->process.clock != TT_CLOCK_MONOTONIC && d->process.clock != TT_CLOCK_TSC)
            return damage(l, "PROCESS has an unknown clock");
        p->pid = d->process.pid;
        p->ppid = d->process.ppid;
        p->name = p->strings[d->process.name];
        p->clock_kind = d->process.clock;
        p->ticks_per_second = d->process.ticks_per_second;
        l->have_process = 1;
        return LOAD_OK;
    case TT_DEF_CLOCK_SYNC: {
        clock_sync s = {d->clock_sync.ticks, d->clock_sync.monotonic_ns, d->clock_sync.realtime_ns};
        if (l->syncs++ == 0) l->first_sync = s;
        l->last_sync = s;
        return LOAD_OK;
    }
    case TT_DEF_ATTRIBUTE:
        if (d->attribute.key >= p->string_count || d->attribute.value >= p->string_count)
            return damage(l, "ATTRIBUTE refers to an undefined string");
        if (TT_RESERVE(p->attributes, l->attribute_cap, p->attribute_count + 1) != 0) return LOAD_NOMEM;
        p->attributes[p->attribute_count++] = (tt_attribute){p->strings[d->attribute.key],
                                                             p->strings[d->attribute.value]};
        return LOAD_OK;
    case TT_DEF_PROCESS_END:
        p->ended = 1;
        p->end_time = d->process_end.ticks; /* ticks until the epoch is known: finish_trace */
        p->events = d->process_end.events;
        p->waits = d->process_end.waits;
        p->wait_ns = d->process_end.wait_ns;
        return LOAD_OK;
    case TT_DEF_MPI_RANK:
        if (d->mpi_rank.rank >= d->mpi_rank.size || d->mpi_rank.size > UINT32_MAX)
            return damage(l, "MPI rank %" PRIu64 " of %" PRIu64, d->mpi_rank.rank, d->mpi_rank.size);
        p->mpi_rank = d->mpi_rank.rank;
        p->mpi_size = d->mpi_rank.size;
        return LOAD_OK;
    case TT_DEF_MPI_COMM:
        return apply_comm(l, d);
    case TT_DEF_TASK:
    case TT_DEF_TASK_NAMED: {
        /* dense from 0; an id defined again is the task renamed */
        if (d->task.id > p->task_count || d->task.id >= UINT32_MAX)
            return damage(l, "task %" PRIu64 " defined out of order", d->task.id);
        if (d->tag == TT_DEF_TASK && d->task.name >= p->string_count)
            return damage(l, "task %" PRIu64 " refers to an undefined string", d->task.id);
        const char *name = d->tag == TT_DEF_TASK ? p->strings[d->task.name]
                                                 : arena_strndup(&l->t->arena, d->task.bytes, d->task.len);
        if (!name) return LOAD_NOMEM;
        if (d->task.id == p->task_count) {
            if (TT_RESERVE(p->task_names, l->task_cap, p->task_count + 1) != 0) return LOAD_NOMEM;
            p->task_count++;
        }
        p->task_names[d->task.id] = name;
        return LOAD_OK;
    }
    case TT_DEF_COROUTINE:
        if (d->coroutine.region >= p->region_count)
            return damage(l, "coroutine %" PRIu64 " is no region", d->coroutine.region);
        p->regions[d->coroutine.region].awaits = 1;
        return LOAD_OK;
    case TT_DEF_OPEN_AT_START: {
        if (d->open_at_start.stream >= MAX_STREAMS)
            return damage(l, "thread stream number %" PRIu64 " out of range", d->open_at_start.stream);
        int rc = ensure_threads(l, (size_t)d->open_at_start.stream + 1);
        if (rc != LOAD_OK) return rc;
        p->threads[d->open_at_start.stream].open_at_start = d->open_at_start.count;
        return LOAD_OK;
    }
    case TT_DEF_THREAD_USAGE:
        return apply_usage(l, d);
    case TT_DEF_MEASUREMENT_OFF:
        if (d->measurement_off.to < d->measurement_off.from)
            return damage(l, "a measurement gap that ends before it begins");
        if (TT_RESERVE(p->gaps, l->gap_cap, p->gap_count + 1) != 0) return LOAD_NOMEM;
        p->gaps[p->gap_count++] = (struct tt_gap){d->measurement_off.from, d->measurement_off.to};
        return LOAD_OK;
    }
    return damage(l, "unknown definition record"); /* records.c yields known tags only */
}

/* Reads every chunk of defs.tts into l->p. LOAD_NOMEM or LOAD_OK; damage
 * and cuts only stop the file (cf->state says so). */
static int read_defs(proc_loader *l, chunk_file *cf)
{
    while (cf_next(cf)) {
        tt_records it;
        tt_def_record d;
        const char *why;
        int k;
        tt_records_init(&it, cf->payload, cf->h.raw_size, 0, NULL);
        while ((k = tt_records_next_def(&it, &d, &why)) > 0) {
            int rc = apply_def(l, &d);
            if (rc == LOAD_NOMEM) return rc;
            if (rc == LOAD_DAMAGE) {
                cf_damage_chunk(cf, l->why);
                return LOAD_OK;
            }
        }
        if (k < 0) {
            cf_damage_chunk(cf, why);
            return LOAD_OK;
        }
    }
    return LOAD_OK;
}

/* The clock line: through the first and last CLOCK_SYNC when they are two
 * distinct points (this absorbs a TSC rate that is slightly off), else the
 * rate PROCESS states. Real time is anchored at the first sync. */
static int set_clock(proc_loader *l)
{
    tt_process *p = l->p;
    const clock_sync *a = &l->first_sync, *b = &l->last_sync;
    if (b->ticks > a->ticks && b->monotonic_ns > a->monotonic_ns)
        p->ns_per_tick = (double)(b->monotonic_ns - a->monotonic_ns) / (double)(b->ticks - a->ticks);
    else if (p->ticks_per_second > 0)
        p->ns_per_tick = 1e9 / (double)p->ticks_per_second;
    else
        return damage(l, "no clock rate");
    p->sync_ticks = a->ticks;
    p->start_realtime_ns = a->realtime_ns;
    return LOAD_OK;
}

/* Marks the streams that have an events file; names the undefined ones.
 * A stream file that is no regular file (a FIFO would block its reader) is
 * marked in *unreadable (malloc'd, a byte for each of the first *marked
 * streams) and left out. */
static int scan_streams(proc_loader *l, uint8_t **unreadable, size_t *marked)
{
    tt_process *p = l->p;
    DIR *dir = opendir(p->dir);
    if (!dir) return damage(l, "cannot list its directory (%s)", strerror(errno));
    int rc = LOAD_OK;
    size_t unreadable_cap = 0;
    struct dirent *e;
    while (rc == LOAD_OK && (e = readdir(dir))) {
        uint64_t n;
        if (parse_stream_name(e->d_name, &n) != 0 || n >= MAX_STREAMS) continue;
        rc = ensure_threads(l, (size_t)n + 1);
        struct stat st;
        /* Followed, as opening it would; stat waits for no FIFO. Gone
         * since it was listed: opening it will say so. */
        if (rc != LOAD_OK || fstatat(dirfd(dir), e->d_name, &st, 0) != 0 || S_ISREG(st.st_mode)) {
            if (rc == LOAD_OK) p->threads[n].present = 1;
            continue;
        }
        size_t had = unreadable_cap;
        if (TT_RESERVE(*unreadable, unreadable_cap, p->thread_count) != 0) {
            rc = LOAD_NOMEM;
            break;
        }
        memset(*unreadable + had, 0, unreadable_cap - had);
        (*unreadable)[n] = 1;
    }
    closedir(dir);
    *marked = unreadable_cap;
    for (size_t i = 0; rc == LOAD_OK && i < p->thread_count; i++) {
        if (p->threads[i].defined) continue;
        char name[32];
        int len = snprintf(name, sizeof name, "stream %zu", i);
        if (!(p->threads[i].name = arena_strndup(&l->t->arena, name, (size_t)len))) rc = LOAD_NOMEM;
    }
    return rc;
}

/* The "<undefined>" entries behind the tables (reader.h). */
static int add_placeholders(proc_loader *l)
{
    tt_process *p = l->p;
    if (TT_RESERVE(p->strings, l->string_cap, p->string_count + 1) != 0 ||
        TT_RESERVE(p->regions, l->region_cap, p->region_count + 1) != 0 ||
        TT_RESERVE(p->comms, l->comm_cap, p->comm_count + 1) != 0 ||
        TT_RESERVE(p->task_names, l->task_cap, p->task_count + 1) != 0)
        return LOAD_NOMEM;
    p->task_names[p->task_count] = UNDEFINED;
    p->strings[p->string_count] = UNDEFINED;
    p->regions[p->region_count] = (tt_region){.name = UNDEFINED, .file = "", .line = 0, .kind = 0};
    p->comms[p->comm_count] = (tt_comm){.parent = UINT32_MAX};
    return LOAD_OK;
}

static int add_problem(tt_trace *t, const char *line, int corrupt)
{
    if (TT_RESERVE(t->problems, t->problem_cap, t->problem_count + 1) != 0) return -1;
    char *copy = strdup(line);
    if (!copy) return -1;
    t->problems[t->problem_count++] = (trace_problem){copy, corrupt};
    return 0;
}

/* One line for the streams of a process whose events cannot be read: a file
 * that is no regular file (`unreadable`, a byte per stream up to the first
 * `marked`), and the file of a thread that a process which ended defined,
 * missing (it ended every stream: each wrote its file). 0, or -1 when memory
 * runs out. */
static int report_lost_streams(tt_trace *t, const tt_process *p, const uint8_t *unreadable, size_t marked)
{
    char line[768];
    size_t lost = 0, at = 0;
    for (size_t i = 0; i < p->thread_count; i++) {
        int not_regular = i < marked && unreadable[i];
        if (!not_regular && (p->threads[i].present || !p->threads[i].defined || !p->ended)) continue;
        lost++;
        if (at < sizeof line)
            at += (size_t)snprintf(line + at, sizeof line - at, "%sthread \"%s\" (stream %zu): %zu.tts %s",
                                   lost == 1 ? "" : "; ", p->threads[i].name, i, i,
                                   not_regular ? "is not a regular file" : "is missing");
    }
    if (!lost) return 0;
    char head[128];
    snprintf(head, sizeof head, "process %" PRIu64 ": %zu of %zu thread%s lost, their events unread: ", p->pid, lost,
             p->thread_count, p->thread_count == 1 ? "" : "s");
    char whole[sizeof head + sizeof line];
    snprintf(whole, sizeof whole, "%s%s", head, line);
    return add_problem(t, whole, 1);
}

/* Reads defs.tts and the stream list of a process: LOAD_OK, LOAD_NOMEM, or
 * LOAD_DAMAGE with l->why when the process cannot be read (*opened says
 * whether cf needs closing). */
static int stream_file_open(const tt_process *p, size_t stream, chunk_file *cf, tt_error *err);

/* A ring (format.h): the size its "keep" attribute says, and what its
 * streams' files dropped, from the first chunk each keeps. */
static int note_ring(proc_loader *l)
{
    tt_process *p = l->p;
    for (size_t a = 0; a < p->attribute_count; a++)
        if (strcmp(p->attributes[a].key, "keep") == 0) p->keep = strtoull(p->attributes[a].value, NULL, 10);
    for (size_t i = 0; p->keep && i < p->thread_count; i++) {
        chunk_file cf;
        tt_error err;
        if (!p->threads[i].present || stream_file_open(p, i, &cf, &err) != 0) continue;
        tt_records it;
        tt_event_record r;
        tt_predictor predict;
        const char *why;
        if (cf.dropped && cf_next(&cf)) {
            p->dropped_chunks += cf.dropped;
            tt_records_init(&it, cf.payload, cf.h.raw_size, cf.h.base_ticks, &predict);
            if (tt_records_next_event(&it, &r, &why) == 1 && r.tag == TT_EV_OPEN &&
                tt_process_duration(p, r.open.since) > p->dropped_ns)
                p->dropped_ns = tt_process_duration(p, r.open.since);
        }
        cf_close(&cf);
    }
    return LOAD_OK;
}

static int load_defs(proc_loader *l, chunk_file *cf, char *what, size_t what_size, int *opened)
{
    tt_process *p = l->p;
    char *path = path_join(p->dir, "defs.tts");
    if (!path) return LOAD_NOMEM;
    tt_error open_err;
    int rc = cf_open(cf, path, TT_FILE_DEFS, &open_err);
    free(path);
    if (rc != 0) return damage(l, "%s", open_err.message);
    *opened = 1;

    if (read_defs(l, cf) != LOAD_OK) return LOAD_NOMEM;
    p->defs_state = cf->state;
    if (cf->newer) return damage(l, "%s", cf->why); /* nothing else to say of it */
    if (cf->state != TT_STREAM_COMPLETE) cf_describe(cf, what, what_size);

    /* Without PROCESS and a clock the events cannot be placed in time. */
    if (!l->have_process) return damage(l, "no PROCESS record in its definitions");
    if (l->syncs == 0) return damage(l, "no CLOCK_SYNC record in its definitions");
    if ((rc = set_clock(l)) != LOAD_OK) return rc;
    uint8_t *unreadable = NULL;
    size_t marked = 0;
    if ((rc = scan_streams(l, &unreadable, &marked)) == LOAD_OK &&
        report_lost_streams(l->t, p, unreadable, marked) != 0)
        rc = LOAD_NOMEM;
    free(unreadable);
    if (rc != LOAD_OK || (rc = add_placeholders(l)) != LOAD_OK) return rc;
    return note_ring(l);
}

/* Loads trace/<pid> into a new entry of t->processes. A process that cannot
 * be read is left out with a line in t->problems; only running out of memory
 * fails. */
static int load_process(tt_trace *t, const char *trace_dir, const char *dir_name)
{
    char what[256] = "", line[768];
    tt_process proc = {0};
    proc_loader l = {.t = t, .p = &proc};
    chunk_file cf;
    int opened = 0;

    int rc = (proc.dir = path_join(trace_dir, dir_name)) ? load_defs(&l, &cf, what, sizeof what, &opened) : LOAD_NOMEM;
    if (opened) cf_close(&cf);
    if (rc == LOAD_OK && proc.defs_state != TT_STREAM_COMPLETE) {
        snprintf(line, sizeof line, "process %" PRIu64 ": definitions %s", proc.pid, what);
        if (!(proc.defs_cut = arena_strndup(&t->arena, line, strlen(line)))) rc = LOAD_NOMEM;
    }
    if (rc == LOAD_OK && TT_RESERVE(t->processes, t->process_cap, t->process_count + 1) == 0) {
        t->processes[t->process_count++] = proc;
        return 0;
    }
    process_free(&proc);
    if (rc != LOAD_DAMAGE) return -1;
    /* Left out; say why, and what was wrong with the definitions if anything. */
    snprintf(line, sizeof line, "process %s left out: %s%s%s", dir_name, l.why, *what ? "; definitions " : "", what);
    return add_problem(t, line, proc.defs_state == TT_STREAM_CORRUPT && !(opened && cf.newer));
}

typedef struct process_dir {
    uint64_t pid, session;
} process_dir;

static int compare_process_dirs(const void *a, const void *b)
{
    const process_dir *x = a, *y = b;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    return (x->session > y->session) - (x->session < y->session);
}

static int compare_processes(const void *a, const void *b)
{
    const tt_process *x = a, *y = b;
    if (x->start_realtime_ns != y->start_realtime_ns) return x->start_realtime_ns < y->start_realtime_ns ? -1 : 1;
    return (x->pid > y->pid) - (x->pid < y->pid);
}

/* The process directories of trace/, sorted by pid and session so that
 * problems come in a stable order: *out malloc'd, *count set. 0, or -1. */
static int list_processes(const char *trace_dir, process_dir **out, size_t *count, tt_error *err)
{
    DIR *dir = opendir(trace_dir);
    if (!dir) return tt_fail_errno(err, "cannot open %s", trace_dir);
    process_dir *dirs = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(dir))) {
        process_dir d;
        if (parse_process_name(e->d_name, &d.pid, &d.session) != 0) continue;
        if (TT_RESERVE(dirs, cap, n + 1) != 0) {
            free(dirs);
            closedir(dir);
            return tt_fail(err, "out of memory");
        }
        dirs[n++] = d;
    }
    closedir(dir);
    if (n > 1) qsort(dirs, n, sizeof *dirs, compare_process_dirs); /* dirs is NULL when n == 0 */
    *out = dirs;
    *count = n;
    return 0;
}

/* Why dir/trace is no directory (errno from its stat), in the words the
 * user needs. */
static int fail_no_trace(const char *dir, const char *trace_dir, tt_error *err)
{
    if (errno != ENOENT) return tt_fail_errno(err, "cannot open %s", trace_dir);
    struct stat st;
    if (stat(dir, &st) != 0) return tt_fail_errno(err, "%s", dir);
    if (!S_ISDIR(st.st_mode)) return tt_fail(err, "%s: not a directory", dir);
    /* An experiment whose program never got to write: say the trace is
     * missing. Anything else was probably the wrong directory. */
    char *manifest = path_join(dir, "MANIFEST.md");
    int is_experiment = manifest && stat(manifest, &st) == 0;
    free(manifest);
    if (is_experiment) return tt_fail(err, "no trace in %s (missing %s)", dir, trace_dir);
    return tt_fail(err, "%s: not a tracetop experiment (no trace directory)", dir);
}

/* Puts every process on the experiment's time axis, now that all are known. */
static void finish_trace(tt_trace *t)
{
    uint64_t epoch = UINT64_MAX;
    for (size_t i = 0; i < t->process_count; i++)
        if (t->processes[i].start_realtime_ns < epoch) epoch = t->processes[i].start_realtime_ns;
    for (size_t i = 0; i < t->process_count; i++) {
        tt_process *p = &t->processes[i];
        uint64_t offset = p->start_realtime_ns - epoch;
        p->sync_time = offset > INT64_MAX ? INT64_MAX : (int64_t)offset;
        if (p->ended) p->end_time = tt_process_time(p, p->end_time);
        for (size_t k = 0; k < p->thread_count; k++)
            for (size_t u = 0; u < p->threads[k].usage_count; u++)
                p->threads[k].usage[u].time = tt_process_time(p, p->threads[k].usage[u].time);
    }
    qsort(t->processes, t->process_count, sizeof *t->processes, compare_processes);
}

int tt_trace_open(const char *experiment_dir, tt_trace **out, tt_error *err)
{
    *out = NULL;
    char *trace_dir = path_join(experiment_dir, "trace");
    if (!trace_dir) return tt_fail(err, "out of memory");
    struct stat st;
    int found = stat(trace_dir, &st) == 0;
    if (!found || !S_ISDIR(st.st_mode)) {
        if (found) errno = ENOENT; /* a trace that is no directory: as good as missing */
        int rc = fail_no_trace(experiment_dir, trace_dir, err);
        free(trace_dir);
        return rc;
    }

    process_dir *dirs = NULL;
    size_t dir_count = 0;
    tt_trace *t = calloc(1, sizeof *t);
    if (t) t->to = UINT64_MAX;
    int rc = t ? list_processes(trace_dir, &dirs, &dir_count, err) : tt_fail(err, "out of memory");
    for (size_t i = 0; rc == 0 && i < dir_count; i++) {
        char name[48]; /* as parsed, so as named */
        if (dirs[i].session)
            snprintf(name, sizeof name, "%" PRIu64 ".%" PRIu64, dirs[i].pid, dirs[i].session);
        else
            snprintf(name, sizeof name, "%" PRIu64, dirs[i].pid);
        if (load_process(t, trace_dir, name) != 0) rc = tt_fail(err, "out of memory");
    }
    if (rc == 0 && t->process_count == 0) {
        if (t->problem_count > 0)
            rc = tt_fail(err, "no readable trace in %s: %s", experiment_dir, t->problems[0].line);
        else
            rc = tt_fail(err, "no trace in %s (%s holds no process)", experiment_dir, trace_dir);
    }
    free(dirs);
    free(trace_dir);
    if (rc != 0) {
        tt_trace_close(t);
        return rc;
    }
    finish_trace(t);
    *out = t;
    return 0;
}

void tt_trace_close(tt_trace *t)
{
    if (!t) return;
    for (size_t i = 0; i < t->process_count; i++) process_free(&t->processes[i]);
    free(t->processes);
    for (size_t i = 0; i < t->problem_count; i++) free(t->problems[i].line);
    free(t->problems);
    arena_free(t->arena);
    free(t);
}

size_t tt_trace_process_count(const tt_trace *t) { return t->process_count; }

const tt_process *tt_trace_process(const tt_trace *t, size_t index)
{
    return index < t->process_count ? &t->processes[index] : NULL;
}

static int thread_is(const tt_thread *th, const char *name)
{
    char tid[24];
    snprintf(tid, sizeof tid, "%" PRIu64, th->native_tid);
    return strcmp(th->name, name) == 0 || strcmp(tid, name) == 0;
}

size_t tt_trace_keep_thread(tt_trace *t, const char *name)
{
    size_t kept = 0;
    for (size_t i = 0; i < t->process_count; i++)
        for (size_t s = 0; s < t->processes[i].thread_count; s++)
            kept += t->processes[i].threads[s].present && thread_is(&t->processes[i].threads[s], name);
    for (size_t i = 0; kept && i < t->process_count; i++)
        for (size_t s = 0; s < t->processes[i].thread_count; s++)
            if (!thread_is(&t->processes[i].threads[s], name)) t->processes[i].threads[s].present = 0;
    if (kept) t->narrowed = 1;
    return kept;
}

size_t tt_trace_problem_count(const tt_trace *t) { return t->problem_count; }

const char *tt_trace_problem(const tt_trace *t, size_t index, int *corrupt)
{
    if (index >= t->problem_count) return NULL;
    if (corrupt) *corrupt = t->problems[index].corrupt;
    return t->problems[index].line;
}

/* ---- time: ticks -> ns since the epoch ----
 *
 * ns = sync_time + (ticks - sync_ticks) * ns_per_tick, rounded half up and
 * clamped to [0, UINT64_MAX], in integers: ns_per_tick is the binary
 * fixed-point number mult / 2^shift, which for any clock rate there is
 * (a tick of 0.5 ps or more) holds the double exactly. So the result is
 * the exact rounding of the real value, and a cursor gets it per event with
 * one multiply and a shift (tick_clock). */

#ifndef __SIZEOF_INT128__
#error "reading traces needs __int128 (GCC or Clang on a 64-bit target)"
#endif

typedef struct tick_scale {
    uint64_t mult;  /* below 2^63 */
    unsigned shift; /* at most 63 */
} tick_scale;

static tick_scale tick_scale_of(double ns_per_tick)
{
    /* Powers of two scale a double exactly. 63 bits at most, so that the
     * signed products below stay within 127 bits. */
    double scaled = ns_per_tick * 0x1p63;
    unsigned shift = 63;
    while (scaled >= 0x1p63 && shift > 0) {
        scaled *= 0.5;
        shift--;
    }
    /* A tick of 2^63 ns or more is no clock's: saturate. */
    return (tick_scale){scaled < 0x1p63 ? (uint64_t)scaled : INT64_MAX, shift};
}

/* (ns + 1/2) * 2^shift at d = ticks - sync_ticks: |sync_time * 2^shift| and
 * |d * mult| are at most 2^126, so this cannot overflow. */
static __int128 scaled_time(const tt_process *p, tick_scale k, int64_t d)
{
    __int128 unit = (__int128)1 << k.shift;
    return (__int128)p->sync_time * unit + (__int128)d * (__int128)k.mult + unit / 2;
}

/* The ns of a scaled_time, clamped: times are unsigned. */
static uint64_t unscale_time(__int128 v, unsigned shift)
{
    if (v < 0) return 0;
    unsigned __int128 ns = (unsigned __int128)v >> shift;
    return ns > UINT64_MAX ? UINT64_MAX : (uint64_t)ns;
}

uint64_t tt_comm_world_rank(const tt_process *p, uint32_t comm, uint64_t rank)
{
    if (comm >= p->comm_count) return UINT64_MAX;
    const tt_comm *c = &p->comms[comm];
    if (rank >= c->size) return UINT64_MAX;
    switch (c->kind) {
    case TT_COMM_WORLD:
        return rank;
    case TT_COMM_SELF:
        return p->mpi_size ? p->mpi_rank : UINT64_MAX;
    default:
        return rank < c->listed ? c->members[rank] : UINT64_MAX;
    }
}

uint64_t tt_process_duration(const tt_process *p, uint64_t ticks)
{
    tick_scale k = tick_scale_of(p->ns_per_tick);
    unsigned __int128 ns = ((unsigned __int128)ticks * k.mult + ((unsigned __int128)1 << k.shift >> 1)) >> k.shift;
    return ns > UINT64_MAX ? UINT64_MAX : (uint64_t)ns;
}

uint64_t tt_process_time(const tt_process *p, uint64_t ticks)
{
    /* Signed: a stream's first events may come before the first CLOCK_SYNC. */
    tick_scale k = tick_scale_of(p->ns_per_tick);
    return unscale_time(scaled_time(p, k, (int64_t)(ticks - p->sync_ticks)), k.shift);
}

uint64_t tt_process_off_ns(const tt_process *p, uint64_t from, uint64_t to)
{
    uint64_t off = 0;
    for (size_t i = 0; i < p->gap_count; i++) {
        uint64_t begin = tt_process_time(p, p->gaps[i].from), end = tt_process_time(p, p->gaps[i].to);
        if (begin < from) begin = from;
        if (end > to) end = to;
        if (end > begin) off += end - begin;
    }
    return off;
}

/* The deltas a cursor's fast path takes are below this: varints of at most
 * 4 bytes (tt_short_varint). */
#define FAST_DT_LIMIT ((uint64_t)1 << 28)

/* A cursor's clock: for ticks in [lo, hi], tt_process_time without the
 * clamping and the sign: (offset + ticks * mult) mod 2^128, shifted right
 * by shift. Held with the shift made 64 (offset and mult scaled by 2^(64 -
 * shift), mult as two words), so that a time is the high word of one
 * product and sum, plus a product of words (mult_hi is 0 when a tick is
 * shorter than a ns, as a TSC's): see clock_time. */
typedef struct tick_clock {
    unsigned __int128 offset;
    uint64_t mult_lo, mult_hi;
    uint64_t lo, hi; /* lo > hi when no ticks qualify */
} tick_clock;

/* 1 when a scaled_time is a time without clamping. */
static int fits_time(__int128 v, unsigned shift) { return v >= 0 && (unsigned __int128)v >> shift <= UINT64_MAX; }

/* The clock of process p as a cursor uses it. The ticks whose time needs no
 * clamping form a range, since scaled_time grows with d. */
static tick_clock tick_clock_of(const tt_process *p)
{
    tick_scale k = tick_scale_of(p->ns_per_tick);
    /* The shift to 64: mult below 2^63, k.shift at least 0, so the scaled
     * mult stays below 2^127. The offset's bits shifted out above 2^128
     * are those the modular sum drops anyway. */
    unsigned up = 64 - k.shift;
    unsigned __int128 offset = (unsigned __int128)scaled_time(p, k, 0) - (unsigned __int128)p->sync_ticks * k.mult;
    unsigned __int128 mult = (unsigned __int128)k.mult << up;
    tick_clock clock = {
        .offset = offset << up,
        .mult_lo = (uint64_t)mult,
        .mult_hi = (uint64_t)(mult >> 64),
        .lo = 1,
        .hi = 0,
    };
    if (scaled_time(p, k, INT64_MAX) < 0) return clock;
    /* Binary searches over d: the least d whose value is not negative ... */
    int64_t a = INT64_MIN, b = INT64_MAX;
    while (a < b) {
        int64_t mid = a + (int64_t)(((uint64_t)b - (uint64_t)a) >> 1);
        if (scaled_time(p, k, mid) >= 0)
            b = mid;
        else
            a = mid + 1;
    }
    int64_t first = a;
    if (!fits_time(scaled_time(p, k, first), k.shift)) return clock;
    /* ... and the greatest whose time fits. */
    b = INT64_MAX;
    while (a < b) {
        int64_t mid = b - (int64_t)(((uint64_t)b - (uint64_t)a) >> 1);
        if (fits_time(scaled_time(p, k, mid), k.shift))
            a = mid;
        else
            b = mid - 1;
    }
    __int128 lo = (__int128)p->sync_ticks + first, hi = (__int128)p->sync_ticks + a;
    if (lo < 0) lo = 0;
    if (hi > (__int128)UINT64_MAX) hi = UINT64_MAX;
    if (lo <= hi) {
        clock.lo = (uint64_t)lo;
        clock.hi = (uint64_t)hi;
    }
    return clock;
}

/* The time of ticks in [clock->lo, clock->hi]. There the value v = (offset
 * + ticks * mult) mod 2^128 of tick_scale's units is below 2^(64 + shift),
 * so v * 2^(64 - shift) is below 2^128: the sum of the scaled terms mod
 * 2^128 is exactly that, and its high word is v >> shift, the time. Of
 * ticks * mult, the part mult_hi * 2^64 adds ticks * mult_hi to the high
 * word (mod 2^64, as the time is below 2^64). */
static inline uint64_t clock_time(const tick_clock *clock, uint64_t ticks)
{
    return (uint64_t)((clock->offset + (unsigned __int128)ticks * clock->mult_lo) >> 64) + ticks * clock->mult_hi;
}

/* ---- cursor: a stream file -> well-nested events ----
 *
 * Two paths. read_calls (for tt_cursor_next, and tt_cursor_next_calls in
 * bulk) decodes ENTER and LEAVE records itself while nothing about them
 * needs care: a record well inside its chunk (no bounds checks), short
 * fields, a defined region, room on the stack, a time that needs no
 * clamping. Everything else, and every record while any of this is
 * in doubt, goes through read_event, which handles all records, damage and
 * chunk changes, and decides after each record whether the fast path may go
 * on (allow_fast). Both yield the same events. */

/* Where a cursor of a trace that keeps a range stands in it. */
enum window_phase {
    BEFORE,  /* skipping the events before `from` */
    OPENING, /* opening, at `from`, the frames open there; then `held` */
    INSIDE,
    CUTTING, /* closing, at `to`, the frames open there */
    AFTER,
};

/* Where a cursor stands at the edge of a gap in the measurement (format.h:
 * RECORDING_OFF, RECORDING_ON). */
enum gap_phase {
    NO_GAP,
    GAP_CLOSING, /* closing, where it begins, the frames open there; then `gap_held` */
    GAP_OPENING, /* opening again, where it ends, the frames closed at its start; then `gap_held` */
};

enum cursor_phase {
    READING, /* yielding the data's events */
    CLOSING, /* the data ended: closing open regions, then STREAM_END if read */
    DONE,
};

struct tt_cursor {
    /* The fast path's state first. fast_end is where it stops: at
     * records.pos while it is off, else TT_RECORD_MAX_FIXED bytes before the
     * chunk's end, so that a record starting before it is entirely in the
     * chunk. */
    tt_records records;   /* of the chunk in cf */
    tt_predictor predict; /* records' */
    const uint8_t *fast_end;
    uint32_t *stack; /* open regions, innermost last */
    size_t depth, stack_cap;
    uint64_t region_count; /* region ids below it are defined */
    uint64_t last_time, last_ticks;
    uint64_t events;
    tick_clock clock;
    const uint8_t *chunk_start; /* the payload of the chunk in records */
    uint64_t consumed;          /* record bytes of the chunks before it */
    uint64_t stored, raw;       /* payload bytes of the chunks of records read, on disk and decoded */
    tt_chunk_start at;          /* where that chunk starts (tt_cursor_chunk) */

    const tt_process *p;
    size_t stream;
    chunk_file cf;
    /* 1 when the definitions are complete, so an undefined id is damage
     * rather than a definition lost with the end of defs.tts. */
    int strict_ids;

    enum cursor_phase phase;
    int have_end;
    /* A stream read from a chunk after dropped ones (a ring): its first
     * record, OPEN, is still to come (open_pending); then the calls it
     * names, stack[0 .. opened), are entered one by one (opening so far). */
    int open_pending;
    size_t opening, opened;
    uint64_t began; /* tt_cursor_began */
    tt_stream_state state;
    char problem[512];

    tt_read_progress *progress; /* or NULL */

    /* The regions left out (tt_trace_keep_regions), and how many of them are open. */
    const uint8_t *left_out;
    size_t left_out_open;

    /* A gap in the measurement: the frames stack[0 .. suspended) were open
     * where it began and are closed there, until it ends; gap_edge counts
     * those closed (down from the top) or opened again so far. */
    size_t suspended, gap_edge;
    enum gap_phase gap;
    tt_event gap_held;

    /* The range kept (tt_trace_keep_range), when the trace keeps one. */
    int windowed;
    enum window_phase window;
    uint64_t from, to;
    size_t edge, edge_count; /* the frames opened at `from` or closed at `to` so far, and of how many */
    tt_event held;           /* the first event inside the range, given once the frames around it are open */
};

/* Opens the file of stream `stream` of p into cf: 0, -1 when it does not
 * open (err says why), -2 when memory runs out. */
static int stream_file_open(const tt_process *p, size_t stream, chunk_file *cf, tt_error *err)
{
    char name[32];
    snprintf(name, sizeof name, "%zu.tts", stream);
    char *path = path_join(p->dir, name);
    if (!path) return -2;
    int rc = cf_open(cf, path, TT_FILE_EVENTS, err);
    free(path);
    if (rc == 0 && p->keep) cf_skip_dropped(cf);
    return rc != 0 ? -1 : 0;
}

int tt_cursor_open(const tt_trace *t, const tt_process *p, size_t stream, tt_cursor **out, tt_error *err)
{
    /* The process carries what the cursor reads; t keeps it alive, and the range it keeps. */
    *out = NULL;
    if (stream >= p->thread_count || !p->threads[stream].present)
        return tt_fail(err, "process %" PRIu64 " has no stream %zu", p->pid, stream);
    tt_cursor *c = calloc(1, sizeof *c);
    int rc = c ? stream_file_open(p, stream, &c->cf, err) : -2;
    if (rc != 0) {
        free(c);
        return rc == -2 ? tt_fail(err, "out of memory") : -1;
    }
    c->p = p;
    c->stream = stream;
    c->region_count = p->region_count;
    c->clock = tick_clock_of(p);
    c->strict_ids = p->ended && p->defs_state == TT_STREAM_COMPLETE;
    c->phase = READING;
    c->progress = t->progress;
    c->windowed = t->from > 0 || t->to < UINT64_MAX;
    c->from = t->from;
    c->to = t->to;
    c->left_out = p->left_out;
    c->open_pending = c->cf.dropped > 0;
    *out = c;
    return 0;
}

void tt_cursor_close(tt_cursor *c)
{
    if (!c) return;
    cf_close(&c->cf);
    free(c->stack);
    free(c);
}

const tt_chunk_start *tt_cursor_chunk(const tt_cursor *c) { return &c->at; }

int tt_cursor_seek(tt_cursor *c, const tt_chunk_start *at)
{
    /* What the cursor had read up to the chunk: its state there, which the
     * chunk's records need besides themselves (format.h: times never go
     * back, LEAVEs close what is open). The regions open are not known: the
     * placeholder stands for them. */
    if (c->events || c->phase != READING) return -1;
    if (TT_RESERVE(c->stack, c->stack_cap, (size_t)at->depth + 1) != 0) return -1;
    for (uint32_t i = 0; i < at->depth; i++) c->stack[i] = (uint32_t)c->p->region_count;
    c->depth = at->depth;
    c->last_time = at->time;
    c->last_ticks = at->ticks;
    c->cf.offset = at->offset;
    c->cf.chunks = at->seq;
    c->open_pending = 0; /* the depth there is known */
    if (fseeko(c->cf.f, (off_t)at->offset, SEEK_SET) != 0) cf_read_error(&c->cf);
    return 0;
}

/* The data ends here: say how, in one line, and start closing regions. */
static int stop_reading(tt_cursor *c)
{
    c->phase = CLOSING;
    c->fast_end = c->records.pos;
    c->state = c->cf.state;
    if (c->state == TT_STREAM_COMPLETE) return 0;
    char what[256];
    cf_describe(&c->cf, what, sizeof what);
    const tt_thread *th = &c->p->threads[c->stream];
    snprintf(c->problem, sizeof c->problem, "process %" PRIu64 " thread \"%s\" (stream %zu): %s", c->p->pid, th->name,
             c->stream, what);
    return 0;
}

static int stop_damaged(tt_cursor *c, const char *why)
{
    cf_damage_chunk(&c->cf, why);
    return stop_reading(c);
}

/* An id from the data, as an index into a table of `count` entries (the
 * placeholder at `count` included): 0, or -1 when it is damage (`strict`:
 * the definitions are complete). */
static int map_ref(int strict, uint64_t id, size_t count, uint32_t *out)
{
    if (id < count) {
        *out = (uint32_t)id;
        return 0;
    }
    if (strict) return -1;
    *out = (uint32_t)count;
    return 0;
}

static int map_id(const tt_cursor *c, uint64_t id, size_t count, uint32_t *out)
{
    return map_ref(c->strict_ids, id, count, out);
}

/* The fields of an MPI message, an MPI_COLLECTIVE_END or an OBJECTS record
 * (what tt_ev_counted names, and the messages received) into ev, for the
 * cursor and tt_stream_counted_read alike: NULL, or why it is damage. */
static const char *counted_fields(const tt_process *p, int strict, const tt_event_record *r, tt_event *ev)
{
    switch (r->tag) {
    case TT_EV_MPI_SEND:
    case TT_EV_MPI_RECV:
    case TT_EV_MPI_ISEND:
    case TT_EV_MPI_IRECV:
        if (map_ref(strict, r->mpi.comm, p->comm_count, &ev->comm) != 0) return "undefined communicator";
        if (r->mpi.peer > UINT32_MAX || r->mpi.tag > UINT32_MAX) return "MPI rank or tag out of range";
        ev->peer = (uint32_t)r->mpi.peer;
        ev->tag = (uint32_t)r->mpi.tag;
        ev->bytes = r->mpi.bytes;
        if (r->tag == TT_EV_MPI_ISEND || r->tag == TT_EV_MPI_IRECV) ev->request = r->mpi.request;
        return NULL;
    case TT_EV_MPI_COLLECTIVE_END:
        if (map_ref(strict, r->mpi.comm, p->comm_count, &ev->comm) != 0) return "undefined communicator";
        if (r->mpi.root > UINT32_MAX) return "MPI root out of range";
        ev->root = r->mpi.root ? (uint32_t)(r->mpi.root - 1) : UINT32_MAX;
        ev->op = r->mpi.op;
        ev->sent = r->mpi.sent;
        ev->received = r->mpi.received;
        return NULL;
    default: /* OBJECTS */
        ev->region = UINT32_MAX;
        if (r->objects.region && map_ref(strict, r->objects.region - 1, p->region_count, &ev->region) != 0)
            return "undefined region";
        if (map_ref(strict, r->objects.type, p->string_count, &ev->name) != 0) return "undefined name";
        ev->bytes = r->objects.size;
        ev->created = r->objects.created;
        ev->destroyed = r->objects.destroyed;
        return NULL;
    }
}

/* Turns the fast path on for the rest of the chunk when it can go without
 * checks there: when none of its records can reach a time that needs
 * clamping (at most one per 2 bytes follows, each less than FAST_DT_LIMIT
 * ticks later), when the time of the current ticks is not behind the last
 * one (which a chunk starting back in time can make), and when the stack
 * has room for every ENTER that can follow (one per 2 bytes at most:
 * ENTER_PREDICTED). Then
 * every time the fast path computes is exact, and never goes backwards.
 * Called after every event of the general path. */
static void allow_fast(tt_cursor *c)
{
    uint64_t ticks = c->records.ticks;
    size_t left = (size_t)(c->records.end - c->records.pos);
    int ok = left > TT_RECORD_MAX_FIXED && !c->suspended && c->gap == NO_GAP && ticks >= c->clock.lo &&
             ticks <= c->clock.hi && c->clock.hi - ticks >= (left / 2 + 1) * FAST_DT_LIMIT &&
             clock_time(&c->clock, ticks) >= c->last_time &&
             TT_RESERVE(c->stack, c->stack_cap, c->depth + left / 2) == 0;
    c->fast_end = ok ? c->records.end - TT_RECORD_MAX_FIXED : c->records.pos;
}

/* After STREAM_END, what may follow is the stream's TREE chunks (format.h),
 * which are no events: 1 when nothing else does, 0 when something else does
 * or damage. A tree cut short (a crash as the stream closed, a file cut)
 * leaves the events whole, but the file cut: the stream says so. */
static int only_tree_follows(chunk_file *cf)
{
    while (cf_next(cf))
        if (!(cf->h.flags & TT_CHUNK_TREE)) return 0;
    return cf->state != TT_STREAM_CORRUPT;
}

/* The calls of an OPEN record (innermost first) onto the stack, outermost
 * first, to be entered (open_event): NULL, or why it is damage. */
static const char *open_calls(tt_cursor *c, const tt_event_record *r)
{
    if (r->open.count > UINT32_MAX || TT_RESERVE(c->stack, c->stack_cap, c->depth + (size_t)r->open.count) != 0)
        return "out of memory";
    const uint8_t *pos = r->open.regions;
    for (size_t i = (size_t)r->open.count; i-- > 0;)
        if (map_id(c, tt_records_open_next(&pos), c->p->region_count, &c->stack[c->depth + i]) != 0)
            return "undefined region";
    c->opening = c->depth;
    c->depth += (size_t)r->open.count;
    c->opened = c->depth;
    return NULL;
}

/* The next of the calls open where the stream's first chunk kept begins. */
static int open_event(tt_cursor *c, tt_event *ev)
{
    *ev = (tt_event){.kind = TT_EV_ENTER,
                     .time = c->last_time,
                     .ticks = c->last_ticks,
                     .region = c->stack[c->opening],
                     .depth = (uint32_t)(c->opening + 1),
                     .synthesized = 1,
                     .resumed = 1};
    if (++c->opening == c->opened) allow_fast(c);
    return 1;
}

/* Reads the next event from the data: 1 with *ev set, 2 when the record
 * read gives no event (the return of a call closed at a gap's start), or 0
 * when the data ends (c->phase is then CLOSING and the state set). A
 * record that begins or ends a gap sets c->gap: its edge comes first. */
static int read_event(tt_cursor *c, tt_event *ev)
{
    tt_event_record r;
    const char *why;
    for (;;) {
        int k = tt_records_next_event(&c->records, &r, &why);
        if (k > 0) break;
        if (k < 0) return stop_damaged(c, why);
        if (!cf_next(&c->cf)) {
            if (c->cf.state == TT_STREAM_COMPLETE) cf_stop(&c->cf, TT_STREAM_CUT, "no end-of-stream record");
            return stop_reading(c);
        }
        if ((c->cf.h.flags & TT_CHUNK_TREE) && c->cf.dropped && c->cf.chunks - 1 == c->cf.dropped) {
            /* Every chunk of its records was dropped (a ring): the stream
             * ended (its tree follows its end), and holds no event. */
            cf_stop(&c->cf, TT_STREAM_COMPLETE, "");
            return stop_reading(c);
        }
        c->consumed += (uint64_t)(c->records.pos - c->chunk_start);
        c->chunk_start = c->cf.payload;
        c->stored += c->cf.h.stored_size;
        c->raw += c->cf.h.raw_size;
        c->at = (tt_chunk_start){.offset = c->cf.chunk_offset,
                                 .time = c->last_time,
                                 .ticks = c->last_ticks,
                                 .seq = c->cf.chunks - 1,
                                 .depth = (uint32_t)c->depth,
                                 .crc = c->cf.crc};
        if (c->progress) {
            c->progress->bytes += sizeof c->cf.h + c->cf.h.stored_size;
            c->progress->read(c->progress->ctx, c->progress->bytes);
        }
        tt_records_init(&c->records, c->cf.payload, c->cf.h.raw_size, c->cf.h.base_ticks, &c->predict);
    }

    /* Never backwards within a stream: consumers subtract times. */
    uint64_t time = r.ticks >= c->clock.lo && r.ticks <= c->clock.hi ? clock_time(&c->clock, r.ticks)
                                                                     : tt_process_time(c->p, r.ticks);
    if (time < c->last_time) time = c->last_time;
    uint64_t ticks = r.ticks < c->last_ticks ? c->last_ticks : r.ticks;
    *ev = (tt_event){.kind = r.tag, .time = time, .ticks = ticks};
    int first_kept = c->open_pending;
    c->open_pending = 0;

    switch (r.tag) {
    case TT_EV_OPEN:
        /* Known already, but where the chunks before were dropped. */
        if (first_kept && (why = open_calls(c, &r)) != NULL) return stop_damaged(c, why);
        if (first_kept) c->began = tt_process_time(c->p, r.ticks > r.open.since ? r.ticks - r.open.since : 0);
        c->last_time = time;
        c->last_ticks = ticks;
        if (c->opening < c->opened)
            c->fast_end = c->records.pos;
        else
            allow_fast(c);
        return 2;
    case TT_EV_ENTER:
        if (map_id(c, r.id, c->p->region_count, &ev->region) != 0) return stop_damaged(c, "undefined region");
        if (TT_RESERVE(c->stack, c->stack_cap, c->depth + 1) != 0) {
            cf_stop(&c->cf, TT_STREAM_CUT, "out of memory");
            return stop_reading(c);
        }
        c->stack[c->depth++] = ev->region;
        ev->resumed = r.again;
        /* A call made inside a gap (no writer of tracetop's makes one): the
         * gap ends there, so that the calls stay well nested. */
        if (c->suspended) c->gap = GAP_OPENING, c->gap_edge = 0;
        break;
    case TT_EV_LEAVE:
        if (c->depth == 0 && c->cf.dropped) { /* its ENTER was dropped with the chunks before (format.h: OPEN) */
            c->last_time = time;
            c->last_ticks = ticks;
            c->events++;
            return 2;
        }
        if (c->depth == 0) return stop_damaged(c, "LEAVE without an open region");
        ev->region = c->stack[--c->depth];
        if (c->depth < c->suspended) {
            /* Closed where the gap began: it returned inside it. */
            c->suspended = c->depth;
            c->last_time = time;
            c->last_ticks = ticks;
            c->events++;
            return 2;
        }
        break;
    case TT_EV_RECORDING_OFF:
        if (!c->suspended && c->depth) c->suspended = c->gap_edge = c->depth, c->gap = GAP_CLOSING;
        break;
    case TT_EV_RECORDING_ON:
        if (c->suspended) c->gap = GAP_OPENING, c->gap_edge = 0;
        break;
    case TT_EV_PARAM_INT:
    case TT_EV_PARAM_UINT:
    case TT_EV_PARAM_STRING:
    case TT_EV_COUNTER:
    case TT_EV_MARK:
        if (map_id(c, r.id, c->p->string_count, &ev->name) != 0) return stop_damaged(c, "undefined name");
        ev->int_value = r.int_value;
        ev->uint_value = r.uint_value;
        ev->double_value = r.double_value;
        ev->str = (const char *)r.str;
        ev->str_len = r.str_len;
        break;
    case TT_EV_MPI_SEND:
    case TT_EV_MPI_RECV:
    case TT_EV_MPI_ISEND:
    case TT_EV_MPI_IRECV:
    case TT_EV_MPI_COLLECTIVE_END:
    case TT_EV_OBJECTS:
        if ((why = counted_fields(c->p, c->strict_ids, &r, ev)) != NULL) return stop_damaged(c, why);
        break;
    case TT_EV_MPI_ISEND_COMPLETE:
    case TT_EV_MPI_IRECV_REQUEST:
        ev->request = r.mpi.request;
        break;
    case TT_EV_TASK_RESUME:
        if (map_id(c, r.id, c->p->task_count, &ev->task) != 0) return stop_damaged(c, "undefined task");
        break;
    case TT_EV_GC:
        ev->generation = r.gc.generation;
        ev->collected = r.gc.collected;
        ev->uncollectable = r.gc.uncollectable;
        ev->duration_ns = r.gc.duration <= r.ticks ? time - tt_process_time(c->p, r.ticks - r.gc.duration) : 0;
        ev->duration_ticks = r.gc.duration <= r.ticks ? r.gc.duration : 0;
        break;
    case TT_EV_STREAM_END:
        /* Held back until open regions are closed (tt_cursor_next). Nothing
         * may follow it, except stale bytes behind a partial chunk. */
        c->last_time = time;
        c->last_ticks = ticks;
        c->events++;
        c->have_end = 1;
        if (tt_records_more(&c->records)) return stop_damaged(c, "data after the end-of-stream record");
        uint32_t end_chunk = c->cf.chunks - 1;
        uint64_t end_at = c->cf.chunk_offset;
        /* Damage in what follows (a tree's chunk) is said as itself. */
        if (!c->cf.after_partial && !only_tree_follows(&c->cf) && c->cf.state != TT_STREAM_CORRUPT)
            cf_stop_at(&c->cf, TT_STREAM_CORRUPT, end_chunk, end_at, "data after the end-of-stream record");
        return stop_reading(c);
    default: /* MPI_COLLECTIVE_BEGIN: the time only */
        break;
    }
    ev->depth = (uint32_t)(c->depth - c->suspended);
    c->last_time = time;
    c->last_ticks = ticks;
    c->events++;
    allow_fast(c);
    return 1;
}

/* The edge of a gap: the frames open closed where it begins, innermost
 * first, or those opened again where it ends, outermost first (resumed),
 * at the time of the record that begins or ends it; then that record's
 * event. */
static int gap_event(tt_cursor *c, tt_event *ev)
{
    const tt_event *held = &c->gap_held;
    if (c->gap == GAP_CLOSING && c->gap_edge > 0) {
        c->gap_edge--;
        *ev = (tt_event){.kind = TT_EV_LEAVE,
                         .time = held->time,
                         .ticks = held->ticks,
                         .region = c->stack[c->gap_edge],
                         .depth = (uint32_t)c->gap_edge,
                         .synthesized = 1};
        return 1;
    }
    if (c->gap == GAP_OPENING && c->gap_edge < c->suspended) {
        *ev = (tt_event){.kind = TT_EV_ENTER,
                         .time = held->time,
                         .ticks = held->ticks,
                         .region = c->stack[c->gap_edge],
                         .depth = (uint32_t)++c->gap_edge,
                         .synthesized = 1,
                         .resumed = 1};
        return 1;
    }
    if (c->gap == GAP_OPENING) c->suspended = 0;
    c->gap = NO_GAP;
    *ev = *held;
    ev->depth = (uint32_t)(c->depth - c->suspended);
    allow_fast(c);
    return 1;
}

/* Everything but the fast path's records. */
static int __attribute__((noinline)) next_slow(tt_cursor *c, tt_event *ev)
{
    if (c->gap != NO_GAP) return gap_event(c, ev);
    if (c->opening < c->opened) return open_event(c, ev);
    while (c->phase == READING) {
        int read = read_event(c, ev);
        if (read == 2 && c->opening < c->opened) return open_event(c, ev);
        if (read == 1 && c->gap == NO_GAP) return 1;
        if (read == 1) {
            c->gap_held = *ev;
            return gap_event(c, ev);
        }
        if (read == 0) break;
    }
    if (c->phase != CLOSING) return 0;
    /* Frames closed where a gap began are not closed again. */
    if (c->depth > c->suspended) {
        c->depth--;
        *ev = (tt_event){.kind = TT_EV_LEAVE,
                         .time = c->last_time,
                         .ticks = c->last_ticks,
                         .region = c->stack[c->depth],
                         .depth = (uint32_t)(c->depth - c->suspended),
                         .synthesized = 1};
        return 1;
    }
    c->phase = DONE;
    if (!c->have_end) return 0;
    *ev = (tt_event){.kind = TT_EV_STREAM_END, .time = c->last_time, .ticks = c->last_ticks};
    return 1;
}

/* The fast path: up to max ENTER and LEAVE records decoded into out, while
 * allow_fast lets it go on. Its state lives in locals, the predictor's too
 * (format.h: its last region and the leaves since), which the compiler
 * could not keep in registers across the stores to out and to the stack
 * were they the cursor's fields, and goes back to the cursor once. Returns
 * how many; 0 when the next record is another one, or needs the slow path. */
static inline __attribute__((always_inline)) size_t read_calls_with(tt_cursor *c, tt_call *restrict out, size_t max,
                                                                    int ticks_over_ns)
{
    /* Every record takes 2 bytes at least: stopping 2 * max bytes on, it
     * writes max calls at most, with one test a record. */
    const uint8_t *p = c->records.pos, *end = c->fast_end;
    if (p < end && (size_t)(end - p) > 2 * max) end = p + 2 * max;
    uint64_t ticks = c->records.ticks;
    size_t depth = c->depth;
    uint32_t *restrict stack = c->stack;
    uint32_t *restrict slots = c->predict.slot;
    uint32_t last = c->predict.last, leaves_shifted = c->predict.leaves_shifted;
    const uint64_t region_count = c->region_count;
    tick_clock clock = c->clock;
    if (!ticks_over_ns) clock.mult_hi = 0;
    tt_call *o = out;
    while (p < end) {
        uint8_t tag;
        uint64_t dt, id;
        const uint8_t *next = tt_records_peek(p, &tag, &dt, &id);
        if (!next) break;
        if (tag == TT_EV_LEAVE) {
            if (depth == 0) break;
            id = stack[--depth];
            leaves_shifted += 1u << 5;
        } else {
            uint32_t *slot = &slots[(last ^ leaves_shifted) & (TT_PREDICT_SLOTS - 1)];
            if (tag == TT_EV_ENTER_PREDICTED) id = *slot;
            if (id >= region_count) break;
            *slot = last = (uint32_t)id;
            leaves_shifted = 0;
            stack[depth++] = (uint32_t)id;
            tag = TT_EV_ENTER;
        }
        p = next;
        ticks += dt;
        *o++ = (tt_call){.time = clock_time(&clock, ticks),
                         .ticks = ticks,
                         .region = (uint32_t)id,
                         .depth = (uint32_t)depth,
                         .kind = tag};
    }
    size_t n = (size_t)(o - out);
    if (n) {
        c->records.pos = p;
        c->records.ticks = ticks;
        c->depth = depth;
        c->predict.last = last;
        c->predict.leaves_shifted = leaves_shifted;
        c->events += n;
        c->last_time = o[-1].time;
        c->last_ticks = ticks;
    }
    return n;
}

/* The loop made twice: for the clocks whose tick is shorter than a ns (the
 * TSC), the compiler then knows that mult_hi is 0, and saves a register and
 * a product per event. */
static inline size_t read_calls(tt_cursor *c, tt_call *out, size_t max)
{
    return c->clock.mult_hi ? read_calls_with(c, out, max, 1) : read_calls_with(c, out, max, 0);
}

size_t tt_cursor_next_calls(tt_cursor *c, tt_call *out, size_t max)
{
    if (c->windowed || c->left_out) return 0;
    return read_calls(c, out, max);
}

static inline int next_event(tt_cursor *c, tt_event *ev)
{
    tt_call call;
    if (!read_calls(c, &call, 1)) return next_slow(c, ev);
    ev->kind = call.kind;
    ev->region = call.region;
    ev->depth = call.depth;
    ev->synthesized = 0;
    ev->resumed = 0;
    ev->time = call.time;
    ev->ticks = call.ticks;
    return 1;
}

/* The frames open before event ev, which the cursor has just read: c->stack[0 .. that), ev's own region above
 * them for an ENTER (a gap's frames, closed, are open in no event's depth). */
static size_t frames_before(const tt_event *ev)
{
    return ev->kind == TT_EV_ENTER ? ev->depth - 1u : ev->kind == TT_EV_LEAVE ? ev->depth + 1u : ev->depth;
}

static int edge_event(tt_cursor *c, tt_event *ev, int enter)
{
    memset(ev, 0, sizeof *ev);
    ev->kind = enter ? TT_EV_ENTER : TT_EV_LEAVE;
    ev->synthesized = 1;
    if (enter) {
        ev->time = c->from;
        ev->region = c->stack[c->edge];
        ev->depth = (uint32_t)++c->edge;
    } else {
        ev->time = c->to;
        ev->depth = (uint32_t)(c->edge_count - ++c->edge);
        ev->region = c->stack[ev->depth];
    }
    return 1;
}

/* The events of the range kept: those before `from` skipped, the frames open at `from` opened there, those
 * open at `to` closed there, and nothing after. */
static int next_in_window(tt_cursor *c, tt_event *ev)
{
    for (;;) {
        switch (c->window) {
        case BEFORE:
            if (!next_event(c, ev)) return 0;
            if (ev->time < c->from) break;
            c->held = *ev;
            c->edge = 0;
            c->edge_count = frames_before(ev);
            c->window = OPENING;
            break;
        case OPENING:
            if (c->edge < c->edge_count) return edge_event(c, ev, 1);
            if (c->held.time > c->to) {
                c->edge = 0;
                c->window = CUTTING;
                break;
            }
            *ev = c->held;
            c->window = INSIDE;
            return 1;
        case INSIDE:
            if (!next_event(c, ev)) return 0;
            if (ev->time <= c->to) return 1;
            c->edge = 0;
            c->edge_count = frames_before(ev);
            c->window = CUTTING;
            break;
        case CUTTING:
            if (c->edge < c->edge_count) return edge_event(c, ev, 0);
            c->window = AFTER;
            break;
        case AFTER:
            return 0;
        }
    }
}

int tt_cursor_next(tt_cursor *c, tt_event *ev)
{
    for (;;) {
        int more = c->windowed ? next_in_window(c, ev) : next_event(c, ev);
        if (c->windowed) ev->ticks = ev->time;
        if (!more || !c->left_out) return more;
        int call = ev->kind == TT_EV_ENTER || ev->kind == TT_EV_LEAVE;
        if (call && ev->region < c->region_count && c->left_out[ev->region]) {
            /* The reader gives well nested calls, so a count of the open
             * ones left out says how much to take off the kept ones' depth. */
            if (ev->kind == TT_EV_ENTER)
                c->left_out_open++;
            else
                c->left_out_open--;
            continue;
        }
        ev->depth -= (uint32_t)c->left_out_open;
        return more;
    }
}

long tt_trace_keep_regions(tt_trace *t, const tt_filter *f, tt_error *err)
{
    long left_out = 0;
    for (size_t i = 0; i < t->process_count; i++) {
        tt_process *p = &t->processes[i];
        free(p->left_out);
        p->left_out = calloc(p->region_count + 1, 1);
        if (!p->left_out) return tt_fail(err, "out of memory");
        long here = 0;
        for (size_t r = 0; r < p->region_count; r++) {
            p->left_out[r] = (uint8_t)tt_filter_excludes(f, p->regions[r].name, p->regions[r].file);
            here += p->left_out[r];
        }
        if (!here) {
            free(p->left_out);
            p->left_out = NULL;
        }
        left_out += here;
    }
    if (left_out) t->narrowed = 1;
    return left_out;
}

int tt_trace_whole(const tt_trace *t) { return !t->narrowed && !tt_trace_keeps_range(t); }

void tt_trace_set_progress(tt_trace *t, tt_read_progress *progress) { t->progress = progress; }

int tt_trace_keeps_range(const tt_trace *t) { return t->from > 0 || t->to < UINT64_MAX; }

void tt_trace_keep_range(tt_trace *t, uint64_t from, uint64_t to)
{
    t->from = from;
    t->to = to;
}

void tt_trace_trust_records(tt_trace *t) { t->trust_records = 1; }

tt_stream_state tt_cursor_state(const tt_cursor *c) { return c->state; }

const char *tt_cursor_problem(const tt_cursor *c) { return c->state == TT_STREAM_COMPLETE ? NULL : c->problem; }

uint64_t tt_cursor_events_read(const tt_cursor *c) { return c->events; }

uint64_t tt_cursor_began(const tt_cursor *c) { return c->began; }

uint64_t tt_cursor_record_bytes(const tt_cursor *c)
{
    return c->consumed + (uint64_t)(c->records.pos - c->chunk_start);
}

void tt_cursor_payload_bytes(const tt_cursor *c, uint64_t *stored, uint64_t *raw)
{
    *stored = c->stored;
    *raw = c->raw;
}

/* ---- the call tree behind a stream's records ---- */

/* Parses the records of one TREE chunk's payload into tree: 0, or -1 when
 * they are not what format.h says (or more nodes than TREE announced). */
static int parse_tree(const tt_process *p, const uint8_t *pos, const uint8_t *end, tt_stream_tree *tree,
                      size_t *expected, int *have_head)
{
    int strict = p->ended && p->defs_state == TT_STREAM_COMPLETE;
    while (pos < end) {
        uint8_t tag = *pos++;
        uint64_t v[4 + 5 * 3];
        if (tag == TT_DEF_TREE && !*have_head) {
            for (size_t i = 0; i < sizeof v / sizeof *v; i++)
                if (tt_get_varint(&pos, end, &v[i]) != 0) return -1;
            if (v[0] >= UINT32_MAX) return -1;
            *expected = (size_t)v[0];
            tree->events = v[1];
            tree->end_ticks = v[2];
            tree->reads = v[3];
            for (size_t g = 0; g < 3; g++)
                tree->gc[g] = (tt_tree_gc){v[4 + 5 * g], v[5 + 5 * g], v[6 + 5 * g], v[7 + 5 * g], v[8 + 5 * g]};
            if (!(tree->nodes = malloc((*expected ? *expected : 1) * sizeof *tree->nodes))) return -2;
            *have_head = 1;
        } else if (tag == TT_DEF_TREE_NODE && *have_head) {
            uint64_t count;
            if (tt_get_varint(&pos, end, &count) != 0 || count > *expected - tree->node_count) return -1;
            tt_tree_node *nodes = tree->nodes + tree->node_count;
            for (size_t k = 0; k < count; k++) {
                /* Node k of the block is number tree->node_count + k + 1; its
                 * parent is numbered below it (0: the root, kept as -1). */
                uint64_t number = tree->node_count + k + 1, below;
                if (tt_get_varint(&pos, end, &below) != 0 || below == 0 || below > number) return -1;
                nodes[k].parent = (uint32_t)(number - below - 1);
            }
            for (size_t k = 0; k < count; k++) {
                uint64_t field, region;
                if (tt_get_varint(&pos, end, &field) != 0) return -1;
                if ((region = field >> 1) >= p->region_count) {
                    if (strict) return -1;
                    region = p->region_count;
                }
                nodes[k].region = (uint32_t)region;
                /* Marked for the asyncio fields after the columns. */
                nodes[k].task = (field & 1) ? 0 : UINT32_MAX;
            }
            for (size_t k = 0; k < count; k++)
                if (tt_get_varint(&pos, end, &nodes[k].visits) != 0) return -1;
            for (size_t k = 0; k < count; k++)
                if (tt_get_varint(&pos, end, &nodes[k].inclusive_ticks) != 0) return -1;
            for (size_t k = 0; k < count; k++) {
                tt_tree_node *node = &nodes[k];
                uint64_t task = 0;
                node->suspended_ticks = node->awaited_ticks = node->suspensions = 0;
                if (node->task == UINT32_MAX) continue;
                if (tt_get_varint(&pos, end, &task) != 0 || task > UINT32_MAX ||
                    tt_get_varint(&pos, end, &node->suspended_ticks) != 0 ||
                    tt_get_varint(&pos, end, &node->awaited_ticks) != 0 ||
                    tt_get_varint(&pos, end, &node->suspensions) != 0)
                    return -1;
                node->task = (uint32_t)(task - 1);
                tree->steps |= task != 0;
            }
            tree->node_count += count;
        } else {
            return -1;
        }
    }
    return 0;
}

/* The payload of the chunk just read into cf->stored (header h), decoded:
 * 0 with *payload set, -1 when it does not decode, -2 out of memory. */
static int stored_payload(chunk_file *cf, const struct tt_chunk_header *h, const uint8_t **payload)
{
    const char *why;
    *payload = cf->stored;
    if (h->codec == TT_CODEC_NONE) return 0;
    if (reserve_bytes(&cf->decoded, &cf->decoded_cap, h->raw_size) != 0) return -2;
    if (tt_payload_decode(h, cf->stored, cf->decoded, &why) != 0) return -1;
    *payload = cf->decoded;
    return 0;
}

/* The next record of it that is not an ENTER or a LEAVE tt_records_peek
 * reads (those it passes over, counting them in *records, neither their
 * time nor the predictor kept: the records it gives have no time, a call
 * no region): 1 with *r set, 0 at the end, -1 with *why when a record is
 * malformed. For readers of a chunk's other records, which pass over the
 * calls at a few instructions each. */
static int next_not_call(tt_records *it, tt_event_record *r, const char **why, uint64_t *records)
{
    const uint8_t *p = it->pos, *q;
    uint64_t passed = 0, dt, id;
    uint8_t tag;
    while (it->end - p > TT_RECORD_MAX_FIXED && (q = tt_records_peek(p, &tag, &dt, &id)) != NULL) {
        passed++;
        p = q;
    }
    *records += passed;
    it->pos = p;
    int k = tt_records_next_event(it, r, why);
    *records += k == 1;
    return k;
}

/* A chunk of records flagged TT_CHUNK_COUNTED, just read (header h, raw
 * header bytes `header`), into tree: where it is, its records and those a
 * profile counts. 0, -1 when its records do not decode, -2 out of memory. */
static int note_counted(chunk_file *cf, const uint8_t *header, const struct tt_chunk_header *h, tt_stream_tree *tree,
                        size_t *cap)
{
    const uint8_t *payload;
    int rc = stored_payload(cf, h, &payload);
    if (rc != 0) return rc;
    if (TT_RESERVE(tree->counted_at, *cap, tree->counted_chunks + 1) != 0) return -2;
    tt_predictor predict; /* reset by tt_records_init */
    tt_records it;
    tt_records_init(&it, payload, h->raw_size, h->base_ticks, &predict);
    tt_event_record r;
    const char *why;
    while ((rc = next_not_call(&it, &r, &why, &tree->counted_chunk_records)) == 1)
        tree->counted_records += tt_ev_counted(r.tag);
    if (rc < 0) return -1;
    tree->counted_at[tree->counted_chunks++] = (tt_chunk_start){.offset = cf->offset - TT_CHUNK_HEADER_SIZE -
                                                                          h->stored_size,
                                                                .seq = h->seq,
                                                                .crc = tt_get_u32(header + TT_CHUNK_CRC_OFFSET)};
    return 0;
}

int tt_stream_tree_read(const tt_trace *t, const tt_process *p, size_t stream, tt_stream_tree *out, tt_error *err)
{
    memset(out, 0, sizeof *out);
    if (stream >= p->thread_count || !p->threads[stream].present) return 0;
    chunk_file cf;
    int rc = stream_file_open(p, stream, &cf, err);
    if (rc == -2) return tt_fail(err, "out of memory");
    if (rc != 0) return 0; /* the cursor says it */
    size_t expected = 0, counted_cap = 0;
    int have_head = 0, found = 0;
    rc = 0;
    while (!cf.stopped) {
        uint8_t header[TT_CHUNK_HEADER_SIZE];
        struct tt_chunk_header h;
        const char *why;
        size_t n = fread(header, 1, sizeof header, cf.f);
        if (n == 0 && !ferror(cf.f)) {
            found = have_head && out->node_count == expected;
            break;
        }
        if (n < sizeof header || tt_chunk_header_decode(header, &h, &why) != 0 || h.seq != cf.chunks ||
            (h.flags & TT_CHUNK_PARTIAL) || cf.offset + TT_CHUNK_HEADER_SIZE + h.stored_size > cf.file_size)
            break;
        cf.offset += TT_CHUNK_HEADER_SIZE + h.stored_size;
        cf.chunks++;
        if (have_head && !(h.flags & TT_CHUNK_TREE)) break;
        /* Trusted, the records' chunks are passed over by their headers;
         * those the profile counts are read all the same. */
        if (!(h.flags & (TT_CHUNK_TREE | TT_CHUNK_COUNTED)) && t->trust_records) {
            if (fseeko(cf.f, (off_t)cf.offset, SEEK_SET) != 0) break;
            continue;
        }
        if (reserve_bytes(&cf.stored, &cf.stored_cap, h.stored_size) != 0) {
            rc = -2;
            break;
        }
        /* Every chunk's checksum, records' too (unless trusted): damage
         * anywhere has the stream read back, which says what and where. */
        if (fread(cf.stored, 1, h.stored_size, cf.f) != h.stored_size || !tt_chunk_verify(header, cf.stored)) break;
        if (!(h.flags & TT_CHUNK_TREE)) {
            if ((h.flags & TT_CHUNK_COUNTED) && (rc = note_counted(&cf, header, &h, out, &counted_cap)) != 0) break;
            continue;
        }
        if (!(h.flags & TT_CHUNK_TREE_COLUMNS)) break; /* an earlier writer's rows: read back */
        out->bytes += TT_CHUNK_HEADER_SIZE + h.stored_size;
        const uint8_t *payload;
        if ((rc = stored_payload(&cf, &h, &payload)) != 0 ||
            (rc = parse_tree(p, payload, payload + h.raw_size, out, &expected, &have_head)) != 0)
            break;
    }
    cf_close(&cf);
    if (!found) tt_stream_tree_free(out);
    if (rc == -2) return tt_fail(err, "out of memory");
    return found;
}

/* The bytes of a chunk spanning [begin, end) that fall in [from, until): a
 * chunk of no span counts whole when it is in the range. */
static double bytes_in_range(uint64_t bytes, uint64_t begin, uint64_t end, uint64_t from, uint64_t until)
{
    if (end <= begin) return begin >= from && begin < until ? (double)bytes : 0;
    uint64_t lo = begin > from ? begin : from, hi = end < until ? end : until;
    return hi > lo ? (double)bytes * (double)(hi - lo) / (double)(end - begin) : 0;
}

uint64_t tt_stream_record_bytes(const tt_process *p, size_t stream, uint64_t from, uint64_t until)
{
    if (stream >= p->thread_count || !p->threads[stream].present) return 0;
    const tt_thread *th = &p->threads[stream];
    chunk_file cf;
    tt_error err;
    if (stream_file_open(p, stream, &cf, &err) != 0) return 0;
    double bytes = 0;
    uint64_t pending = 0, pending_time = 0; /* the chunk read last, whose span ends where the next begins */
    int have_pending = 0;
    uint8_t header[TT_CHUNK_HEADER_SIZE];
    struct tt_chunk_header h;
    const char *why;
    while (!cf.stopped && fread(header, 1, sizeof header, cf.f) == sizeof header &&
           tt_chunk_header_decode(header, &h, &why) == 0 && !(h.flags & TT_CHUNK_TREE) &&
           cf.offset + TT_CHUNK_HEADER_SIZE + h.stored_size <= cf.file_size) {
        uint64_t time = tt_process_time(p, h.base_ticks);
        if (have_pending) bytes += bytes_in_range(pending, pending_time, time, from, until);
        pending = h.raw_size, pending_time = time, have_pending = 1;
        cf.offset += TT_CHUNK_HEADER_SIZE + h.stored_size;
        if (fseeko(cf.f, (off_t)cf.offset, SEEK_SET) != 0) break;
    }
    cf_close(&cf);
    if (have_pending) {
        uint64_t end = th->usage_count ? th->usage[th->usage_count - 1].time : 0;
        if (p->ended && p->end_time > end) end = p->end_time;
        bytes += bytes_in_range(pending, pending_time, end, from, until);
    }
    return (uint64_t)(bytes + 0.5);
}

void tt_stream_tree_free(tt_stream_tree *tree)
{
    free(tree->nodes);
    free(tree->counted_at);
    memset(tree, 0, sizeof *tree);
}

int tt_stream_counted_read(const tt_process *p, size_t stream, const tt_stream_tree *tree,
                           int (*each)(void *ctx, const tt_event *ev, tt_error *err), void *ctx, tt_error *err)
{
    if (!tree->counted_chunks) return 0;
    chunk_file cf;
    int rc = stream_file_open(p, stream, &cf, err);
    if (rc == -2) return tt_fail(err, "out of memory");
    if (rc != 0) return 1;
    int strict = p->ended && p->defs_state == TT_STREAM_COMPLETE;
    tt_predictor predict;
    for (size_t i = 0; rc == 0 && i < tree->counted_chunks; i++) {
        const tt_chunk_start *at = &tree->counted_at[i];
        cf.offset = at->offset;
        cf.chunks = at->seq;
        if (fseeko(cf.f, (off_t)at->offset, SEEK_SET) != 0) cf_read_error(&cf);
        if (!cf_next(&cf) || cf.crc != at->crc) {
            if (!cf.stopped) cf_damage_chunk(&cf, "not the chunk read before");
            rc = 1;
            break;
        }
        tt_records it;
        tt_records_init(&it, cf.payload, cf.h.raw_size, cf.h.base_ticks, &predict);
        tt_event_record r;
        const char *why;
        uint64_t records = 0; /* counted by the tree read already */
        int k = 0;
        while (rc == 0 && (k = next_not_call(&it, &r, &why, &records)) == 1) {
            if (!tt_ev_counted(r.tag)) continue;
            tt_event ev = {.kind = r.tag};
            if ((why = counted_fields(p, strict, &r, &ev)) != NULL) {
                cf_damage_chunk(&cf, why);
                rc = 1;
            } else if (each(ctx, &ev, err) != 0) {
                rc = -1;
            }
        }
        if (rc == 0 && k < 0) {
            cf_damage_chunk(&cf, why);
            rc = 1;
        }
    }
    if (rc == 1) {
        char what[256];
        cf_describe(&cf, what, sizeof what);
        tt_fail(err, "process %" PRIu64 " thread \"%s\" (stream %zu): %s", p->pid, p->threads[stream].name, stream,
                what);
    }
    cf_close(&cf);
    return rc;
}

/* live.c -- the live channel in shared memory (see live.h).
 *
 * Layout of /dev/shm/tracetop-<uid>-<pid>:
 *
 *     [0, 4096)                      the header (struct shared)
 *     [4096, 4096 + ring_size)       the ring of slices
 *     [4096 + ring_size, ...)        the definitions log, as long as the file
 *
 * Every byte of the file is allocated when the file grows (posix_fallocate):
 * a page of a shared-memory file that cannot be had is a SIGBUS when it is
 * touched, and the measured process must never die of its channel. Both
 * sides map the largest file up front, so the log grows without remapping.
 *
 * The ring is a broadcast ring, as a seqlock guards its data: positions
 * count bytes since the channel was made and never wrap. The producer
 * writes at `head` without looking at any reader; before it overwrites
 * bytes it raises `reserved` to the end of what it is about to write, so
 * that a position p stays intact while reserved - ring_size <= p. Each
 * reader keeps its own position, copies a slice out, and then checks that
 * `reserved` had not passed it meanwhile: if it had, the copy may be torn,
 * the reader was overrun, and it goes on at the producer's head, counting
 * the bytes it skipped as its own drops.
 *
 * Drops are bytes of slices, not of the ring (entry headers, padding): the
 * producer publishes its head with `total`, the bytes of slices before it,
 * under a sequence number (a seqlock, which it never waits on), so a reader
 * that goes on at the head knows exactly how many bytes of slices it
 * skipped.
 */
#include "live.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "format.h"

#define MAGIC "TTLIVE\0"
/* 3: the records it carries are of trace format 2 (format.h), which a reader of 2 cannot decode.
 * 4: the head comes with the bytes of slices before it (total, head_seq). */
#define VERSION 4u
#define HEADER_SIZE 4096u
#define DEFS_STEP (1u << 20)
#define NAME_MAX_LEN 256
#define PATH_MAX_LEN 1024
#define SHM_DIR "/dev/shm"
/* A channel that never became ready this long after it was made was left
 * by a process that died while making it. */
#define UNREADY_STALE_S 10

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2 && ATOMIC_INT_LOCK_FREE == 2,
               "the channel needs lock-free atomics to share them between processes");
_Static_assert((TT_LIVE_RING_SIZE & (TT_LIVE_RING_SIZE - 1)) == 0, "the ring size is a power of two");

typedef struct shared {
    /* Set once, before `ready`. */
    char magic[8];
    uint32_t version, header_size;
    uint64_t ring_size, defs_max;
    uint64_t pid, start_time; /* start_time: /proc/<pid>/stat's, tells a reused pid */
    char name[NAME_MAX_LEN];
    char experiment[PATH_MAX_LEN];
    _Atomic uint32_t ready;

    /* Written by the producer. */
    alignas(64) _Atomic uint64_t head; /* the ring holds slices up to here */
    _Atomic uint64_t reserved;         /* bytes before reserved - ring_size may be overwritten */
    _Atomic uint64_t defs_size;
    _Atomic uint64_t dropped_bytes;
    _Atomic uint64_t total;    /* bytes of slices before `head` */
    _Atomic uint64_t head_seq; /* odd while head and total change */
    _Atomic uint64_t answered; /* the last request acted on */
    _Atomic uint32_t measuring;
    _Atomic uint32_t state;   /* tt_live_state */
    _Atomic uint32_t objects; /* objects counted */

    /* Written by readers, any number of them. */
    alignas(64) _Atomic uint64_t reader_epoch; /* one more at each attach, and at each overrun */
    _Atomic uint64_t reader_beat_ns;           /* the latest sign of life of any reader */
    _Atomic uint64_t request;                  /* serial << TT_LIVE_REQUEST_BITS | request bits */
} shared;

_Static_assert(sizeof(shared) <= HEADER_SIZE, "the header fits its page");

/* A slice in the ring; its bytes follow, then padding to 8. */
typedef struct entry {
    uint32_t size; /* header, bytes and padding */
    uint32_t flags;
    uint32_t stream, seq, offset, len;
    uint64_t base_ticks;
} entry;

enum { ENTRY_WRAP = 1u << 31 }; /* the rest of the ring is unused: go on at its start */

static size_t map_size(void) { return HEADER_SIZE + (size_t)TT_LIVE_RING_SIZE + TT_LIVE_DEFS_MAX; }

static void channel_name(char *buf, size_t cap, pid_t pid)
{
    snprintf(buf, cap, "/tracetop-%u-%ld", (unsigned)geteuid(), (long)pid);
}

/* Another user may have made the name of a process's channel before the
 * process came (anyone can create names in /dev/shm, nobody but the owner
 * can remove them). The process then uses a name of its own with a random
 * tail, "/tracetop-<uid>-<pid>-<hex>", which readers look for when the
 * plain name is not a channel of theirs. */
static void fallback_name(char *buf, size_t cap, pid_t pid)
{
    uint32_t tail = 0;
    if (getrandom(&tail, sizeof tail, 0) != (ssize_t)sizeof tail) tail = (uint32_t)tt_monotonic_ns();
    snprintf(buf, cap, "/tracetop-%u-%ld-%08x", (unsigned)geteuid(), (long)pid, tail);
}

static uint64_t now_ns(void) { return tt_monotonic_ns(); }

/* The start time of process `pid` (field 22 of /proc/<pid>/stat), and
 * whether it is a zombie. -1 when there is no such process. */
static int process_start(pid_t pid, uint64_t *start, int *zombie)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = '\0';
    /* The command name may hold anything, ')' too: fields follow the last. */
    char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ') return -1;
    p += 2;
    *zombie = *p == 'Z' || *p == 'X';
    for (int field = 3; field < 22; field++) {
        p = strchr(p, ' ');
        if (!p) return -1;
        p++;
    }
    *start = strtoull(p, NULL, 10);
    return 0;
}

static void copy_text(char *dst, size_t cap, const char *src) { snprintf(dst, cap, "%s", src ? src : ""); }

/* ---- the producer ---- */

/* A forked child shares the channel's memory with its parent but is not
 * its producer: it must leave the channel alone. The pid of this process,
 * kept without a system call on the way. */
static pid_t this_process;
static pthread_once_t fork_watch = PTHREAD_ONCE_INIT;

static void after_fork_in_child(void) { this_process = getpid(); }

static void watch_forks(void)
{
    this_process = getpid();
    pthread_atfork(NULL, NULL, after_fork_in_child);
}

typedef struct stream_state {
    uint32_t seq;  /* the chunk being sent */
    uint32_t sent; /* its bytes sent so far */
} stream_state;

struct tt_live {
    pid_t owner; /* the process that made it */
    int fd;      /* while it is made; -1 after: the program's descriptors stay its own (writer.c) */
    ino_t ino;   /* its file's, so that growing it opens this file again by name, not another's */
    uint8_t *base;
    shared *sh;
    uint8_t *ring;
    uint8_t *defs;
    char name[64];
    uint64_t file_size;
    uint64_t head;
    uint64_t total; /* bytes of slices put in the ring */
    uint64_t head_seq;
    uint64_t defs_size;
    uint32_t defs_seq, defs_sent;
    stream_state *streams;
    uint32_t stream_cap;
    int reader;     /* a reader was attached at the start of this pass */
    uint64_t epoch; /* the reader_epoch streams were last started over for */
    uint64_t dropped;
    uint64_t request; /* the last request handed out by tt_live_poll_request */
    int broken;
};

static int grow_file(tt_live *l, uint64_t size)
{
    struct stat st;
    int fd = l->fd >= 0 ? l->fd : shm_open(l->name, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0) return -1;
    int rc = fstat(fd, &st) < 0 ? errno : st.st_ino != l->ino ? ESTALE : posix_fallocate(fd, 0, (off_t)size);
    if (fd != l->fd) close(fd);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    l->file_size = size;
    return 0;
}

int tt_live_create(const char *name, const char *experiment, tt_live **out, tt_error *err)
{
    pthread_once(&fork_watch, watch_forks);
    tt_live *l = calloc(1, sizeof *l);
    if (!l) return tt_fail(err, "out of memory");
    l->owner = getpid();
    channel_name(l->name, sizeof l->name, l->owner);
    l->fd = shm_open(l->name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (l->fd < 0 && errno == EEXIST && shm_unlink(l->name) == 0) /* left by an earlier process with our pid */
        l->fd = shm_open(l->name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    for (int tries = 0; l->fd < 0 && errno != ENOENT && tries < 8; tries++) { /* taken by another user */
        fallback_name(l->name, sizeof l->name, l->owner);
        l->fd = shm_open(l->name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    }
    if (l->fd < 0) {
        tt_fail_errno(err, "cannot create the live channel %s%s", SHM_DIR, l->name);
        free(l);
        return -1;
    }
    struct stat st;
    if (fstat(l->fd, &st) == 0) l->ino = st.st_ino;
    if (fchmod(l->fd, 0600) < 0 || grow_file(l, HEADER_SIZE + (uint64_t)TT_LIVE_RING_SIZE + DEFS_STEP) < 0) {
        tt_fail_errno(err, "cannot make the live channel %s%s", SHM_DIR, l->name);
        goto fail;
    }
    l->base = mmap(NULL, map_size(), PROT_READ | PROT_WRITE, MAP_SHARED, l->fd, 0);
    if (l->base == MAP_FAILED) {
        tt_fail_errno(err, "cannot map the live channel %s%s", SHM_DIR, l->name);
        goto fail;
    }
    close(l->fd);
    l->fd = -1;
    l->sh = (shared *)l->base;
    l->ring = l->base + HEADER_SIZE;
    l->defs = l->ring + TT_LIVE_RING_SIZE;

    shared *sh = l->sh;
    int zombie;
    memcpy(sh->magic, MAGIC, sizeof sh->magic);
    sh->version = VERSION;
    sh->header_size = HEADER_SIZE;
    sh->ring_size = TT_LIVE_RING_SIZE;
    sh->defs_max = TT_LIVE_DEFS_MAX;
    sh->pid = (uint64_t)getpid();
    if (process_start(getpid(), &sh->start_time, &zombie) < 0) sh->start_time = 0;
    copy_text(sh->name, sizeof sh->name, name);
    copy_text(sh->experiment, sizeof sh->experiment, experiment);
    atomic_store_explicit(&sh->measuring, 1, memory_order_relaxed);
    atomic_store_explicit(&sh->ready, 1, memory_order_release);
    *out = l;
    return 0;

fail:
    close(l->fd);
    shm_unlink(l->name);
    free(l);
    return -1;
}

void tt_live_close(tt_live *l)
{
    if (!l) return;
    if (l->owner == this_process) {
        if (!l->broken) atomic_store_explicit(&l->sh->state, TT_LIVE_ENDED, memory_order_release);
        shm_unlink(l->name);
    }
    munmap(l->base, map_size());
    free(l->streams);
    free(l);
}

static void drop(tt_live *l, uint64_t bytes)
{
    l->dropped += bytes;
    atomic_store_explicit(&l->sh->dropped_bytes, l->dropped, memory_order_relaxed);
}

void tt_live_begin_pass(tt_live *l)
{
    shared *sh = l->sh;
    uint64_t beat = atomic_load_explicit(&sh->reader_beat_ns, memory_order_relaxed);
    /* Signed: a beat newer than our clock reading is fresh. */
    l->reader = beat != 0 && (int64_t)(now_ns() - beat) < (int64_t)TT_LIVE_READER_TIMEOUT_NS;
    uint64_t epoch = atomic_load_explicit(&sh->reader_epoch, memory_order_acquire);
    if (epoch != l->epoch) {
        l->epoch = epoch;
        for (uint32_t i = 0; i < l->stream_cap; i++) l->streams[i].sent = 0;
    }
}

/* Appends to the definitions log; once it cannot grow, the channel stops. */
static void defs_append(tt_live *l, const uint8_t *data, uint32_t len)
{
    uint64_t size = l->defs_size + len;
    uint64_t end = HEADER_SIZE + (uint64_t)TT_LIVE_RING_SIZE + size;
    if (end > l->file_size) {
        uint64_t grown = l->file_size + (l->file_size - HEADER_SIZE - TT_LIVE_RING_SIZE);
        if (grown < end) grown = (end + DEFS_STEP - 1) / DEFS_STEP * DEFS_STEP;
        if (size > TT_LIVE_DEFS_MAX || grow_file(l, grown) < 0) {
            l->broken = 1;
            atomic_store_explicit(&l->sh->state, TT_LIVE_BROKEN, memory_order_release);
            return;
        }
    }
    memcpy(l->defs + l->defs_size, data, len);
    l->defs_size = size;
    atomic_store_explicit(&l->sh->defs_size, size, memory_order_release);
}

void tt_live_defs(tt_live *l, uint32_t seq, const uint8_t *data, uint32_t used, int full)
{
    if (l->broken || seq != l->defs_seq) return;
    if (used > l->defs_sent) defs_append(l, data + l->defs_sent, used - l->defs_sent);
    if (full) {
        l->defs_seq++;
        l->defs_sent = 0;
    } else {
        l->defs_sent = used;
    }
}

/* Puts one slice in the ring, over whatever a slow reader has not read. */
static void ring_put(tt_live *l, const entry *e, const uint8_t *data)
{
    uint64_t pos = l->head & (TT_LIVE_RING_SIZE - 1), to_end = TT_LIVE_RING_SIZE - pos;
    uint64_t need = e->size <= to_end ? e->size : to_end + e->size;
    /* Readers see the bytes it overwrites as lost before it touches them:
     * the release fence keeps the writes below after this store. */
    atomic_store_explicit(&l->sh->reserved, l->head + need, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    if (e->size > to_end) {
        if (to_end >= sizeof(entry)) {
            entry wrap = {.size = (uint32_t)to_end, .flags = ENTRY_WRAP};
            memcpy(l->ring + pos, &wrap, sizeof wrap);
        }
        l->head += to_end;
        pos = 0;
    }
    memcpy(l->ring + pos, e, sizeof *e);
    memcpy(l->ring + pos + sizeof *e, data, e->len);
    l->head += e->size;
    l->total += e->len;
    atomic_store_explicit(&l->sh->head_seq, ++l->head_seq, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&l->sh->total, l->total, memory_order_relaxed);
    atomic_store_explicit(&l->sh->head, l->head, memory_order_release);
    atomic_store_explicit(&l->sh->head_seq, ++l->head_seq, memory_order_release);
}

static stream_state *stream_of(tt_live *l, uint32_t stream)
{
    if (stream >= l->stream_cap) {
        uint32_t cap = l->stream_cap ? l->stream_cap : 16;
        while (cap <= stream) cap *= 2;
        stream_state *grown = realloc(l->streams, cap * sizeof *grown);
        if (!grown) return NULL;
        memset(grown + l->stream_cap, 0, (cap - l->stream_cap) * sizeof *grown);
        l->streams = grown;
        l->stream_cap = cap;
    }
    return &l->streams[stream];
}

int tt_live_events(tt_live *l, uint32_t stream, uint32_t seq, uint64_t base_ticks, const uint8_t *data, uint32_t used,
                   int full)
{
    if (l->broken) return 0;
    stream_state *st = stream_of(l, stream);
    if (!st) {
        if (full) drop(l, used);
        return 0;
    }
    /* A chunk still being filled whose predecessor is yet to come. */
    if (seq != st->seq) return 0;
    uint32_t from = st->sent;
    if (!full && used == from) return 1;
    int sent = 0;
    if (l->reader) {
        uint32_t len = used - from;
        entry e = {.size = (uint32_t)((sizeof(entry) + len + 7) & ~(size_t)7),
                   .flags = full ? TT_LIVE_END : 0,
                   .stream = stream,
                   .seq = seq,
                   .offset = from,
                   .len = len,
                   .base_ticks = base_ticks};
        ring_put(l, &e, data + from);
        sent = 1;
    }
    if (full) {
        /* The chunk goes back to the pool: what was not sent is lost. */
        if (!sent) drop(l, used - from);
        st->seq++;
        st->sent = 0;
    } else if (sent) {
        st->sent = used;
    }
    return sent;
}

int tt_live_requested(const tt_live *l)
{
    return atomic_load_explicit(&l->sh->request, memory_order_relaxed) != l->request;
}

int tt_live_poll_request(tt_live *l, uint64_t *ticket)
{
    uint64_t request = atomic_load_explicit(&l->sh->request, memory_order_acquire);
    if (request == l->request) return -1;
    l->request = request;
    *ticket = request;
    return (int)(request & TT_LIVE_REQUEST_MASK);
}

void tt_live_answer(tt_live *l, uint64_t ticket, int measuring)
{
    if (l->owner != this_process) return;
    if (measuring >= 0) atomic_store_explicit(&l->sh->measuring, measuring ? 1u : 0u, memory_order_release);
    if (ticket) atomic_store_explicit(&l->sh->answered, ticket, memory_order_release);
}

void tt_live_show_objects(tt_live *l, int counting)
{
    if (l->owner == this_process) atomic_store_explicit(&l->sh->objects, counting ? 1u : 0u, memory_order_release);
}

/* ---- readers ---- */

struct tt_live_view {
    int fd;
    uint8_t *base;
    shared *sh;
    const uint8_t *ring;
    const uint8_t *defs;
    pid_t pid;
    char channel[64]; /* its name in SHM_DIR */
    int attached;
    uint64_t pos;       /* the next slice to read */
    uint64_t head_seen; /* the producer's head when last looked at */
    uint64_t overrun;   /* bytes of slices the producer wrote over before this reader read them */
    uint64_t total;     /* bytes of slices before `pos` */
    uint8_t *copy;      /* the slice last read, copied out of the ring */
    size_t copy_cap;
    char name[NAME_MAX_LEN];
    char experiment[PATH_MAX_LEN];
};

/* 1 when the header is a ready channel of this layout. */
static int header_ok(const shared *sh)
{
    return atomic_load_explicit(&sh->ready, memory_order_acquire) && memcmp(sh->magic, MAGIC, sizeof sh->magic) == 0 &&
           sh->version == VERSION && sh->header_size == HEADER_SIZE && sh->ring_size == TT_LIVE_RING_SIZE &&
           sh->defs_max == TT_LIVE_DEFS_MAX;
}

/* The name of process pid's channel: the plain one when it is a file of
 * this user's, else a fallback one (fallback_name) of this user's if there
 * is one, else the plain one. */
static void find_channel(char *buf, size_t cap, pid_t pid)
{
    channel_name(buf, cap, pid);
    char path[128];
    struct stat st;
    snprintf(path, sizeof path, SHM_DIR "%s", buf);
    if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid()) return;
    char prefix[64];
    int prefix_len = snprintf(prefix, sizeof prefix, "%s-", buf + 1);
    DIR *dir = opendir(SHM_DIR);
    if (!dir) return;
    struct dirent *d;
    while ((d = readdir(dir)))
        if (strncmp(d->d_name, prefix, (size_t)prefix_len) == 0 && strlen(d->d_name) == (size_t)prefix_len + 8 &&
            fstatat(dirfd(dir), d->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
            st.st_uid == geteuid()) {
            snprintf(buf, cap, "/%s", d->d_name);
            break;
        }
    closedir(dir);
}

int tt_live_open(pid_t pid, tt_live_view **out, tt_error *err)
{
    char name[64];
    find_channel(name, sizeof name, pid);
    tt_live_view *v = calloc(1, sizeof *v);
    if (!v) return tt_fail(err, "out of memory");
    v->pid = pid;
    snprintf(v->channel, sizeof v->channel, "%s", name);
    v->fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    if (v->fd < 0) {
        if (errno == ENOENT)
            tt_fail(err, "no live process %ld (is it measured with --live?)", (long)pid);
        else
            tt_fail_errno(err, "cannot open the live channel %s%s", SHM_DIR, name);
        free(v);
        return -1;
    }
    struct stat st;
    if (fstat(v->fd, &st) < 0) {
        tt_fail_errno(err, "cannot open the live channel %s%s", SHM_DIR, name);
        goto fail;
    }
    if (st.st_uid != geteuid()) {
        tt_fail(err, "the live channel %s%s belongs to another user", SHM_DIR, name);
        goto fail;
    }
    if ((uint64_t)st.st_size < HEADER_SIZE + (uint64_t)TT_LIVE_RING_SIZE) {
        tt_fail(err, "the live channel of process %ld is not ready", (long)pid);
        goto fail;
    }
    v->base = mmap(NULL, map_size(), PROT_READ | PROT_WRITE, MAP_SHARED, v->fd, 0);
    if (v->base == MAP_FAILED) {
        tt_fail_errno(err, "cannot map the live channel %s%s", SHM_DIR, name);
        goto fail;
    }
    v->sh = (shared *)v->base;
    if (!header_ok(v->sh) || v->sh->pid != (uint64_t)pid) {
        tt_fail(err, "the live channel of process %ld is not one this tracetop reads", (long)pid);
        munmap(v->base, map_size());
        goto fail;
    }
    v->ring = v->base + HEADER_SIZE;
    v->defs = v->ring + TT_LIVE_RING_SIZE;
    copy_text(v->name, sizeof v->name, v->sh->name);
    copy_text(v->experiment, sizeof v->experiment, v->sh->experiment);
    *out = v;
    return 0;

fail:
    close(v->fd);
    free(v);
    return -1;
}

void tt_live_view_close(tt_live_view *v)
{
    if (!v) return;
    tt_live_detach(v);
    munmap(v->base, map_size());
    close(v->fd);
    free(v->copy);
    free(v);
}

int tt_live_current(const tt_live_view *v)
{
    char path[128];
    snprintf(path, sizeof path, SHM_DIR "%s", v->channel);
    struct stat mapped, named;
    return fstat(v->fd, &mapped) == 0 && stat(path, &named) == 0 && mapped.st_ino == named.st_ino &&
           mapped.st_dev == named.st_dev;
}

pid_t tt_live_pid(const tt_live_view *v) { return v->pid; }
const char *tt_live_name(const tt_live_view *v) { return v->name; }
const char *tt_live_experiment(const tt_live_view *v) { return v->experiment; }

tt_live_state tt_live_process_state(const tt_live_view *v)
{
    return (tt_live_state)atomic_load_explicit(&v->sh->state, memory_order_acquire);
}

int tt_live_alive(const tt_live_view *v)
{
    uint64_t start;
    int zombie;
    return process_start(v->pid, &start, &zombie) == 0 && !zombie && start == v->sh->start_time;
}

int tt_live_measuring(const tt_live_view *v)
{
    return (int)atomic_load_explicit(&v->sh->measuring, memory_order_acquire);
}

int tt_live_objects(const tt_live_view *v) { return (int)atomic_load_explicit(&v->sh->objects, memory_order_acquire); }

uint64_t tt_live_dropped_bytes(const tt_live_view *v)
{
    return atomic_load_explicit(&v->sh->dropped_bytes, memory_order_relaxed) + v->overrun;
}

const uint8_t *tt_live_defs_log(const tt_live_view *v, size_t *len)
{
    uint64_t size = atomic_load_explicit(&v->sh->defs_size, memory_order_acquire);
    /* Another process wrote that size: a page past the end of the file is a
     * SIGBUS when touched. */
    struct stat st;
    if (size > TT_LIVE_DEFS_MAX || fstat(v->fd, &st) < 0 ||
        size > (uint64_t)st.st_size - HEADER_SIZE - (uint64_t)TT_LIVE_RING_SIZE) {
        *len = 0;
        return NULL;
    }
    *len = (size_t)size;
    return v->defs;
}

/* From the producer's head: streams start over at their chunk's beginning
 * for this reader (and the others skip what they had). */
static void restart_at_head(tt_live_view *v)
{
    shared *sh = v->sh;
    uint64_t seq, head, total;
    do { /* head and total of one moment: the producer is between slices for a few stores only */
        seq = atomic_load_explicit(&sh->head_seq, memory_order_acquire);
        head = atomic_load_explicit(&sh->head, memory_order_acquire);
        total = atomic_load_explicit(&sh->total, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (seq & 1) sched_yield();
    } while ((seq & 1) || seq != atomic_load_explicit(&sh->head_seq, memory_order_relaxed));
    v->pos = v->head_seen = head;
    v->total = total;
    atomic_fetch_add_explicit(&sh->reader_epoch, 1, memory_order_acq_rel);
}

void tt_live_attach(tt_live_view *v)
{
    if (v->attached) return;
    tt_live_beat(v);
    restart_at_head(v);
    v->attached = 1;
}

void tt_live_detach(tt_live_view *v) { v->attached = 0; }

void tt_live_beat(tt_live_view *v) { atomic_store_explicit(&v->sh->reader_beat_ns, now_ns(), memory_order_relaxed); }

/* 1 when the bytes from `pos` on may have been written over since the
 * producer said how far it would write; the reads before it are done. */
static int overrun(const tt_live_view *v, uint64_t pos)
{
    atomic_thread_fence(memory_order_acquire);
    uint64_t reserved = atomic_load_explicit(&v->sh->reserved, memory_order_relaxed);
    return reserved > pos + TT_LIVE_RING_SIZE;
}

static void skip_overrun(tt_live_view *v)
{
    uint64_t from = v->total;
    restart_at_head(v);
    v->overrun += v->total - from;
}

int tt_live_next(tt_live_view *v, tt_live_slice *s, const char **why)
{
    const uint64_t mask = TT_LIVE_RING_SIZE - 1;
    if (!v->attached) return 0;
    for (;;) {
        if (v->pos == v->head_seen) {
            v->head_seen = atomic_load_explicit(&v->sh->head, memory_order_acquire);
            if (v->pos == v->head_seen) return 0;
        }
        if (v->head_seen - v->pos > TT_LIVE_RING_SIZE) {
            skip_overrun(v);
            continue;
        }
        uint64_t at = v->pos & mask, to_end = TT_LIVE_RING_SIZE - at, avail = v->head_seen - v->pos;
        if (to_end < sizeof(entry)) { /* too short for a wrap entry: skipped */
            v->pos += to_end;
            continue;
        }
        entry e;
        memcpy(&e, v->ring + at, sizeof e);
        int valid;
        if (e.flags & ENTRY_WRAP)
            valid = e.size == to_end;
        else
            valid = e.size >= sizeof e && e.size % 8 == 0 && e.size <= to_end && e.size <= avail &&
                    e.len <= e.size - sizeof e && (uint64_t)e.offset + e.len <= TT_CHUNK_PAYLOAD_MAX;
        if (valid && !(e.flags & ENTRY_WRAP) && e.len > v->copy_cap) {
            uint8_t *grown = realloc(v->copy, e.len);
            if (!grown) {
                *why = "out of memory";
                v->attached = 0;
                return -1;
            }
            v->copy = grown;
            v->copy_cap = e.len;
        }
        if (valid && !(e.flags & ENTRY_WRAP)) memcpy(v->copy, v->ring + at + sizeof e, e.len);
        if (overrun(v, v->pos)) {
            skip_overrun(v);
            continue;
        }
        if (!valid) break;
        if (e.flags & ENTRY_WRAP) {
            v->pos += to_end;
            continue;
        }
        s->stream = e.stream;
        s->seq = e.seq;
        s->offset = e.offset;
        s->len = e.len;
        s->flags = e.flags;
        s->base_ticks = e.base_ticks;
        s->data = v->copy;
        v->pos += e.size;
        v->total += e.len;
        return 1;
    }
    *why = "the live channel holds a damaged slice";
    v->attached = 0;
    return -1;
}

uint64_t tt_live_request(tt_live_view *v, int what)
{
    uint64_t old = atomic_load_explicit(&v->sh->request, memory_order_acquire), request;
    do {
        request = (((old >> TT_LIVE_REQUEST_BITS) + 1) << TT_LIVE_REQUEST_BITS) |
                  ((uint64_t)what & TT_LIVE_REQUEST_MASK);
    } while (!atomic_compare_exchange_weak_explicit(&v->sh->request, &old, request, memory_order_acq_rel,
                                                    memory_order_acquire));
    return request;
}

int tt_live_answered(const tt_live_view *v, uint64_t ticket)
{
    return (atomic_load_explicit(&v->sh->answered, memory_order_acquire) >> 2) >= (ticket >> 2);
}

/* ---- finding channels ---- */

typedef enum channel_status { CHANNEL_READY, CHANNEL_NOT_READY, CHANNEL_STALE } channel_status;

/* A channel `name` (in SHM_DIR) is stale when it was left by a process that
 * is gone: no such process, a zombie, a process started after the channel
 * (its pid reused), or one that never made it ready. */
static channel_status status_of(const char *name, pid_t pid, const struct stat *st)
{
    uint64_t start;
    int zombie;
    if (process_start(pid, &start, &zombie) < 0 || zombie) return CHANNEL_STALE;
    int old = time(NULL) - st->st_mtime > UNREADY_STALE_S;
    channel_status status = old ? CHANNEL_STALE : CHANNEL_NOT_READY;
    char shm_name[NAME_MAX_LEN + 2];
    snprintf(shm_name, sizeof shm_name, "/%s", name);
    int fd = shm_open(shm_name, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) return CHANNEL_NOT_READY;
    if ((uint64_t)st->st_size >= HEADER_SIZE + (uint64_t)TT_LIVE_RING_SIZE) {
        const shared *sh = mmap(NULL, HEADER_SIZE, PROT_READ, MAP_SHARED, fd, 0);
        if (sh != MAP_FAILED) {
            if (header_ok(sh))
                status = sh->pid == (uint64_t)pid && sh->start_time == start ? CHANNEL_READY : CHANNEL_STALE;
            munmap((void *)sh, HEADER_SIZE);
        }
    }
    close(fd);
    return status;
}

int tt_live_list(pid_t **pids, size_t *count, size_t *removed, tt_error *err)
{
    char prefix[64];
    int prefix_len = snprintf(prefix, sizeof prefix, "tracetop-%u-", (unsigned)geteuid());
    *pids = NULL;
    *count = 0;
    if (removed) *removed = 0;
    DIR *dir = opendir(SHM_DIR);
    if (!dir) return tt_fail_errno(err, "cannot list %s", SHM_DIR);
    size_t cap = 0;
    struct dirent *d;
    while ((d = readdir(dir))) {
        if (strncmp(d->d_name, prefix, (size_t)prefix_len) != 0) continue;
        char *end;
        long pid = strtol(d->d_name + prefix_len, &end, 10);
        if (*end == '-' && strlen(end) == 9) end += 9; /* a fallback name */
        if (*end || pid <= 0) continue;
        struct stat st;
        if (fstatat(dirfd(dir), d->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
            st.st_uid != geteuid())
            continue;
        channel_status status = status_of(d->d_name, (pid_t)pid, &st);
        if (status == CHANNEL_STALE) {
            char shm_name[NAME_MAX_LEN + 2];
            snprintf(shm_name, sizeof shm_name, "/%s", d->d_name);
            if (shm_unlink(shm_name) == 0 && removed) (*removed)++;
        }
        if (status != CHANNEL_READY) continue;
        if (*count == cap) {
            cap = cap ? cap * 2 : 16;
            pid_t *grown = realloc(*pids, cap * sizeof *grown);
            if (!grown) {
                closedir(dir);
                free(*pids);
                *pids = NULL;
                *count = 0;
                return tt_fail(err, "out of memory");
            }
            *pids = grown;
        }
        (*pids)[(*count)++] = (pid_t)pid;
    }
    closedir(dir);
    return 0;
}

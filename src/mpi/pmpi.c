/* pmpi.c -- libtracetop_mpi.so: the program's MPI calls, recorded through
 * the MPI profiling interface (see tracetop_mpi.h).
 *
 * Each wrapper enters the region of its function, records what the call
 * communicates (format.h: a message sent when the call starts, a message
 * received or a collective's sizes when it returns), calls the PMPI_
 * function and leaves the region. Peers are ranks in the communicator and
 * communicators are numbered per process (MPI_COMM definitions), as OTF2
 * wants them; sizes are in bytes, from the counts and types of the call
 * and, for what is received, from the status.
 *
 * What it keeps, each under its own lock: the communicators it has seen
 * (by handle; defined when made by a wrapped call, with their parent and
 * the number of communicators made from the parent before, or else when
 * first used) and the nonblocking operations in flight (by request handle),
 * so that a completion says which operation completed. The communicators
 * lock may be held when taking the stream (hooks->begin), never the other
 * way round. Persistent requests, nonblocking collectives, one-sided
 * communication and MPI-IO are not recorded (their calls are not wrapped).
 */
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "tracetop_mpi.h"

#define EXPORT __attribute__((visibility("default")))
#define NONE UINT32_MAX

/* ---- regions ---- */

/* The wrapped functions, one line per family (clang-format would run them together). */
/* clang-format off */
#define FUNCTIONS(X)                                                                                       \
    X(Init) X(Init_thread) X(Finalize)                                                                     \
    X(Send) X(Ssend) X(Bsend) X(Rsend) X(Recv) X(Sendrecv) X(Sendrecv_replace) X(Mrecv)                   \
    X(Isend) X(Issend) X(Ibsend) X(Irsend) X(Irecv) X(Imrecv)                                              \
    X(Wait) X(Waitall) X(Waitany) X(Waitsome) X(Test) X(Testall) X(Testany) X(Testsome) X(Request_free)   \
    X(Probe) X(Iprobe) X(Mprobe) X(Improbe)                                                                \
    X(Barrier) X(Bcast) X(Gather) X(Gatherv) X(Scatter) X(Scatterv) X(Allgather) X(Allgatherv)            \
    X(Alltoall) X(Alltoallv) X(Reduce) X(Allreduce) X(Reduce_scatter) X(Reduce_scatter_block) X(Scan)     \
    X(Exscan)                                                                                              \
    X(Comm_dup) X(Comm_dup_with_info) X(Comm_split) X(Comm_split_type) X(Comm_create) X(Comm_free)
/* clang-format on */

enum {
#define ENUM(name) FN_##name,
    FUNCTIONS(ENUM)
#undef ENUM
        FN_COUNT
};

static const char *const function_names[FN_COUNT] = {
#define NAME(name) "MPI_" #name,
    FUNCTIONS(NAME)
#undef NAME
};

static uint32_t regions[FN_COUNT];
static _Atomic(const tt_mpi_hooks *) attached;

/* ---- recording a call ----
 *
 * open_call enters the function's region and returns the hooks with the
 * stream held, to record what the call sends, then release; close_call
 * takes the stream again to record what it received, then leave. NULL:
 * this thread does not record (the call is still made). */

static const tt_mpi_hooks *open_call(int fn)
{
    const tt_mpi_hooks *h = atomic_load_explicit(&attached, memory_order_acquire);
    if (!h || !h->begin()) return NULL;
    h->enter(regions[fn]);
    return h;
}

/* The stream again, for the end of a call that open_call recorded: NULL
 * when the measurement ended meanwhile. */
static const tt_mpi_hooks *close_call(const tt_mpi_hooks *h) { return h && h->begin() ? h : NULL; }

static void leave(const tt_mpi_hooks *h)
{
    if (!h) return;
    h->leave();
    h->end();
}

/* ---- sizes ---- */

static uint64_t bytes_of(int count, MPI_Datatype type)
{
    int size = 0;
    if (count <= 0 || type == MPI_DATATYPE_NULL || PMPI_Type_size(type, &size) != MPI_SUCCESS || size <= 0) return 0;
    return (uint64_t)count * (uint64_t)size;
}

static uint64_t sum_bytes(const int *counts, int n, MPI_Datatype type)
{
    uint64_t sum = 0;
    for (int i = 0; counts && i < n; i++) sum += bytes_of(counts[i], type);
    return sum;
}

static uint64_t received_bytes(const MPI_Status *status)
{
    int count = 0;
    if (PMPI_Get_count(status, MPI_BYTE, &count) != MPI_SUCCESS || count == MPI_UNDEFINED || count < 0) return 0;
    return (uint64_t)count;
}

static int size_of(MPI_Comm comm)
{
    int n = 0;
    return PMPI_Comm_size(comm, &n) == MPI_SUCCESS ? n : 0;
}

static int rank_in(MPI_Comm comm)
{
    int r = -1;
    return PMPI_Comm_rank(comm, &r) == MPI_SUCCESS ? r : -1;
}

/* ---- communicators ---- */

typedef struct comm_entry {
    MPI_Comm handle; /* MPI_COMM_NULL once freed */
    uint8_t kind;
    uint32_t parent;
    uint64_t seq, size;
    uint32_t *members; /* world ranks; NULL when not listed */
    size_t listed;
    uint64_t made; /* communicators made from this one so far */
} comm_entry;

static pthread_mutex_t comms_lock = PTHREAD_MUTEX_INITIALIZER;
static comm_entry *comms;
static uint32_t comm_count, comm_cap;
static int started; /* MPI initialized and its world known */
static uint32_t world_rank, world_size;

static void define_comm(const tt_mpi_hooks *h, uint32_t id)
{
    const comm_entry *c = &comms[id];
    h->define_comm(id, c->kind, c->parent, c->seq, c->size, c->members, c->listed);
}

/* The world ranks of the members of comm (its local group), or NULL. */
static uint32_t *world_ranks(MPI_Comm comm, int n)
{
    MPI_Group group, world;
    int *ranks = malloc((size_t)n * sizeof *ranks), *translated = malloc((size_t)n * sizeof *translated);
    uint32_t *members = malloc((size_t)n * sizeof *members);
    int ok = ranks && translated && members && PMPI_Comm_group(comm, &group) == MPI_SUCCESS;
    if (ok) {
        if (PMPI_Comm_group(MPI_COMM_WORLD, &world) == MPI_SUCCESS) {
            for (int i = 0; i < n; i++) ranks[i] = i;
            ok = PMPI_Group_translate_ranks(group, n, ranks, world, translated) == MPI_SUCCESS;
            PMPI_Group_free(&world);
        } else {
            ok = 0;
        }
        PMPI_Group_free(&group);
    }
    for (int i = 0; ok && i < n; i++) {
        if (translated[i] < 0)
            ok = 0; /* MPI_UNDEFINED: not in the world (spawned processes) */
        else
            members[i] = (uint32_t)translated[i];
    }
    free(ranks);
    free(translated);
    if (!ok) {
        free(members);
        return NULL;
    }
    return members;
}

/* Adds and defines a communicator; called with comms_lock held. */
static uint32_t add_comm(MPI_Comm handle, uint32_t parent, uint64_t seq)
{
    if (comm_count == comm_cap) {
        uint32_t cap = comm_cap ? comm_cap * 2 : 16;
        comm_entry *grown = realloc(comms, cap * sizeof *grown);
        if (!grown) return NONE;
        comms = grown;
        comm_cap = cap;
    }
    comm_entry c = {.handle = handle, .parent = parent, .seq = seq};
    int n = size_of(handle);
    c.size = (uint64_t)(n > 0 ? n : 0);
    if (handle == MPI_COMM_WORLD) {
        c.kind = TT_COMM_WORLD;
    } else {
        c.kind = handle == MPI_COMM_SELF ? TT_COMM_SELF : TT_COMM_DERIVED;
        if (n > 0 && (size_t)n <= TT_MPI_COMM_LISTED_MAX && (c.members = world_ranks(handle, n))) c.listed = (size_t)n;
    }
    uint32_t id = comm_count++;
    comms[id] = c;
    const tt_mpi_hooks *h = atomic_load_explicit(&attached, memory_order_acquire);
    if (h) define_comm(h, id);
    return id;
}

/* Called with comms_lock held. */
static uint32_t find_comm(MPI_Comm handle)
{
    for (uint32_t i = comm_count; i-- > 0;)
        if (comms[i].handle == handle) return i;
    return NONE;
}

/* Defines the process's rank and its world and self communicators; called
 * with comms_lock held, once MPI is initialized. */
static void start_locked(void)
{
    if (started) return;
    started = 1;
    world_rank = (uint32_t)rank_in(MPI_COMM_WORLD);
    world_size = (uint32_t)size_of(MPI_COMM_WORLD);
    const tt_mpi_hooks *h = atomic_load_explicit(&attached, memory_order_acquire);
    if (h) h->define_rank(world_rank, world_size);
    add_comm(MPI_COMM_WORLD, NONE, 0);
    add_comm(MPI_COMM_SELF, NONE, 0);
}

static void start(void)
{
    pthread_mutex_lock(&comms_lock);
    start_locked();
    pthread_mutex_unlock(&comms_lock);
}

/* The id of a communicator, defined on first sight (not made by a wrapped
 * call: no parent); NONE for MPI_COMM_NULL or before MPI started. */
static uint32_t comm_id(MPI_Comm handle)
{
    if (handle == MPI_COMM_NULL) return NONE;
    pthread_mutex_lock(&comms_lock);
    uint32_t id = started ? find_comm(handle) : NONE;
    if (started && id == NONE) id = add_comm(handle, NONE, 0);
    pthread_mutex_unlock(&comms_lock);
    return id;
}

/* After a call that made `made` from `parent` (every member of the parent
 * calls it; those left out get MPI_COMM_NULL). */
static void comm_made(MPI_Comm parent, MPI_Comm made)
{
    pthread_mutex_lock(&comms_lock);
    if (started) {
        uint32_t p = find_comm(parent);
        if (p == NONE) p = add_comm(parent, NONE, 0);
        if (p != NONE) {
            uint64_t seq = comms[p].made++;
            if (made != MPI_COMM_NULL) add_comm(made, p, seq);
        }
    }
    pthread_mutex_unlock(&comms_lock);
}

static void comm_freed(MPI_Comm handle)
{
    pthread_mutex_lock(&comms_lock);
    uint32_t id = started ? find_comm(handle) : NONE;
    if (id != NONE) comms[id].handle = MPI_COMM_NULL;
    pthread_mutex_unlock(&comms_lock);
}

/* ---- nonblocking operations in flight ---- */

typedef struct pending {
    MPI_Request handle; /* MPI_REQUEST_NULL: a free slot */
    uint64_t id;
    uint32_t comm;
    uint8_t kind; /* TT_EV_MPI_ISEND or TT_EV_MPI_IRECV */
} pending;

static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;
static pending *table; /* open addressing, linear probing, at most half full */
static size_t table_mask, table_used;
static atomic_uint_fast64_t next_request;

static size_t slot_of(MPI_Request handle)
{
    uint64_t key = 0;
    memcpy(&key, &handle, sizeof handle < sizeof key ? sizeof handle : sizeof key);
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return (size_t)key & table_mask;
}

/* Called with pending_lock held. */
static int grow_table(void)
{
    size_t size = table ? (table_mask + 1) * 2 : 64;
    pending *grown = malloc(size * sizeof *grown);
    if (!grown) return -1;
    for (size_t i = 0; i < size; i++) grown[i].handle = MPI_REQUEST_NULL;
    pending *old = table;
    size_t old_size = table ? table_mask + 1 : 0;
    table = grown;
    table_mask = size - 1;
    for (size_t i = 0; i < old_size; i++) {
        if (old[i].handle == MPI_REQUEST_NULL) continue;
        size_t j = slot_of(old[i].handle);
        while (table[j].handle != MPI_REQUEST_NULL) j = (j + 1) & table_mask;
        table[j] = old[i];
    }
    free(old);
    return 0;
}

static void remember(MPI_Request handle, uint64_t id, uint32_t comm, uint8_t kind)
{
    if (handle == MPI_REQUEST_NULL) return;
    pthread_mutex_lock(&pending_lock);
    if ((table_used + 1) * 2 <= (table ? table_mask + 1 : 0) || grow_table() == 0) {
        size_t i = slot_of(handle);
        while (table[i].handle != MPI_REQUEST_NULL && table[i].handle != handle) i = (i + 1) & table_mask;
        if (table[i].handle == MPI_REQUEST_NULL) table_used++;
        table[i] = (pending){handle, id, comm, kind};
    }
    pthread_mutex_unlock(&pending_lock);
}

/* Takes the operation of a request out of the table: 1 with *out set, or 0
 * when it is not one of ours (persistent, or posted before recording). */
static int forget(MPI_Request handle, pending *out)
{
    int found = 0;
    pthread_mutex_lock(&pending_lock);
    if (table && handle != MPI_REQUEST_NULL) {
        size_t i = slot_of(handle);
        while (table[i].handle != MPI_REQUEST_NULL && table[i].handle != handle) i = (i + 1) & table_mask;
        if (table[i].handle == handle) {
            *out = table[i];
            found = 1;
            table_used--;
            /* Backward shift: keep every later entry of the run reachable. */
            for (size_t j = (i + 1) & table_mask; table[j].handle != MPI_REQUEST_NULL; j = (j + 1) & table_mask) {
                size_t home = slot_of(table[j].handle);
                if (((j - home) & table_mask) >= ((j - i) & table_mask)) {
                    table[i] = table[j];
                    i = j;
                }
            }
            table[i].handle = MPI_REQUEST_NULL;
        }
    }
    pthread_mutex_unlock(&pending_lock);
    return found;
}

/* ---- matched messages (MPI_Mprobe) ----
 *
 * A message handle says nothing of its communicator, which its receive
 * must record: the probe that matched it notes it here. */

typedef struct matched {
    MPI_Message handle;
    uint32_t comm;
} matched;

static pthread_mutex_t matched_lock = PTHREAD_MUTEX_INITIALIZER;
static matched *messages;
static size_t message_count, message_cap;

static void matched_in(MPI_Message handle, MPI_Comm comm)
{
    if (handle == MPI_MESSAGE_NULL || handle == MPI_MESSAGE_NO_PROC) return;
    uint32_t id = comm_id(comm);
    pthread_mutex_lock(&matched_lock);
    if (message_count == message_cap) {
        size_t cap = message_cap ? message_cap * 2 : 16;
        matched *grown = realloc(messages, cap * sizeof *grown);
        if (grown) {
            messages = grown;
            message_cap = cap;
        }
    }
    if (message_count < message_cap) messages[message_count++] = (matched){handle, id};
    pthread_mutex_unlock(&matched_lock);
}

/* The communicator of a matched message, forgotten; NONE when unknown. */
static uint32_t matched_comm(MPI_Message handle)
{
    uint32_t id = NONE;
    pthread_mutex_lock(&matched_lock);
    for (size_t i = 0; i < message_count; i++)
        if (messages[i].handle == handle) {
            id = messages[i].comm;
            messages[i] = messages[--message_count];
            break;
        }
    pthread_mutex_unlock(&matched_lock);
    return id;
}

/* A request that completed with `status`: its events, when h records. */
static void completed(const tt_mpi_hooks *h, MPI_Request handle, const MPI_Status *status)
{
    pending op;
    if (!forget(handle, &op) || !h) return;
    if (op.kind == TT_EV_MPI_ISEND) {
        h->request(TT_EV_MPI_ISEND_COMPLETE, op.id);
        return;
    }
    int cancelled = 0;
    PMPI_Test_cancelled(status, &cancelled);
    if (!cancelled && status->MPI_SOURCE >= 0 && status->MPI_TAG >= 0)
        h->message(TT_EV_MPI_IRECV, (uint32_t)status->MPI_SOURCE, (uint32_t)status->MPI_TAG, op.comm,
                   received_bytes(status), op.id);
}

/* ---- wrappers: setup ---- */

EXPORT int MPI_Init(int *argc, char ***argv)
{
    const tt_mpi_hooks *h = open_call(FN_Init);
    if (h) h->end();
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) start();
    leave(close_call(h));
    return rc;
}

EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    const tt_mpi_hooks *h = open_call(FN_Init_thread);
    if (h) h->end();
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) start();
    leave(close_call(h));
    return rc;
}

EXPORT int MPI_Finalize(void)
{
    const tt_mpi_hooks *h = open_call(FN_Finalize);
    if (h) h->end();
    int rc = PMPI_Finalize();
    leave(close_call(h));
    return rc;
}

/* ---- wrappers: point to point ---- */

/* A blocking send: the message when the call starts. */
static const tt_mpi_hooks *open_send(int fn, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    uint32_t id = dest >= 0 ? comm_id(comm) : NONE; /* MPI_PROC_NULL sends nothing */
    const tt_mpi_hooks *h = open_call(fn);
    if (!h) return NULL;
    if (id != NONE) h->message(TT_EV_MPI_SEND, (uint32_t)dest, (uint32_t)tag, id, bytes_of(count, type), 0);
    h->end();
    return h;
}

/* A blocking receive: the message when the call returns. */
static void close_recv_in(const tt_mpi_hooks *h, uint32_t id, const MPI_Status *status)
{
    if (!h || !(h = close_call(h))) return;
    if (id != NONE && status->MPI_TAG >= 0)
        h->message(TT_EV_MPI_RECV, (uint32_t)status->MPI_SOURCE, (uint32_t)status->MPI_TAG, id, received_bytes(status),
                   0);
    leave(h);
}

static void close_recv(const tt_mpi_hooks *h, MPI_Comm comm, const MPI_Status *status)
{
    if (h) close_recv_in(h, status->MPI_SOURCE >= 0 ? comm_id(comm) : NONE, status);
}

#define SEND_WRAPPER(name)                                                                                 \
    EXPORT int MPI_##name(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) \
    {                                                                                                      \
        const tt_mpi_hooks *h = open_send(FN_##name, count, type, dest, tag, comm);                        \
        int rc = PMPI_##name(buf, count, type, dest, tag, comm);                                           \
        leave(close_call(h));                                                                              \
        return rc;                                                                                         \
    }
SEND_WRAPPER(Send)
SEND_WRAPPER(Ssend)
SEND_WRAPPER(Bsend)
SEND_WRAPPER(Rsend)

EXPORT int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    MPI_Status local;
    if (status == MPI_STATUS_IGNORE) status = &local;
    const tt_mpi_hooks *h = open_call(FN_Recv);
    if (h) h->end();
    int rc = PMPI_Recv(buf, count, type, source, tag, comm, status);
    close_recv(h, comm, status);
    return rc;
}

EXPORT int MPI_Mrecv(void *buf, int count, MPI_Datatype type, MPI_Message *message, MPI_Status *status)
{
    MPI_Status local;
    if (status == MPI_STATUS_IGNORE) status = &local;
    uint32_t id = matched_comm(*message);
    const tt_mpi_hooks *h = open_call(FN_Mrecv);
    if (h) h->end();
    int rc = PMPI_Mrecv(buf, count, type, message, status);
    close_recv_in(h, status->MPI_SOURCE >= 0 ? id : NONE, status);
    return rc;
}

EXPORT int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void *recvbuf,
                        int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm,
                        MPI_Status *status)
{
    MPI_Status local;
    if (status == MPI_STATUS_IGNORE) status = &local;
    const tt_mpi_hooks *h = open_send(FN_Sendrecv, sendcount, sendtype, dest, sendtag, comm);
    int rc = PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag,
                           comm, status);
    close_recv(h, comm, status);
    return rc;
}

EXPORT int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype type, int dest, int sendtag, int source, int recvtag,
                                MPI_Comm comm, MPI_Status *status)
{
    MPI_Status local;
    if (status == MPI_STATUS_IGNORE) status = &local;
    const tt_mpi_hooks *h = open_send(FN_Sendrecv_replace, count, type, dest, sendtag, comm);
    int rc = PMPI_Sendrecv_replace(buf, count, type, dest, sendtag, source, recvtag, comm, status);
    close_recv(h, comm, status);
    return rc;
}

/* ---- wrappers: nonblocking point to point ---- */

#define ISEND_WRAPPER(name)                                                                                            \
    EXPORT int MPI_##name(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,             \
                          MPI_Request *request)                                                                        \
    {                                                                                                                  \
        uint32_t id = dest >= 0 ? comm_id(comm) : NONE;                                                                \
        uint64_t op = atomic_fetch_add_explicit(&next_request, 1, memory_order_relaxed);                               \
        const tt_mpi_hooks *h = open_call(FN_##name);                                                                  \
        if (h) {                                                                                                       \
            if (id != NONE) h->message(TT_EV_MPI_ISEND, (uint32_t)dest, (uint32_t)tag, id, bytes_of(count, type), op); \
            h->end();                                                                                                  \
        }                                                                                                              \
        int rc = PMPI_##name(buf, count, type, dest, tag, comm, request);                                              \
        if (rc == MPI_SUCCESS && h && id != NONE) remember(*request, op, id, TT_EV_MPI_ISEND);                         \
        leave(close_call(h));                                                                                          \
        return rc;                                                                                                     \
    }
ISEND_WRAPPER(Isend)
ISEND_WRAPPER(Issend)
ISEND_WRAPPER(Ibsend)
ISEND_WRAPPER(Irsend)

/* A receive posted: its request now, its message when it completes. */
static void posted_recv(const tt_mpi_hooks *h, int rc, MPI_Request request, uint32_t comm)
{
    if (!h) return;
    uint64_t op = atomic_fetch_add_explicit(&next_request, 1, memory_order_relaxed);
    if (rc == MPI_SUCCESS && comm != NONE && request != MPI_REQUEST_NULL) remember(request, op, comm, TT_EV_MPI_IRECV);
    if (!(h = close_call(h))) return;
    if (rc == MPI_SUCCESS && comm != NONE && request != MPI_REQUEST_NULL) h->request(TT_EV_MPI_IRECV_REQUEST, op);
    leave(h);
}

EXPORT int MPI_Irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request *request)
{
    uint32_t id = comm_id(comm);
    const tt_mpi_hooks *h = open_call(FN_Irecv);
    if (h) h->end();
    int rc = PMPI_Irecv(buf, count, type, source, tag, comm, request);
    posted_recv(h, rc, *request, id);
    return rc;
}

EXPORT int MPI_Imrecv(void *buf, int count, MPI_Datatype type, MPI_Message *message, MPI_Request *request)
{
    uint32_t id = matched_comm(*message);
    const tt_mpi_hooks *h = open_call(FN_Imrecv);
    if (h) h->end();
    int rc = PMPI_Imrecv(buf, count, type, message, request);
    posted_recv(h, rc, *request, id);
    return rc;
}

/* ---- wrappers: completion ----
 *
 * The handles are saved before the call: a request that completes is set
 * to MPI_REQUEST_NULL by it. Statuses are needed even where the program
 * ignores them. Where memory for either runs out, the call is made
 * unrecorded, and its operations stay in the table. */

static MPI_Request *saved_requests(int n, const MPI_Request *requests, MPI_Request *one)
{
    MPI_Request *saved = n > 1 ? malloc((size_t)n * sizeof *saved) : one;
    if (saved && n > 0) memcpy(saved, requests, (size_t)n * sizeof *requests);
    return saved;
}

static MPI_Status *statuses_for(int n, MPI_Status *statuses, MPI_Status *one)
{
    if (statuses != MPI_STATUSES_IGNORE) return statuses;
    return n > 1 ? malloc((size_t)n * sizeof *statuses) : one;
}

static void free_unless(void *p, const void *given, const void *one)
{
    if (p != given && p != one) free(p);
}

EXPORT int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    MPI_Status local;
    if (status == MPI_STATUS_IGNORE) status = &local;
    MPI_Request saved = *request;
    const tt_mpi_hooks *h = open_call(FN_Wait);
    if (h) h->end();
    int rc = PMPI_Wait(request, status);
    h = close_call(h);
    if (saved != MPI_REQUEST_NULL && *request == MPI_REQUEST_NULL) completed(h, saved, status);
    leave(h);
    return rc;
}

EXPORT int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    MPI_Status local;
    if (status == MPI_STATUS_IGNORE) status = &local;
    MPI_Request saved = *request;
    const tt_mpi_hooks *h = open_call(FN_Test);
    if (h) h->end();
    int rc = PMPI_Test(request, flag, status);
    h = close_call(h);
    if (*flag && saved != MPI_REQUEST_NULL && *request == MPI_REQUEST_NULL) completed(h, saved, status);
    leave(h);
    return rc;
}

/* Waitall and Testall: every request completed that the call set to null. */
#define ALL_WRAPPER(name, params, args, done)                                                                          \
    EXPORT int MPI_##name params                                                                                       \
    {                                                                                                                  \
        MPI_Request one;                                                                                               \
        MPI_Status one_status;                                                                                         \
        MPI_Request *saved = saved_requests(n, requests, &one);                                                        \
        MPI_Status *given = statuses, *used = statuses_for(n, statuses, &one_status);                                  \
        if (!saved || !used) {                                                                                         \
            free_unless(saved, NULL, &one);                                                                            \
            free_unless(used, given, &one_status);                                                                     \
            return PMPI_##name args;                                                                                   \
        }                                                                                                              \
        statuses = used;                                                                                               \
        const tt_mpi_hooks *h = open_call(FN_##name);                                                                  \
        if (h) h->end();                                                                                               \
        int rc = PMPI_##name args;                                                                                     \
        h = close_call(h);                                                                                             \
        for (int i = 0; (done) && i < n; i++)                                                                          \
            if (saved[i] != MPI_REQUEST_NULL && requests[i] == MPI_REQUEST_NULL) completed(h, saved[i], &statuses[i]); \
        leave(h);                                                                                                      \
        free_unless(saved, NULL, &one);                                                                                \
        free_unless(used, given, &one_status);                                                                         \
        return rc;                                                                                                     \
    }
ALL_WRAPPER(Waitall, (int n, MPI_Request requests[], MPI_Status statuses[]), (n, requests, statuses), 1)
ALL_WRAPPER(Testall, (int n, MPI_Request requests[], int *flag, MPI_Status statuses[]), (n, requests, flag, statuses),
            *flag)

/* Waitany and Testany: the request at *index completed. */
#define ANY_WRAPPER(name, params, args, done)                                                                    \
    EXPORT int MPI_##name params                                                                                 \
    {                                                                                                            \
        MPI_Request one;                                                                                         \
        MPI_Request *saved = saved_requests(n, requests, &one);                                                  \
        if (!saved) return PMPI_##name args;                                                                     \
        MPI_Status local;                                                                                        \
        if (status == MPI_STATUS_IGNORE) status = &local;                                                        \
        const tt_mpi_hooks *h = open_call(FN_##name);                                                            \
        if (h) h->end();                                                                                         \
        int rc = PMPI_##name args;                                                                               \
        h = close_call(h);                                                                                       \
        if ((done) && *index != MPI_UNDEFINED && *index >= 0 && *index < n) completed(h, saved[*index], status); \
        leave(h);                                                                                                \
        free_unless(saved, NULL, &one);                                                                          \
        return rc;                                                                                               \
    }
ANY_WRAPPER(Waitany, (int n, MPI_Request requests[], int *index, MPI_Status *status), (n, requests, index, status), 1)
ANY_WRAPPER(Testany, (int n, MPI_Request requests[], int *index, int *flag, MPI_Status *status),
            (n, requests, index, flag, status), *flag)

/* Waitsome and Testsome: the completed are listed by index, their statuses
 * in the order of the list. */
#define SOME_WRAPPER(name)                                                                                    \
    EXPORT int MPI_##name(int n, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[]) \
    {                                                                                                         \
        MPI_Request one;                                                                                      \
        MPI_Status one_status;                                                                                \
        MPI_Request *saved = saved_requests(n, requests, &one);                                               \
        MPI_Status *used = statuses_for(n, statuses, &one_status);                                            \
        if (!saved || !used) {                                                                                \
            free_unless(saved, NULL, &one);                                                                   \
            free_unless(used, statuses, &one_status);                                                         \
            return PMPI_##name(n, requests, outcount, indices, statuses);                                     \
        }                                                                                                     \
        const tt_mpi_hooks *h = open_call(FN_##name);                                                         \
        if (h) h->end();                                                                                      \
        int rc = PMPI_##name(n, requests, outcount, indices, used);                                           \
        h = close_call(h);                                                                                    \
        for (int k = 0; *outcount != MPI_UNDEFINED && k < *outcount; k++)                                     \
            if (indices[k] >= 0 && indices[k] < n) completed(h, saved[indices[k]], &used[k]);                 \
        leave(h);                                                                                             \
        free_unless(saved, NULL, &one);                                                                       \
        free_unless(used, statuses, &one_status);                                                             \
        return rc;                                                                                            \
    }
SOME_WRAPPER(Waitsome)
SOME_WRAPPER(Testsome)

EXPORT int MPI_Request_free(MPI_Request *request)
{
    pending op;
    forget(*request, &op); /* it completes unseen */
    const tt_mpi_hooks *h = open_call(FN_Request_free);
    if (h) h->end();
    int rc = PMPI_Request_free(request);
    leave(close_call(h));
    return rc;
}

/* ---- wrappers: probes (their region only) ---- */

EXPORT int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    const tt_mpi_hooks *h = open_call(FN_Probe);
    if (h) h->end();
    int rc = PMPI_Probe(source, tag, comm, status);
    leave(close_call(h));
    return rc;
}

EXPORT int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
    const tt_mpi_hooks *h = open_call(FN_Iprobe);
    if (h) h->end();
    int rc = PMPI_Iprobe(source, tag, comm, flag, status);
    leave(close_call(h));
    return rc;
}

EXPORT int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status)
{
    const tt_mpi_hooks *h = open_call(FN_Mprobe);
    if (h) h->end();
    int rc = PMPI_Mprobe(source, tag, comm, message, status);
    if (rc == MPI_SUCCESS) matched_in(*message, comm);
    leave(close_call(h));
    return rc;
}

EXPORT int MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message, MPI_Status *status)
{
    const tt_mpi_hooks *h = open_call(FN_Improbe);
    if (h) h->end();
    int rc = PMPI_Improbe(source, tag, comm, flag, message, status);
    if (rc == MPI_SUCCESS && *flag) matched_in(*message, comm);
    leave(close_call(h));
    return rc;
}

/* ---- wrappers: collectives ---- */

static const tt_mpi_hooks *open_collective(int fn)
{
    const tt_mpi_hooks *h = open_call(fn);
    if (!h) return NULL;
    h->collective_begin();
    h->end();
    return h;
}

/* root: a rank in comm, or negative for none (MPI_ROOT, MPI_PROC_NULL). */
static void close_collective(const tt_mpi_hooks *h, uint8_t op, MPI_Comm comm, int root, uint64_t sent,
                             uint64_t received)
{
    if (!h) return;
    uint32_t id = comm_id(comm);
    if (!(h = close_call(h))) return;
    if (id != NONE) h->collective_end(op, id, root >= 0 ? (uint32_t)root : NONE, sent, received);
    leave(h);
}

EXPORT int MPI_Barrier(MPI_Comm comm)
{
    const tt_mpi_hooks *h = open_collective(FN_Barrier);
    int rc = PMPI_Barrier(comm);
    close_collective(h, TT_MPI_BARRIER, comm, -1, 0, 0);
    return rc;
}

EXPORT int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
    const tt_mpi_hooks *h = open_collective(FN_Bcast);
    int rc = PMPI_Bcast(buf, count, type, root, comm);
    uint64_t bytes = bytes_of(count, type);
    int at_root = rank_in(comm) == root;
    close_collective(h, TT_MPI_BCAST, comm, root, at_root ? bytes : 0, at_root ? 0 : bytes);
    return rc;
}

EXPORT int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                      MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    const tt_mpi_hooks *h = open_collective(FN_Gather);
    int rc = PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
    int at_root = rank_in(comm) == root;
    close_collective(h, TT_MPI_GATHER, comm, root, bytes_of(sendcount, sendtype),
                     at_root ? (uint64_t)size_of(comm) * bytes_of(recvcount, recvtype) : 0);
    return rc;
}

EXPORT int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                       const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    const tt_mpi_hooks *h = open_collective(FN_Gatherv);
    int rc = PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm);
    int at_root = rank_in(comm) == root;
    close_collective(h, TT_MPI_GATHERV, comm, root, bytes_of(sendcount, sendtype),
                     at_root ? sum_bytes(recvcounts, size_of(comm), recvtype) : 0);
    return rc;
}

EXPORT int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                       MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    const tt_mpi_hooks *h = open_collective(FN_Scatter);
    int rc = PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
    int at_root = rank_in(comm) == root;
    close_collective(h, TT_MPI_SCATTER, comm, root,
                     at_root ? (uint64_t)size_of(comm) * bytes_of(sendcount, sendtype) : 0,
                     bytes_of(recvcount, recvtype));
    return rc;
}

EXPORT int MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                        void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    const tt_mpi_hooks *h = open_collective(FN_Scatterv);
    int rc = PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm);
    int at_root = rank_in(comm) == root;
    close_collective(h, TT_MPI_SCATTERV, comm, root, at_root ? sum_bytes(sendcounts, size_of(comm), sendtype) : 0,
                     bytes_of(recvcount, recvtype));
    return rc;
}

EXPORT int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                         MPI_Datatype recvtype, MPI_Comm comm)
{
    const tt_mpi_hooks *h = open_collective(FN_Allgather);
    int rc = PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    close_collective(h, TT_MPI_ALLGATHER, comm, -1, bytes_of(sendcount, sendtype),
                     (uint64_t)size_of(comm) * bytes_of(recvcount, recvtype));
    return rc;
}

EXPORT int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                          const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm)
{
    const tt_mpi_hooks *h = open_collective(FN_Allgatherv);
    int rc = PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
    close_collective(h, TT_MPI_ALLGATHERV, comm, -1, bytes_of(sendcount, sendtype),
                     sum_bytes(recvcounts, size_of(comm), recvtype));
    return rc;
}

EXPORT int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                        MPI_Datatype recvtype, MPI_Comm comm)
{
    const tt_mpi_hooks *h = open_collective(FN_Alltoall);
    int rc = PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    uint64_t n = (uint64_t)size_of(comm);
    close_collective(h, TT_MPI_ALLTOALL, comm, -1, n * bytes_of(sendcount, sendtype),
                     n * bytes_of(recvcount, recvtype));
    return rc;
}

EXPORT int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                         void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                         MPI_Comm comm)
{
    const tt_mpi_hooks *h = open_collective(FN_Alltoallv);
    int rc = PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
    int n = size_of(comm);
    close_collective(h, TT_MPI_ALLTOALLV, comm, -1, sum_bytes(sendcounts, n, sendtype),
                     sum_bytes(recvcounts, n, recvtype));
    return rc;
}

EXPORT int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op, int root,
                      MPI_Comm comm)
{
    const tt_mpi_hooks *h = open_collective(FN_Reduce);
    int rc = PMPI_Reduce(sendbuf, recvbuf, count, type, op, root, comm);
    uint64_t bytes = bytes_of(count, type);
    close_collective(h, TT_MPI_REDUCE, comm, root, bytes, rank_in(comm) == root ? bytes : 0);
    return rc;
}

EXPORT int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    const tt_mpi_hooks *h = open_collective(FN_Allreduce);
    int rc = PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
    uint64_t bytes = bytes_of(count, type);
    close_collective(h, TT_MPI_ALLREDUCE, comm, -1, bytes, bytes);
    return rc;
}

EXPORT int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype type, MPI_Op op,
                              MPI_Comm comm)
{
    const tt_mpi_hooks *h = open_collective(FN_Reduce_scatter);
    int rc = PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, type, op, comm);
    int rank = rank_in(comm);
    close_collective(h, TT_MPI_REDUCE_SCATTER, comm, -1, sum_bytes(recvcounts, size_of(comm), type),
                     rank >= 0 ? bytes_of(recvcounts[rank], type) : 0);
    return rc;
}

EXPORT int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype type, MPI_Op op,
                                    MPI_Comm comm)
{
    const tt_mpi_hooks *h = open_collective(FN_Reduce_scatter_block);
    int rc = PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, type, op, comm);
    uint64_t bytes = bytes_of(recvcount, type);
    close_collective(h, TT_MPI_REDUCE_SCATTER_BLOCK, comm, -1, (uint64_t)size_of(comm) * bytes, bytes);
    return rc;
}

EXPORT int MPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    const tt_mpi_hooks *h = open_collective(FN_Scan);
    int rc = PMPI_Scan(sendbuf, recvbuf, count, type, op, comm);
    uint64_t bytes = bytes_of(count, type);
    close_collective(h, TT_MPI_SCAN, comm, -1, bytes, bytes);
    return rc;
}

EXPORT int MPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    const tt_mpi_hooks *h = open_collective(FN_Exscan);
    int rc = PMPI_Exscan(sendbuf, recvbuf, count, type, op, comm);
    uint64_t bytes = bytes_of(count, type);
    close_collective(h, TT_MPI_EXSCAN, comm, -1, bytes, bytes);
    return rc;
}

/* ---- wrappers: communicators ---- */

#define MAKE_COMM_CALL(fn, parent, newcomm, call)             \
    do {                                                      \
        const tt_mpi_hooks *h = open_call(fn);                \
        if (h) h->end();                                      \
        int rc = (call);                                      \
        if (rc == MPI_SUCCESS) comm_made(parent, *(newcomm)); \
        leave(close_call(h));                                 \
        return rc;                                            \
    } while (0)

EXPORT int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    MAKE_COMM_CALL(FN_Comm_dup, comm, newcomm, PMPI_Comm_dup(comm, newcomm));
}

EXPORT int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
    MAKE_COMM_CALL(FN_Comm_dup_with_info, comm, newcomm, PMPI_Comm_dup_with_info(comm, info, newcomm));
}

EXPORT int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
    MAKE_COMM_CALL(FN_Comm_split, comm, newcomm, PMPI_Comm_split(comm, color, key, newcomm));
}

EXPORT int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm)
{
    MAKE_COMM_CALL(FN_Comm_split_type, comm, newcomm, PMPI_Comm_split_type(comm, split_type, key, info, newcomm));
}

EXPORT int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
    MAKE_COMM_CALL(FN_Comm_create, comm, newcomm, PMPI_Comm_create(comm, group, newcomm));
}

EXPORT int MPI_Comm_free(MPI_Comm *comm)
{
    comm_freed(*comm);
    const tt_mpi_hooks *h = open_call(FN_Comm_free);
    if (h) h->end();
    int rc = PMPI_Comm_free(comm);
    leave(close_call(h));
    return rc;
}

/* ---- attaching ---- */

EXPORT int tt_mpi_attach(const tt_mpi_hooks *hooks)
{
    if (hooks->abi != TT_MPI_ABI_VERSION) return -1;
    for (int i = 0; i < FN_COUNT; i++) regions[i] = hooks->region(function_names[i]);
    pthread_mutex_lock(&comms_lock);
    atomic_store_explicit(&attached, hooks, memory_order_release);
    int initialized = 0, finalized = 0;
    PMPI_Initialized(&initialized);
    PMPI_Finalized(&finalized);
    if (started) {
        /* A new session: its trace has none of the definitions yet. */
        hooks->define_rank(world_rank, world_size);
        for (uint32_t id = 0; id < comm_count; id++) define_comm(hooks, id);
    } else if (initialized && !finalized) {
        start_locked(); /* MPI was initialized before tracetop came */
    }
    pthread_mutex_unlock(&comms_lock);
    return 0;
}

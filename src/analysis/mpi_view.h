/* mpi_view.h -- the communication of an MPI job, matched across its ranks:
 * the viewer's communication view (message lines, collectives across the
 * ranks' lanes, the communication matrix, per-communicator statistics).
 *
 * Built once from the one reader (reader.h), reading the streams of the
 * processes that are MPI ranks (none other: a trace without ranks costs its
 * definitions only). Held in memory: some 72 bytes per message and 48 per
 * collective call (bench/mpi_view.py: 400,000 messages matched in 1.2 s).
 *
 * Contract:
 *  - Communicators: the communicators of every rank made one set
 *    (mpi_comms.h); messages and collectives name them by index.
 *  - Messages: every send (MPI_SEND, MPI_ISEND) is matched with its receive
 *    (MPI_RECV, MPI_IRECV) by MPI's own rule: between one sender and one
 *    receiver, on one communicator, with one tag, messages are received in
 *    the order they were sent (non-overtaking), so the k-th send of such an
 *    envelope meets the k-th receive posted for it. A receive is posted when
 *    its call began (MPI_IRECV: at its MPI_IRECV_REQUEST), which is not the
 *    order receives complete in. Sends and receives left over (a rank cut
 *    short, or not in the trace) are counted, the sends kept unmatched.
 *    Messages whose ranks the trace does not tell are left out, as
 *    `tracetop summary` leaves them out.
 *  - Collectives: the k-th collective call of a rank on a communicator is
 *    its part of the k-th collective operation on it (MPI requires every
 *    member to call them in the same order): one instance per operation,
 *    with each rank's call (from its MPI_COLLECTIVE_BEGIN to its END).
 *  - Queries never fail for a range: they answer what lies in it. What a
 *    reader found cut or damaged is not repeated here (the index says it).
 */
#ifndef TRACETOP_MPI_VIEW_H
#define TRACETOP_MPI_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "mpi_comms.h"
#include "reader.h"

#define TT_MPI_VIEW_NONE UINT32_MAX

/* Where a call was recorded: a process (index into the trace's) and stream. */
typedef struct tt_mpi_view_place {
    uint32_t process, stream;
} tt_mpi_view_place;

typedef struct tt_mpi_view_message {
    uint64_t send_time;        /* ns since the epoch: the send was made (MPI_Send, MPI_Isend called) */
    uint64_t recv_time;        /* the receive completed; = send_time when unmatched */
    uint32_t sender, receiver; /* world ranks */
    uint32_t comm;             /* index into comms */
    uint32_t tag;
    uint64_t bytes;    /* as sent */
    uint64_t received; /* as received (0 when unmatched) */
    tt_mpi_view_place from, to;
    int matched;
} tt_mpi_view_message;

/* One rank's part in a collective operation. */
typedef struct tt_mpi_view_call {
    uint64_t begin, end;
    uint32_t rank; /* world */
    tt_mpi_view_place place;
    uint64_t sent, received;
} tt_mpi_view_call;

/* A collective operation: the calls of its ranks. */
typedef struct tt_mpi_view_collective {
    uint64_t begin, end;           /* the first call's begin, the last call's end */
    uint32_t comm;                 /* index into comms */
    uint8_t op;                    /* enum tt_mpi_collective */
    uint32_t root;                 /* world rank, TT_MPI_VIEW_NONE for none */
    size_t first_call, call_count; /* calls[first_call ...], by rank */
} tt_mpi_view_collective;

typedef struct tt_mpi_view {
    tt_mpi_comms comms; /* its world_size: 0 when no rank is in the trace */
    size_t message_count;
    tt_mpi_view_message *messages; /* by the earlier of their two times */
    uint64_t longest_message;      /* ns between a message's two times, at most */
    size_t collective_count;
    tt_mpi_view_collective *collectives; /* by begin */
    uint64_t longest_collective;
    tt_mpi_view_call *calls;
    uint64_t unmatched_sends, unmatched_receives;
} tt_mpi_view;

/* Reads the trace's ranks. Fails only when memory runs out or a stream
 * cannot be opened. */
int tt_mpi_view_build(const tt_trace *t, tt_mpi_view **out, tt_error *err);
void tt_mpi_view_free(tt_mpi_view *v);

/* The matched messages whose line (send to receive) meets [t0, t1): their
 * indices into messages, the least of their number and `limit` (spread evenly over all of them
 * when there are more); returns how many there are in all. */
size_t tt_mpi_view_lines(const tt_mpi_view *v, uint64_t t0, uint64_t t1, uint32_t *out, size_t limit);

/* The same for collective operations that meet [t0, t1). */
size_t tt_mpi_view_collectives_in(const tt_mpi_view *v, uint64_t t0, uint64_t t1, uint32_t *out, size_t limit);

/* Messages of a rank pair sent in [t0, t1), for the matrix. */
typedef struct tt_mpi_view_pair {
    uint32_t sender, receiver;
    uint64_t count, bytes;
} tt_mpi_view_pair;

/* The communication matrix of the messages sent in [t0, t1) (matched or
 * not), as a list of the pairs that sent any, by sender then receiver, in
 * *out (malloc'd, the caller frees); the count of pairs, or -1 when memory
 * runs out. */
long tt_mpi_view_matrix(const tt_mpi_view *v, uint64_t t0, uint64_t t1, tt_mpi_view_pair **out);

/* The messages `sender` sent `receiver` in [t0, t1), from the `skip`-th on,
 * at most `limit` of them into out; returns how many there are in all. */
size_t tt_mpi_view_pair_messages(const tt_mpi_view *v, uint32_t sender, uint32_t receiver, uint64_t t0, uint64_t t1,
                                 size_t skip, uint32_t *out, size_t limit);

/* Per communicator, in [t0, t1): the messages sent on it, their bytes,
 * its collective operations that began there, and the time its ranks spent
 * in those (the sum of their calls). */
typedef struct tt_mpi_view_comm_stats {
    uint64_t messages, bytes, collectives, collective_ns, collective_bytes;
} tt_mpi_view_comm_stats;

/* Fills stats[comms.count]. */
void tt_mpi_view_comm_stats_in(const tt_mpi_view *v, uint64_t t0, uint64_t t1, tt_mpi_view_comm_stats *stats);

#endif

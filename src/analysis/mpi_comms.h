/* mpi_comms.h -- the communicators of an MPI job, made one set from those
 * each rank of the trace defines: what the OTF2 exporter writes and the
 * viewer's communication view (mpi_view.h) matches messages on.
 *
 * Each process numbers its own communicators (format.h); they are the same
 * communicator of the job when, as format.h says they agree:
 *  - both are the world, or both the self communicator (each rank's own,
 *    one entry for all);
 *  - both are derived, with the same parent (in the job's numbering),
 *    sequence number, size and listed members.
 * The job's communicators are numbered in the order they are first met:
 * processes in the trace's order, each's communicators by id, so the world
 * of the first rank is 0 (every rank defines the world first).
 *
 * Contract:
 *  - Only the processes that are MPI ranks (mpi_size not 0) are read.
 *  - world_size is the largest world size a rank gives, and the world's
 *    size is that; complete says whether the trace holds every rank of one
 *    job, each once, all giving that size: only then can every message be
 *    placed at both ends.
 *  - Fails only when memory runs out; then nothing is left to free.
 */
#ifndef TRACETOP_MPI_COMMS_H
#define TRACETOP_MPI_COMMS_H

#include <stddef.h>
#include <stdint.h>

#include "reader.h"

#define TT_MPI_COMM_NONE UINT32_MAX

/* A communicator of the job. */
typedef struct tt_mpi_comm {
    uint8_t kind;            /* enum tt_comm_kind */
    uint32_t parent;         /* index, TT_MPI_COMM_NONE for none */
    uint64_t seq, size;      /* the world's size: world_size */
    size_t listed;           /* members listed (world ranks), 0 when not */
    const uint32_t *members; /* the trace's */
} tt_mpi_comm;

typedef struct tt_mpi_comms {
    uint32_t world_size; /* 0: no rank in the trace */
    int complete;
    size_t count;
    tt_mpi_comm *comms;
    size_t process_count;
    uint32_t **maps; /* by process: its communicator ids (and the placeholder) -> index; NULL for no rank */
} tt_mpi_comms;

/* Fills *c from the trace's ranks: 0, or -1 when memory runs out. The
 * members are the trace's: it must outlive *c. */
int tt_mpi_comms_build(const tt_trace *t, tt_mpi_comms *c);
/* Frees what build made; *c is then empty (freeing it again is harmless). */
void tt_mpi_comms_free(tt_mpi_comms *c);

/* The job's communicator that communicator `local` of process `process`
 * (an index into the trace's) is; TT_MPI_COMM_NONE when unknown: the
 * placeholder, or a process that is no rank. `local` is at most the
 * process's comm_count, as the reader gives it in events. */
uint32_t tt_mpi_comms_of(const tt_mpi_comms *c, size_t process, uint32_t local);

/* The name of communicator i: "MPI_COMM_WORLD", "MPI_COMM_SELF" or
 * "MPI communicator <i>", into buf (cut to size). */
void tt_mpi_comm_name(const tt_mpi_comms *c, uint32_t i, char *buf, size_t size);

#endif

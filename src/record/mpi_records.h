/* mpi_records.h -- writing MPI records (format.h): the events of an MPI call into
 * its thread's stream, and a process's MPI definitions into its session.
 *
 * The MPI wrappers (src/mpi/) call these through the extension, from
 * threads that may hold no GIL (mpi4py releases it around blocking calls).
 * That is safe as every other record is: a stream takes records from its
 * own thread only, and definitions go through the session's defs lock;
 * these definitions intern no string, so they need no registry.
 */
#ifndef TRACETOP_MPI_RECORDS_H
#define TRACETOP_MPI_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "session.h"
#include "stream.h"

/* MPI_SEND, MPI_RECV (request unused), MPI_ISEND, MPI_IRECV. */
void tt_stream_mpi_message(tt_stream *s, uint64_t now, uint8_t tag, uint32_t peer, uint32_t msg_tag, uint32_t comm,
                           uint64_t bytes, uint64_t request);

/* MPI_ISEND_COMPLETE, MPI_IRECV_REQUEST. */
void tt_stream_mpi_request(tt_stream *s, uint64_t now, uint8_t tag, uint64_t request);

/* MPI_COLLECTIVE_END; root is a rank in comm, UINT32_MAX for none.
 * (MPI_COLLECTIVE_BEGIN has no fields: tt_stream_plain.) */
void tt_stream_mpi_collective_end(tt_stream *s, uint64_t now, uint8_t op, uint32_t comm, uint32_t root, uint64_t sent,
                                  uint64_t received);

/* MPI_RANK. */
void tt_session_define_mpi_rank(tt_session *s, uint32_t rank, uint32_t size);

/* MPI_COMM; parent UINT32_MAX for none; `listed` members (world ranks),
 * either `size` of them or none (more than TT_MPI_COMM_LISTED_MAX).
 * 0, or -1 when out of memory. */
int tt_session_define_mpi_comm(tt_session *s, uint32_t id, uint8_t kind, uint32_t parent, uint64_t seq, uint64_t size,
                               const uint32_t *members, size_t listed);

#endif

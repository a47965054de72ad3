/* mpi_records.c -- writing MPI records (see mpi_records.h). */
#include "mpi_records.h"

#include <stdlib.h>

/* The bytes a record takes beyond TT_RECORD_MAX_FIXED: a tag, a u8 and at
 * most 7 varints of 10 bytes. */
#define MPI_RECORD_EXTRA 48u

void tt_stream_mpi_message(tt_stream *s, uint64_t now, uint8_t tag, uint32_t peer, uint32_t msg_tag, uint32_t comm,
                           uint64_t bytes, uint64_t request)
{
    uint8_t *p = tt_record_begin(s, tag, now, MPI_RECORD_EXTRA);
    if (tt_ev_counted(tag)) tt_stream_counted(s); /* the profile counts messages sent */
    p = tt_put_varint(p, peer);
    p = tt_put_varint(p, msg_tag);
    p = tt_put_varint(p, comm);
    p = tt_put_varint(p, bytes);
    if (tag == TT_EV_MPI_ISEND || tag == TT_EV_MPI_IRECV) p = tt_put_varint(p, request);
    tt_record_commit(s, p);
}

void tt_stream_mpi_request(tt_stream *s, uint64_t now, uint8_t tag, uint64_t request)
{
    uint8_t *p = tt_record_begin(s, tag, now, 0);
    tt_record_commit(s, tt_put_varint(p, request));
}

void tt_stream_mpi_collective_end(tt_stream *s, uint64_t now, uint8_t op, uint32_t comm, uint32_t root, uint64_t sent,
                                  uint64_t received)
{
    uint8_t *p = tt_record_begin(s, TT_EV_MPI_COLLECTIVE_END, now, MPI_RECORD_EXTRA);
    tt_stream_counted(s);
    *p++ = op;
    p = tt_put_varint(p, comm);
    p = tt_put_varint(p, root == UINT32_MAX ? 0 : (uint64_t)root + 1);
    p = tt_put_varint(p, sent);
    p = tt_put_varint(p, received);
    tt_record_commit(s, p);
}

void tt_session_define_mpi_rank(tt_session *s, uint32_t rank, uint32_t size)
{
    uint8_t rec[TT_RECORD_MAX_FIXED], *p = rec;
    *p++ = TT_DEF_MPI_RANK;
    p = tt_put_varint(p, rank);
    p = tt_put_varint(p, size);
    tt_session_define(s, rec, (size_t)(p - rec));
}

int tt_session_define_mpi_comm(tt_session *s, uint32_t id, uint8_t kind, uint32_t parent, uint64_t seq, uint64_t size,
                               const uint32_t *members, size_t listed)
{
    if (listed > TT_MPI_COMM_LISTED_MAX) listed = 0;
    uint8_t *rec = malloc(1 + 1 + 6 * 10 + listed * 5), *p = rec;
    if (!rec) return -1;
    *p++ = TT_DEF_MPI_COMM;
    p = tt_put_varint(p, id);
    *p++ = kind;
    p = tt_put_varint(p, parent == UINT32_MAX ? 0 : (uint64_t)parent + 1);
    p = tt_put_varint(p, seq);
    p = tt_put_varint(p, size);
    p = tt_put_varint(p, listed);
    for (size_t i = 0; i < listed; i++) p = tt_put_varint(p, members[i]);
    tt_session_define(s, rec, (size_t)(p - rec));
    free(rec);
    return 0;
}

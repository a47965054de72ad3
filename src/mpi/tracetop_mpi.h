/* tracetop_mpi.h -- what libtracetop_mpi.so and the extension tell each other.
 *
 * libtracetop_mpi.so (pmpi.c) defines MPI functions that record and call
 * their PMPI_ versions: loaded with RTLD_GLOBAL before the program loads
 * MPI (mpi4py), it comes first in symbol lookup, so the program's MPI calls
 * reach it. It knows MPI and nothing of tracetop's streams; the extension
 * (src/ext/mpi.c) knows the streams and nothing of MPI. The extension loads
 * the library and hands it these hooks with tt_mpi_attach, at the start of
 * each measurement session.
 *
 * Hooks are called from any thread, with or without the GIL, except
 * `region`, which only tt_mpi_attach calls. A thread records between begin
 * (1: its stream is open and held so) and end; nothing else is recorded.
 */
#ifndef TRACETOP_MPI_ABI_H
#define TRACETOP_MPI_ABI_H

#include <stddef.h>
#include <stdint.h>

#define TT_MPI_ABI_VERSION 1u

typedef struct tt_mpi_hooks {
    unsigned abi; /* TT_MPI_ABI_VERSION */
    /* The region id of MPI function `name` (TT_REGION_MPI). */
    uint32_t (*region)(const char *name);

    /* 1 when the calling thread records, and then until end(); 0 when not. */
    int (*begin)(void);
    void (*end)(void);
    /* Between begin and end: the events of the calling thread (format.h). */
    void (*enter)(uint32_t region);
    void (*leave)(void);
    void (*message)(uint8_t tag, uint32_t peer, uint32_t msg_tag, uint32_t comm, uint64_t bytes, uint64_t request);
    void (*request)(uint8_t tag, uint64_t request);
    void (*collective_begin)(void);
    void (*collective_end)(uint8_t op, uint32_t comm, uint32_t root, uint64_t sent, uint64_t received);

    /* Definitions of the process, any time: MPI_RANK and MPI_COMM. */
    void (*define_rank)(uint32_t rank, uint32_t size);
    void (*define_comm)(uint32_t id, uint8_t kind, uint32_t parent, uint64_t seq, uint64_t size,
                        const uint32_t *members, size_t listed);
} tt_mpi_hooks;

/* Exported by libtracetop_mpi.so: records from now on through `hooks`
 * (kept, not copied), and defines again what MPI definitions the process
 * has (the rank, its communicators) for a new session. 0, or -1 when the
 * ABI differs. */
typedef int (*tt_mpi_attach_fn)(const tt_mpi_hooks *hooks);
#define TT_MPI_ATTACH "tt_mpi_attach"

#endif

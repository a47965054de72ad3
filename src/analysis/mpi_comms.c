/* mpi_comms.c -- the communicators of an MPI job (see mpi_comms.h).
 *
 * A job has few communicators, so a new one is looked up by scanning those
 * met so far; each rank's are compared once.
 */
#include "mpi_comms.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

#define NONE TT_MPI_COMM_NONE

static int same_comm(const tt_mpi_comm *g, const tt_comm *c, uint32_t parent)
{
    if (g->kind != c->kind) return 0;
    if (c->kind != TT_COMM_DERIVED) return 1;
    if (g->parent != parent || g->seq != c->seq || g->size != c->size || g->listed != c->listed) return 0;
    return c->listed == 0 || memcmp(g->members, c->members, c->listed * sizeof *c->members) == 0;
}

/* The job's communicator that c of a process is (its parent already
 * mapped), added when new; NONE when memory runs out. */
static uint32_t job_comm(tt_mpi_comms *j, size_t *cap, const tt_comm *c, uint32_t parent)
{
    for (size_t i = 0; i < j->count; i++)
        if (same_comm(&j->comms[i], c, parent)) return (uint32_t)i;
    if (j->count >= NONE || TT_RESERVE(j->comms, *cap, j->count + 1) != 0) return NONE;
    j->comms[j->count] = (tt_mpi_comm){
        .kind = c->kind, .parent = parent, .seq = c->seq, .size = c->size, .listed = c->listed, .members = c->members};
    return (uint32_t)j->count++;
}

/* Whether the ranks are those of one job of `size`, each once. */
static int every_rank_once(const tt_trace *t, uint64_t size)
{
    uint64_t seen = 0;
    for (size_t i = 0; i < tt_trace_process_count(t); i++) {
        const tt_process *p = tt_trace_process(t, i);
        if (!p->mpi_size) continue;
        if (p->mpi_size != size) return 0;
        seen++;
    }
    if (!size || seen != size) return 0;
    /* As many processes as ranks, and no rank twice (the reader keeps each
     * rank below its size). */
    uint8_t *ranks = calloc(size, 1);
    int once = ranks != NULL;
    for (size_t i = 0; once && i < tt_trace_process_count(t); i++) {
        const tt_process *p = tt_trace_process(t, i);
        if (p->mpi_size && ranks[p->mpi_rank]++) once = 0;
    }
    free(ranks);
    return once;
}

int tt_mpi_comms_build(const tt_trace *t, tt_mpi_comms *j)
{
    *j = (tt_mpi_comms){0};
    size_t n = tt_trace_process_count(t), cap = 0;
    if (!(j->maps = calloc(n ? n : 1, sizeof *j->maps))) return -1;
    j->process_count = n;
    for (size_t i = 0; i < n; i++) {
        const tt_process *p = tt_trace_process(t, i);
        if (!p->mpi_size) continue;
        uint32_t *map = j->maps[i] = malloc((p->comm_count + 1) * sizeof *map);
        if (!map) goto nomem;
        for (size_t c = 0; c < p->comm_count; c++) {
            const tt_comm *comm = &p->comms[c];
            /* A parent is defined before its children (format.h). */
            uint32_t parent = comm->parent < c ? map[comm->parent] : NONE;
            if ((map[c] = job_comm(j, &cap, comm, parent)) == NONE) goto nomem;
        }
        map[p->comm_count] = NONE;                                              /* the placeholder: unknown */
        if (p->mpi_size > j->world_size) j->world_size = (uint32_t)p->mpi_size; /* the reader keeps it 32-bit */
    }
    for (size_t i = 0; i < j->count; i++)
        if (j->comms[i].kind == TT_COMM_WORLD) j->comms[i].size = j->world_size;
    /* Without memory to check it, not known to be complete. */
    j->complete = every_rank_once(t, j->world_size);
    return 0;
nomem:
    tt_mpi_comms_free(j);
    return -1;
}

void tt_mpi_comms_free(tt_mpi_comms *j)
{
    for (size_t i = 0; j->maps && i < j->process_count; i++) free(j->maps[i]);
    free(j->maps);
    free(j->comms);
    *j = (tt_mpi_comms){0};
}

uint32_t tt_mpi_comms_of(const tt_mpi_comms *j, size_t process, uint32_t local)
{
    return process < j->process_count && j->maps[process] ? j->maps[process][local] : NONE;
}

void tt_mpi_comm_name(const tt_mpi_comms *j, uint32_t i, char *buf, size_t size)
{
    uint8_t kind = j->comms[i].kind;
    if (kind == TT_COMM_WORLD)
        snprintf(buf, size, "MPI_COMM_WORLD");
    else if (kind == TT_COMM_SELF)
        snprintf(buf, size, "MPI_COMM_SELF");
    else
        snprintf(buf, size, "MPI communicator %" PRIu32, i);
}

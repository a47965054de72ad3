/* pool.h -- the chunk buffers of one process, within its memory budget.
 *
 * Every event a process records sits in a chunk buffer until the writer
 * thread has put it on disk. The pool hands chunks out and takes them back;
 * it never allocates beyond the budget. When the budget is used up the
 * caller waits until the writer returns a chunk: the program is slowed, but
 * no event is ever dropped. Those waits are counted and reported.
 *
 * Buffers are allocated lazily, so a program that the writer keeps up with
 * uses a few chunks per thread whatever the budget.
 */
#ifndef TRACETOP_POOL_H
#define TRACETOP_POOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "error.h"
#include "format.h"

struct tt_stream;

typedef struct tt_chunk {
    struct tt_chunk *next;    /* link in the writer's queue or the free list */
    struct tt_stream *stream; /* the stream this chunk belongs to */
    uint32_t seq;             /* position in the stream's file */
    uint64_t base_ticks;      /* what the first record's delta counts from */
    /* The chunk header's: TT_CHUNK_TREE | TT_CHUNK_TREE_COLUMNS (calltree.c),
     * TT_CHUNK_COUNTED (tt_stream_counted), or 0. Atomic: COUNTED is set
     * while the writer may snapshot the chunk (a PARTIAL one). */
    _Atomic uint8_t flags;
    /* Its stream's records and call-tree nodes when it was handed to the
     * writer, which weighs with them whether to compress it (writer.c). */
    uint64_t records;
    uint32_t tree_nodes;
    /* Bytes of data that hold complete records. Written only by the
     * stream's owner (release), read by the writer (acquire) so it can put
     * a chunk still being filled on disk. */
    _Atomic uint32_t used;
    uint8_t data[TT_CHUNK_PAYLOAD_SIZE];
} tt_chunk;

typedef struct tt_pool {
    pthread_mutex_t lock;
    pthread_cond_t returned;
    tt_chunk *free_list;
    uint32_t allocated, limit;
    uint64_t waits, wait_ns; /* times a caller found the budget used up */
} tt_pool;

/* The smallest budget that still lets a few threads and the writer work. */
#define TT_POOL_MIN_CHUNKS 8u

int tt_pool_init(tt_pool *p, uint64_t budget_bytes, tt_error *err);
void tt_pool_destroy(tt_pool *p);

/* A chunk without waiting, or NULL when the budget is used up. */
tt_chunk *tt_pool_try_get(tt_pool *p);

/* A chunk, waiting for the writer to return one when the budget is used up. */
tt_chunk *tt_pool_get_wait(tt_pool *p);

void tt_pool_put(tt_pool *p, tt_chunk *c);

#endif

/* ring.h -- a process's events kept to their most recent SIZE bytes on disk
 * (`--keep SIZE`; format.h: a ring).
 *
 * The writer notes here each file of events it makes and each chunk it
 * puts in one (offset, end, base time), and how far a partial chunk
 * reaches past the last; before it writes more, tt_ring_trim drops, as
 * long as what the files would take on disk passes the size kept, the
 * oldest chunks of records, by base time
 * across the files, each file's from its first on, by punching a hole
 * (FALLOC_FL_PUNCH_HOLE) from the end of its header to its first chunk
 * kept: the file keeps its offsets and its blocks are freed. TREE chunks
 * and defs.tts are never dropped, and count. What a file takes is counted as its blocks
 * would be (st_blocks, what `du` shows): its bytes from the first chunk
 * kept on, TREE chunks and partial chunk included, and its header's block
 * and a block either side of the hole (TT_RING_BLOCKS_BESIDES), so that
 * the files' blocks stay within the size kept.
 *
 * Where the file system cannot punch holes, the ring says so once
 * (`unsupported`: the errno) and drops nothing more: the trace grows on,
 * recording never stops for it. Owned by the writer thread.
 */
#ifndef TRACETOP_RING_H
#define TRACETOP_RING_H

#include <stddef.h>
#include <stdint.h>

#define TT_RING_BLOCKS_BESIDES 3u

typedef struct tt_ring_chunk {
    uint64_t offset, end, base_ticks;
} tt_ring_chunk;

typedef struct tt_ring_file {
    int made;              /* the writer made the file, ... */
    uint64_t dev, ino;     /* ... this one */
    uint64_t block;        /* its st_blksize */
    tt_ring_chunk *chunks; /* its chunks of records kept, oldest first: [head, count) */
    size_t head, count, cap;
    uint64_t kept;     /* bytes of those chunks */
    uint64_t fixed;    /* bytes never dropped: TREE chunks */
    uint64_t partial;  /* bytes of a partial chunk past the last */
    uint64_t hole_end; /* where the hole is to reach: the first chunk kept */
    uint64_t punched;  /* where it reaches on disk */
} tt_ring_file;

typedef struct tt_ring {
    uint64_t size;       /* the bytes kept to */
    tt_ring_file *files; /* by stream number */
    size_t file_count;
    uint64_t used;    /* what the files take, counted as above, defs.tts's too ... */
    uint64_t defs;    /* ... which is this (tt_ring_defs) */
    uint64_t dropped; /* chunks dropped */
    int unsupported;  /* the errno of a hole the file system could not punch; 0 while it can */
} tt_ring;

/* A file of events made for stream `index`, with its header on disk. 0, or
 * -1 when out of memory (the ring then keeps that file whole). */
int tt_ring_file_made(tt_ring *r, uint32_t index, uint64_t dev, uint64_t ino, uint64_t block);
/* A chunk put on disk in stream `index`'s file at [offset, end): a chunk of
 * records, or a TREE chunk (tree), never dropped. */
void tt_ring_chunk_written(tt_ring *r, uint32_t index, uint64_t offset, uint64_t end, uint64_t base_ticks, int tree);
/* defs.tts takes `bytes` on disk now (its size and a block), never
 * dropped: it counts, so that the whole trace of the process keeps to the
 * size. */
void tt_ring_defs(tt_ring *r, uint64_t bytes);
/* The bytes of a partial chunk past the last chunk of stream `index`. */
void tt_ring_partial(tt_ring *r, uint32_t index, uint64_t bytes);
/* Drops the oldest chunks until the files, and `room` bytes more, take the
 * size kept at most, and punches the holes that are due in the files of
 * trace directory `dirfd` (open). A file that is no longer the one made is
 * left as it is (tried again at the next trim). */
void tt_ring_trim(tt_ring *r, int dirfd, uint64_t room);
void tt_ring_free(tt_ring *r);

#endif

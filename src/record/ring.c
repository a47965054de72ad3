/* ring.c -- dropping the oldest chunks of events: bookkeeping and holes. */
#define _GNU_SOURCE /* fallocate */
#include "ring.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format.h"
#include "grow.h"

/* What file f takes on disk, as its blocks would count it (ring.h). */
static uint64_t file_use(const tt_ring_file *f)
{
    return f->made ? f->kept + f->fixed + f->partial + TT_RING_BLOCKS_BESIDES * f->block : 0;
}

static tt_ring_file *file_of(tt_ring *r, uint32_t index)
{
    return index < r->file_count && r->files[index].made ? &r->files[index] : NULL;
}

int tt_ring_file_made(tt_ring *r, uint32_t index, uint64_t dev, uint64_t ino, uint64_t block)
{
    if (index >= r->file_count) {
        size_t cap = r->file_count;
        if (TT_RESERVE(r->files, cap, (size_t)index + 1) != 0) return -1;
        memset(r->files + r->file_count, 0, (cap - r->file_count) * sizeof *r->files);
        r->file_count = cap;
    }
    tt_ring_file *f = &r->files[index];
    *f = (tt_ring_file){.made = 1, .dev = dev, .ino = ino, .block = block ? block : 4096};
    r->used += file_use(f);
    return 0;
}

void tt_ring_chunk_written(tt_ring *r, uint32_t index, uint64_t offset, uint64_t end, uint64_t base_ticks, int tree)
{
    tt_ring_file *f = file_of(r, index);
    if (!f) return;
    r->used -= file_use(f);
    f->partial = 0;
    if (tree) {
        f->fixed += end - offset;
    } else {
        if (f->head && f->head * 2 >= f->count) { /* the chunks dropped make room */
            memmove(f->chunks, f->chunks + f->head, (f->count - f->head) * sizeof *f->chunks);
            f->count -= f->head;
            f->head = 0;
        }
        if (TT_RESERVE(f->chunks, f->cap, f->count + 1) == 0) {
            f->chunks[f->count++] = (tt_ring_chunk){offset, end, base_ticks};
            f->kept += end - offset;
        } else {
            f->fixed += end - offset; /* out of memory: kept, as a tree is */
        }
    }
    r->used += file_use(f);
}

void tt_ring_defs(tt_ring *r, uint64_t bytes)
{
    r->used = r->used - r->defs + bytes;
    r->defs = bytes;
}

void tt_ring_partial(tt_ring *r, uint32_t index, uint64_t bytes)
{
    tt_ring_file *f = file_of(r, index);
    if (!f) return;
    r->used -= file_use(f);
    f->partial = bytes;
    r->used += file_use(f);
}

/* The file whose first chunk kept began the earliest, NULL when none keeps
 * a chunk. */
static tt_ring_file *oldest(tt_ring *r)
{
    tt_ring_file *best = NULL;
    for (size_t i = 0; i < r->file_count; i++) {
        tt_ring_file *f = &r->files[i];
        if (f->made && f->head < f->count &&
            (!best || f->chunks[f->head].base_ticks < best->chunks[best->head].base_ticks))
            best = f;
    }
    return best;
}

/* Punches f's hole up to hole_end: 0, or -1 when the file system cannot
 * (r->unsupported set). A file that cannot be opened, or is another one
 * now, is tried again at the next trim. */
static int punch(tt_ring *r, int dirfd, size_t index, tt_ring_file *f)
{
    char name[32];
    snprintf(name, sizeof name, "%zu.tts", index);
    int fd = openat(dirfd, name, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return 0;
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) == 0 && (uint64_t)st.st_dev == f->dev && (uint64_t)st.st_ino == f->ino) {
        /* From the header on, each time: blocks the last hole only began
         * are whole in this one. */
        if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, TT_FILE_HEADER_SIZE,
                      (off_t)(f->hole_end - TT_FILE_HEADER_SIZE)) == 0)
            f->punched = f->hole_end;
        else if (errno == EOPNOTSUPP || errno == ENOSYS || errno == EINVAL)
            r->unsupported = errno, rc = -1;
    }
    close(fd);
    return rc;
}

void tt_ring_trim(tt_ring *r, int dirfd, uint64_t room)
{
    if (r->unsupported) return;
    tt_ring_file *f;
    while (r->used + room > r->size && (f = oldest(r))) {
        r->used -= file_use(f);
        const tt_ring_chunk *c = &f->chunks[f->head++];
        f->kept -= c->end - c->offset;
        f->hole_end = c->end;
        r->dropped++;
        r->used += file_use(f);
    }
    for (size_t i = 0; i < r->file_count; i++)
        if (r->files[i].made && r->files[i].hole_end > r->files[i].punched && punch(r, dirfd, i, &r->files[i]) < 0)
            return;
}

void tt_ring_free(tt_ring *r)
{
    for (size_t i = 0; i < r->file_count; i++) free(r->files[i].chunks);
    free(r->files);
    r->files = NULL;
    r->file_count = 0;
}

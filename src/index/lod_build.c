/* lod_build.c -- building the level-of-detail index (lod.h) from a trace,
 * and writing its image (lod_file.h).
 *
 * In memory bounded whatever the trace's size: the spans go to the image's
 * file as they are made, a block of TT_LOD_BLOCK_SPANS at a time.
 *
 * One pass through the reader per stream: a stack of the open calls turns
 * each LEAVE into a span at the depth it closes, appended to that depth's
 * level 0 in start order (calls at one depth never overlap, so they close in
 * the order they start); a full block is encoded, compressed and written
 * after the image's header. Parameters, counters and marks are kept in
 * memory per lane as they come (programs make few), OBJECTS records in the
 * builder's list (a few per place every 100 ms). Once every stream is read,
 * the objects tracks are made from that list (objects.c below), and, the
 * trace's span known, each level is derived from the one below it
 * (merge_spans, merge_samples), reading that one's blocks back from the
 * file, and written after it; a level not kept is cut off the file again.
 * Each lane's call tree is made as its stream is read (a node per call
 * path, found from the open call's). The catalog (lod_file.h), made in
 * memory and compressed, follows the spans, then the header goes in front.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "file.h"
#include "grow.h"
#include "lod_file.h"
#include "reader.h"

#define NONE UINT32_MAX

/* ---- growable vectors ---- */

/* The spans of one depth at one level: the blocks written so far
 * (lod_file.h), and the spans of the block being filled. */
typedef struct span_vec {
    tt_lod_span *v; /* the block being filled: n spans */
    size_t n, cap;
    uint64_t count;    /* spans in all */
    int same;          /* this level equals the one below it: shares its blocks */
    int scratch;       /* its blocks go to the builder's scratch file, not the image */
    lod_block *blocks; /* data: offsets in the image */
    size_t block_count, block_cap;
    uint64_t blocks_off; /* where the lod_block array goes in the image */
} span_vec;

typedef struct sample_vec {
    tt_lod_sample *v;
    size_t n, cap;
    int same;
} sample_vec;

/* Level 0 is made whole, in the scratch file, for the coarser levels, and
 * the index keeps of it only the calls no chunk of the trace holds whole
 * (lod_file.h): `crossing`, the index's level 0. */
typedef struct depth_levels {
    span_vec level[TT_LOD_MAX_LEVELS];
    span_vec crossing;
} depth_levels;

typedef struct track_build {
    lod_track_rec rec;
    sample_vec level[TT_LOD_MAX_LEVELS];
} track_build;

typedef struct lane_build {
    lod_lane_rec rec;
    lod_tree tree; /* of the whole run */
    depth_levels *depths;
    size_t depth_cap;
    tt_lod_param *params;
    size_t param_cap;
    tt_lod_mark *marks;
    size_t mark_cap;
    lod_chunk_rec *chunks;
    size_t chunk_cap;
    uint64_t *sums;
    size_t sum_cap;
} lane_build;

typedef struct frame {
    uint64_t start;
    uint32_t region;
    uint32_t node;  /* in its lane's tree */
    uint32_t chunk; /* where its ENTER was read: its lane's chunk */
    int resumed;    /* the part of a call after a gap (reader.h): no new visit */
} frame;

/* An OBJECTS record as read, until its track is known. */
typedef struct object_read {
    uint64_t time;
    uint32_t lane;   /* the first lane of its process */
    uint32_t type;   /* string offset */
    uint32_t region; /* index region, or NONE */
    uint32_t size;
    uint64_t created, destroyed;
    uint64_t seq; /* order of reading, to sort stably */
    uint32_t track;
} object_read;

/* ---- strings: one blob, each distinct string once ---- */

typedef struct string_blob {
    char *data;
    size_t size, cap;
    uint32_t *slots; /* offset + 1; 0 marks an empty slot */
    size_t mask, used;
} string_blob;

static uint64_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
    for (size_t i = 0; i < len; i++) h = (h ^ (uint8_t)s[i]) * 0x100000001b3ULL;
    return h;
}

static int blob_rehash(string_blob *b)
{
    size_t size = b->slots ? (b->mask + 1) * 2 : 1024;
    uint32_t *slots = calloc(size, sizeof *slots);
    if (!slots) return -1;
    for (size_t i = 0; b->slots && i <= b->mask; i++) {
        if (!b->slots[i]) continue;
        const char *s = b->data + b->slots[i] - 1;
        size_t j = hash_bytes(s, strlen(s)) & (size - 1);
        while (slots[j]) j = (j + 1) & (size - 1);
        slots[j] = b->slots[i];
    }
    free(b->slots);
    b->slots = slots;
    b->mask = size - 1;
    return 0;
}

/* The offset of a string of len bytes (no NUL inside) in the blob, added
 * when new: 0, or -1 when memory runs out or the blob outgrows 4 GiB. */
static int blob_add(string_blob *b, const char *s, size_t len, uint32_t *out)
{
    if ((b->used + 1) * 2 > (b->slots ? b->mask + 1 : 0) && blob_rehash(b) != 0) return -1;
    size_t j = hash_bytes(s, len) & b->mask;
    for (; b->slots[j]; j = (j + 1) & b->mask) {
        const char *t = b->data + b->slots[j] - 1;
        if (strncmp(t, s, len) == 0 && t[len] == '\0') {
            *out = b->slots[j] - 1;
            return 0;
        }
    }
    if (b->size + len + 1 >= UINT32_MAX || TT_RESERVE(b->data, b->cap, b->size + len + 1) != 0) return -1;
    memcpy(b->data + b->size, s, len);
    b->data[b->size + len] = '\0';
    *out = (uint32_t)b->size;
    b->slots[j] = (uint32_t)b->size + 1;
    b->size += len + 1;
    b->used++;
    return 0;
}

static int blob_add_str(string_blob *b, const char *s, uint32_t *out) { return blob_add(b, s, strlen(s), out); }

/* ---- the builder ---- */

typedef struct builder {
    string_blob strings;
    lod_region_rec *regions;
    size_t region_count, region_cap;
    uint32_t *region_by_name; /* open addressing: region index + 1 */
    size_t region_mask;
    lane_build *lanes;
    size_t lane_count, lane_cap;
    track_build *tracks;
    size_t track_count, track_cap;
    uint32_t *problems; /* string offsets */
    size_t problem_count, problem_cap;
    uint64_t begin, end;
    unsigned levels;

    uint32_t *merged; /* the process being read: its region ids -> index regions (NONE until needed) */
    size_t merged_cap;
    uint32_t process_lane; /* the first lane of the process being read */
    object_read *objects;
    size_t object_count, object_cap;
    frame *stack;
    size_t stack_cap;
    const tt_lod_progress *progress; /* or NULL */
    uint64_t events;                 /* read so far */
    uint64_t spans_merged;           /* into coarser levels so far */

    /* The image's file, written at its end through a buffer. */
    int fd;
    uint64_t size; /* of the image so far, the buffer included */
    uint8_t *out;  /* LOD_OUT_BUFFER bytes, the last `buffered` of size */
    size_t buffered;
    int io_errno;   /* the first write or read that failed; then nothing more is written */
    size_t pending; /* spans of the blocks being filled, over all lanes and depths */
    void *zctx;     /* compresses blocks (tt_compress) */
    uint8_t *small; /* the bytes of the blocks that go in the catalog */
    size_t small_size, small_cap;
    uint8_t *raw;          /* a block's bytes: TT_LOD_BLOCK_BYTES of scratch */
    uint8_t *packed;       /* and compressed: tt_compress_bound(TT_LOD_BLOCK_BYTES) */
    tt_lod_cursor *cursor; /* reads blocks back */
    uint64_t *depth_sum;   /* the time of the whole calls at each depth of the chunk being read */
    size_t depth_sum_cap;
    FILE *scratch; /* level 0's blocks (span_vec.scratch) */
    uint64_t scratch_size;
} builder;

/* ---- the image's file ---- */

#define LOD_OUT_BUFFER (1u << 20)

static int out_flush(builder *b)
{
    size_t done = 0;
    while (!b->io_errno && done < b->buffered) {
        ssize_t n = pwrite(b->fd, b->out + done, b->buffered - done, (off_t)(b->size - b->buffered + done));
        if (n <= 0) b->io_errno = n < 0 ? errno : ENOSPC;
        done += n > 0 ? (size_t)n : 0;
    }
    b->buffered = 0;
    return b->io_errno ? -1 : 0;
}

/* Appends len bytes to the image: where they start. */
static uint64_t out_put(builder *b, const void *data, size_t len)
{
    uint64_t at = b->size;
    if (len > LOD_OUT_BUFFER - b->buffered) out_flush(b);
    if (len > LOD_OUT_BUFFER) {
        if (!b->io_errno && pwrite(b->fd, data, len, (off_t)b->size) != (ssize_t)len)
            b->io_errno = errno ? errno : ENOSPC;
    } else {
        memcpy(b->out + b->buffered, data, len);
        b->buffered += len;
    }
    b->size += len;
    return at;
}

/* The image back to its first `size` bytes. */
static void out_cut(builder *b, uint64_t size)
{
    out_flush(b);
    if (!b->io_errno && ftruncate(b->fd, (off_t)size) != 0) b->io_errno = errno;
    b->size = size;
}

static int out_read(builder *b, uint64_t at, void *dst, size_t len)
{
    if (b->buffered && out_flush(b) != 0) return -1;
    if (!b->io_errno && pread(b->fd, dst, len, (off_t)at) != (ssize_t)len) b->io_errno = errno ? errno : EIO;
    return b->io_errno ? -1 : 0;
}

static int add_problem(builder *b, const char *line)
{
    if (TT_RESERVE(b->problems, b->problem_cap, b->problem_count + 1) != 0) return -1;
    return blob_add_str(&b->strings, line, &b->problems[b->problem_count++]);
}

/* The index region of region `id` of process p: merged by name. NONE when
 * memory runs out. */
static uint32_t region_of(builder *b, const tt_process *p, uint32_t id)
{
    if (b->merged[id] != NONE) return b->merged[id];
    const tt_region *r = &p->regions[id];
    if ((b->region_count + 1) * 2 > (b->region_by_name ? b->region_mask + 1 : 0)) {
        size_t size = b->region_by_name ? (b->region_mask + 1) * 2 : 256;
        uint32_t *slots = calloc(size, sizeof *slots);
        if (!slots) return NONE;
        for (size_t i = 0; i < b->region_count; i++) {
            size_t j = hash_bytes(b->strings.data + b->regions[i].name, strlen(b->strings.data + b->regions[i].name)) &
                       (size - 1);
            while (slots[j]) j = (j + 1) & (size - 1);
            slots[j] = (uint32_t)i + 1;
        }
        free(b->region_by_name);
        b->region_by_name = slots;
        b->region_mask = size - 1;
    }
    size_t j = hash_bytes(r->name, strlen(r->name)) & b->region_mask;
    for (; b->region_by_name[j]; j = (j + 1) & b->region_mask)
        if (strcmp(b->strings.data + b->regions[b->region_by_name[j] - 1].name, r->name) == 0)
            return b->merged[id] = b->region_by_name[j] - 1;
    lod_region_rec rec = {.line = r->line, .kind = r->kind};
    if (b->region_count >= NONE - 1 || TT_RESERVE(b->regions, b->region_cap, b->region_count + 1) != 0 ||
        blob_add_str(&b->strings, r->name, &rec.name) != 0 || blob_add_str(&b->strings, r->file, &rec.file) != 0)
        return NONE;
    b->regions[b->region_count] = rec;
    b->region_by_name[j] = (uint32_t)b->region_count + 1;
    return b->merged[id] = (uint32_t)b->region_count++;
}

/* The index is written once and read many times, and its blocks are
 * small: level 3 packs them some 4% tighter than the trace's level 1 at no
 * cost in build time (its bytes to write shrink as much). */
#define LOD_ZSTD_LEVEL 3

/* The blocks of a trace up to this size are compressed at the catalog's
 * level (LOD_CATALOG_LEVEL): 5-8% smaller, for some 2 us a call (nested
 * calls' 860 KB trace: 0.12 -> 0.55 s of CPU to build). A small trace's
 * index is the one furthest from a small part of its trace: the trace's
 * records of a call take the same bytes however few they are, the index's
 * compress better the more it holds. */
#define LOD_SMALL_TRACE (1024u << 10)

/* A catalog up to this size is compressed at zstd's level 19: 10-15%
 * smaller than at level 3, for 0.5 s at most (the 30 M-event bench's 0.6
 * MiB: 0.47 s). A small trace's index is mostly its catalog (with its last
 * blocks, below); a large trace's catalog is a small part of its index. */
#define LOD_CATALOG_SMALL (1024u << 10)
#define LOD_CATALOG_LEVEL 19

/* The last block of a depth's level goes in the catalog (lod_file.h),
 * where it compresses with the others instead of alone (a block of a few
 * hundred spans would take a third more), as long as those take at most
 * LOD_SMALL_TOTAL bytes: the memory they take while the index is built,
 * and what its loading decodes. */
#define LOD_SMALL_TOTAL (256u << 10)

/* Encodes the spans of the block being filled (lod_file.h) and appends it
 * to the image; `last`: no span follows it at its depth and level. */
static int flush_block(builder *b, span_vec *v, int last)
{
    size_t n = v->n;
    if (n == 0) return 0;
    uint8_t *raw = b->raw;
    /* The columns one after another (lod_file.h), each in the fewest bytes
     * that hold its largest value, byte by byte. */
    uint64_t most[4] = {0};
    uint64_t prev_end = v->v[0].start;
    for (size_t j = 0; j < n; j++) {
        const tt_lod_span *s = &v->v[j];
        uint64_t value[4] = {s->start - prev_end, s->end - s->start, s->region, s->calls - 1};
        for (int k = 0; k < 4; k++) most[k] |= value[k];
        prev_end = s->end;
    }
    uint8_t *col[4], *end = raw + 4;
    for (int k = 0; k < 4; k++) {
        unsigned width = 0;
        while (width < 8 && most[k] >> (8 * width)) width++;
        raw[k] = (uint8_t)width;
        col[k] = end;
        end += width * n;
    }
    prev_end = v->v[0].start;
    for (size_t j = 0; j < n; j++) {
        const tt_lod_span *s = &v->v[j];
        uint64_t value[4] = {s->start - prev_end, s->end - s->start, s->region, s->calls - 1};
        for (int k = 0; k < 4; k++)
            for (unsigned i = 0; i < raw[k]; i++) col[k][i * n + j] = (uint8_t)(value[k] >> (8 * i));
        prev_end = s->end;
    }
    size_t size = (size_t)(end - raw);
    if (TT_RESERVE(v->blocks, v->block_cap, v->block_count + 1) != 0) return -1;
    if (last && !v->scratch && size <= LOD_SMALL_TOTAL - b->small_size) {
        if (TT_RESERVE(b->small, b->small_cap, b->small_size + size) != 0) return -1;
        memcpy(b->small + b->small_size, raw, size);
        v->blocks[v->block_count++] = (lod_block){
            v->v[0].start,  v->v[n - 1].end, b->small_size, (uint32_t)n, TT_CODEC_NONE | LOD_BLOCK_IN_CATALOG,
            (uint32_t)size, (uint32_t)size};
        b->small_size += size;
        b->pending -= n;
        v->n = 0;
        return 0;
    }
    uint8_t *stored = b->packed;
    size_t n_stored = tt_compress(b->zctx, stored, tt_compress_bound(size), raw, size);
    if (n_stored == 0) {
        stored = raw;
        n_stored = size;
    }
    uint64_t at;
    if (v->scratch) {
        at = b->scratch_size;
        if (!b->io_errno && pwrite(fileno(b->scratch), stored, n_stored, (off_t)at) != (ssize_t)n_stored)
            b->io_errno = errno ? errno : ENOSPC;
        b->scratch_size += n_stored;
    } else {
        at = out_put(b, stored, n_stored);
    }
    v->blocks[v->block_count++] = (lod_block){
        v->v[0].start,  v->v[n - 1].end,   at, (uint32_t)n, stored == raw ? TT_CODEC_NONE : TT_CODEC_ZSTD,
        (uint32_t)size, (uint32_t)n_stored};
    b->pending -= n;
    v->n = 0;
    return b->io_errno ? -1 : 0;
}

static int push_span(builder *b, span_vec *v, tt_lod_span s)
{
    if (TT_RESERVE(v->v, v->cap, v->n + 1) != 0) return -1;
    v->v[v->n++] = s;
    v->count++;
    b->pending++;
    return v->n == TT_LOD_BLOCK_SPANS ? flush_block(b, v, 0) : 0;
}

static int push_sample(sample_vec *v, tt_lod_sample s)
{
    if (TT_RESERVE(v->v, v->cap, v->n + 1) != 0) return -1;
    v->v[v->n++] = s;
    return 0;
}

/* The track of lane `lane` named `name` of this kind, made on first use:
 * its index, or NONE when memory runs out. */
static uint32_t track_of(builder *b, uint32_t lane, uint32_t name, uint32_t kind)
{
    /* A lane's tracks are the last ones made: search those only. */
    for (size_t i = b->track_count; i-- > 0 && b->tracks[i].rec.lane == lane;)
        if (b->tracks[i].rec.name == name && b->tracks[i].rec.kind == kind) return (uint32_t)i;
    if (TT_RESERVE(b->tracks, b->track_cap, b->track_count + 1) != 0) return NONE;
    track_build *t = &b->tracks[b->track_count];
    memset(t, 0, sizeof *t);
    t->rec = (lod_track_rec){.name = name, .lane = lane, .kind = kind, .min = 1.0 / 0.0, .max = -1.0 / 0.0};
    return (uint32_t)b->track_count++;
}

static int add_sample(builder *b, uint32_t lane, uint32_t name, uint32_t kind, uint64_t time, double value)
{
    uint32_t index = track_of(b, lane, name, kind);
    if (index == NONE) return -1;
    track_build *t = &b->tracks[index];
    if (value < t->rec.min) t->rec.min = value;
    if (value > t->rec.max) t->rec.max = value;
    t->rec.samples++;
    return push_sample(&t->level[0], (tt_lod_sample){time, value, value, value});
}

/* The parameter, counter or mark of event ev on lane `lane` of process p. */
static int add_annotation(builder *b, const tt_process *p, uint32_t lane, const tt_event *ev)
{
    lane_build *l = &b->lanes[lane];
    uint32_t name;
    if (blob_add_str(&b->strings, p->strings[ev->name], &name) != 0) return -1;
    if (ev->kind == TT_EV_COUNTER) return add_sample(b, lane, name, TT_LOD_TRACK_COUNTER, ev->time, ev->double_value);
    if (ev->kind == TT_EV_MARK) {
        if (TT_RESERVE(l->marks, l->mark_cap, l->rec.mark_count + 1) != 0) return -1;
        l->marks[l->rec.mark_count++] = (tt_lod_mark){.time = ev->time, .name = name, .depth = ev->depth};
        return 0;
    }
    tt_lod_param param = {.time = ev->time, .depth = ev->depth, .name = name};
    if (ev->kind == TT_EV_PARAM_STRING) {
        /* A value is stored up to a NUL it may hold: the blob's strings end there. */
        const char *nul = memchr(ev->str, '\0', ev->str_len);
        param.kind = TT_LOD_PARAM_STRING;
        if (blob_add(&b->strings, ev->str, nul ? (size_t)(nul - ev->str) : ev->str_len, &param.text) != 0) return -1;
    } else if (ev->kind == TT_EV_PARAM_INT) {
        param.kind = TT_LOD_PARAM_INT;
        param.value = ev->int_value;
        if (add_sample(b, lane, name, TT_LOD_TRACK_PARAM, ev->time, (double)ev->int_value) != 0) return -1;
    } else {
        param.kind = TT_LOD_PARAM_UINT;
        param.value = (int64_t)ev->uint_value;
        if (add_sample(b, lane, name, TT_LOD_TRACK_PARAM, ev->time, (double)ev->uint_value) != 0) return -1;
    }
    if (TT_RESERVE(l->params, l->param_cap, l->rec.param_count + 1) != 0) return -1;
    l->params[l->rec.param_count++] = param;
    return 0;
}

/* An OBJECTS event of process p, kept until every stream is read. */
static int add_objects(builder *b, const tt_process *p, const tt_event *ev)
{
    object_read o = {.time = ev->time,
                     .lane = b->process_lane,
                     .region = NONE,
                     .created = ev->created,
                     .destroyed = ev->destroyed,
                     .seq = b->object_count,
                     .size = ev->bytes > UINT32_MAX ? UINT32_MAX : (uint32_t)ev->bytes};
    if (ev->region != UINT32_MAX && (o.region = region_of(b, p, ev->region)) == NONE) return -1;
    if (blob_add_str(&b->strings, p->strings[ev->name], &o.type) != 0 ||
        TT_RESERVE(b->objects, b->object_cap, b->object_count + 1) != 0)
        return -1;
    b->objects[b->object_count++] = o;
    return 0;
}

/* The blocks being filled of every lane and depth hold at most this many
 * spans in all (24 bytes each): past it, every one is written as it is, a
 * block of fewer spans. Only a thread that runs deep has many filled at
 * once. */
#define LOD_PENDING_MAX (1u << 18)

static int flush_all(builder *b, int last)
{
    for (size_t i = 0; i < b->lane_count; i++)
        for (uint32_t d = 0; d < b->lanes[i].rec.depths; d++)
            if (flush_block(b, &b->lanes[i].depths[d].level[0], last) != 0 ||
                flush_block(b, &b->lanes[i].depths[d].crossing, last) != 0)
                return -1;
    return 0;
}

/* The chunk last read of lane l is done: its sums kept (lod_file.h). */
static int end_chunk(builder *b, lane_build *l)
{
    if (!l->rec.chunk_count) return 0;
    lod_chunk_rec *ch = &l->chunks[l->rec.chunk_count - 1];
    if (ch->low > ch->high) ch->low = ch->high = 0; /* none whole */
    ch->sums_at = l->rec.sum_count;
    if (TT_RESERVE(l->sums, l->sum_cap, l->rec.sum_count + (ch->high - ch->low) + 1) != 0) return -1;
    for (uint32_t d = ch->low; d < ch->high; d++) {
        l->sums[l->rec.sum_count++] = b->depth_sum[d];
        b->depth_sum[d] = 0;
    }
    return 0;
}

/* Reads one stream into lane `lane`. Fails only when memory runs out or
 * the image cannot be written. */
static int read_lane(builder *b, const tt_process *p, uint32_t lane, tt_cursor *c)
{
    lane_build *l = &b->lanes[lane];
    size_t depth = 0;
    tt_event ev;
    int first = 1;
    while (tt_cursor_next(c, &ev)) {
        if (++b->events % TT_LOD_PROGRESS_EVENTS == 0 && b->progress)
            b->progress->say(b->progress->ctx, TT_LOD_READING, b->events);
        if (first) {
            l->rec.begin = ev.time;
            first = 0;
        }
        l->rec.end = ev.time;
        if (!ev.synthesized && ev.kind != TT_EV_STREAM_END) { /* an event of the chunk read last */
            const tt_chunk_start *at = tt_cursor_chunk(c);
            lod_chunk_rec *ch = l->rec.chunk_count ? &l->chunks[l->rec.chunk_count - 1] : NULL;
            if (!ch || ch->seq != at->seq) {
                if (end_chunk(b, l) != 0 || TT_RESERVE(l->chunks, l->chunk_cap, l->rec.chunk_count + 1) != 0) return -1;
                ch = &l->chunks[l->rec.chunk_count++];
                *ch = (lod_chunk_rec){.first = ev.time,
                                      .offset = at->offset,
                                      .before_time = at->time,
                                      .before_ticks = at->ticks,
                                      .seq = at->seq,
                                      .depth = at->depth,
                                      .crc = at->crc,
                                      .low = UINT32_MAX};
            }
            ch->last = ev.time;
            ch->events++;
        }
        switch (ev.kind) {
        case TT_EV_ENTER: {
            uint32_t region = region_of(b, p, ev.region);
            if (region == NONE || TT_RESERVE(b->stack, b->stack_cap, depth + 1) != 0) return -1;
            uint32_t node = lod_tree_node_of(&l->tree, depth ? b->stack[depth - 1].node : NONE, region);
            if (node == NONE) return -1;
            b->stack[depth++] = (frame){ev.time, region, node, (uint32_t)l->rec.chunk_count - 1, ev.resumed};
            break;
        }
        case TT_EV_LEAVE: {
            frame f = b->stack[--depth]; /* the reader guarantees well nesting */
            double took = (double)(ev.time - f.start);
            lod_tree_node *node = &l->tree.nodes[f.node];
            node->visits += !f.resumed;
            node->inclusive += took;
            node->exclusive += took;
            if (depth) l->tree.nodes[b->stack[depth - 1].node].exclusive -= took;
            if (depth >= l->rec.depths) {
                if (TT_RESERVE(l->depths, l->depth_cap, depth + 1) != 0) return -1;
                memset(l->depths + l->rec.depths, 0, (depth + 1 - l->rec.depths) * sizeof *l->depths);
                l->rec.depths = (uint32_t)depth + 1;
            }
            /* A call the chunk holds whole is the trace's; any other the index
             * keeps, a part cut by a gap too (lod_trace.c reads none of those). */
            tt_lod_span span = {f.start, ev.time, f.region, 1};
            lod_chunk_rec *ch = &l->chunks[l->rec.chunk_count - 1];
            int whole = !ev.synthesized && !f.resumed && f.chunk == l->rec.chunk_count - 1;
            if (whole) {
                if (depth >= b->depth_sum_cap) {
                    size_t had = b->depth_sum_cap;
                    if (TT_RESERVE(b->depth_sum, b->depth_sum_cap, depth + 1) != 0) return -1;
                    memset(b->depth_sum + had, 0, (b->depth_sum_cap - had) * sizeof *b->depth_sum);
                }
                b->depth_sum[depth] += ev.time - f.start;
                if (depth < ch->low) ch->low = (uint32_t)depth;
                if (depth >= ch->high) ch->high = (uint32_t)depth + 1;
            }
            l->depths[depth].level[0].scratch = 1;
            if (push_span(b, &l->depths[depth].level[0], span) != 0 ||
                (!whole && push_span(b, &l->depths[depth].crossing, span) != 0) ||
                (b->pending > LOD_PENDING_MAX && flush_all(b, 0) != 0))
                return -1;
            l->rec.calls++;
            break;
        }
        case TT_EV_PARAM_INT:
        case TT_EV_PARAM_UINT:
        case TT_EV_PARAM_STRING:
        case TT_EV_COUNTER:
        case TT_EV_MARK:
            if (add_annotation(b, p, lane, &ev) != 0) return -1;
            break;
        case TT_EV_OBJECTS:
            if (add_objects(b, p, &ev) != 0) return -1;
            break;
        default:
            break;
        }
    }
    if (end_chunk(b, l) != 0) return -1;
    if (!first) {
        if (l->rec.begin < b->begin) b->begin = l->rec.begin;
        if (l->rec.end > b->end) b->end = l->rec.end;
    }
    return 0;
}

static int read_process(builder *b, const tt_trace *t, const tt_process *p, uint32_t index, uint32_t process_name)
{
    if (p->defs_cut && add_problem(b, p->defs_cut) != 0) return -1;
    if (TT_RESERVE(b->merged, b->merged_cap, p->region_count + 1) != 0) return -1;
    for (size_t i = 0; i <= p->region_count; i++) b->merged[i] = NONE;
    b->process_lane = NONE;
    for (size_t s = 0; s < p->thread_count; s++) {
        const tt_thread *th = &p->threads[s];
        if (!th->present) continue;
        tt_cursor *c;
        tt_error err;
        if (tt_cursor_open(t, p, s, &c, &err) != 0) {
            if (add_problem(b, err.message) != 0) return -1;
            continue;
        }
        if (b->lane_count >= NONE || TT_RESERVE(b->lanes, b->lane_cap, b->lane_count + 1) != 0) {
            tt_cursor_close(c);
            return -1;
        }
        uint32_t lane = (uint32_t)b->lane_count++;
        if (b->process_lane == NONE) b->process_lane = lane;
        lane_build *l = &b->lanes[lane];
        memset(l, 0, sizeof *l);
        l->rec.process = process_name;
        l->rec.trace_process = index;
        l->rec.pid = p->pid;
        l->rec.native_tid = th->native_tid;
        l->rec.stream = (uint32_t)s;
        int rc = blob_add_str(&b->strings, th->name, &l->rec.name);
        if (rc == 0) rc = read_lane(b, p, lane, c);
        l->rec.tree_count = l->tree.count;
        tt_u64map_free(&l->tree.by_path); /* complete: only its nodes are kept */
        if (rc == 0 && tt_cursor_state(c) != TT_STREAM_COMPLETE) rc = add_problem(b, tt_cursor_problem(c));
        tt_cursor_close(c);
        if (rc != 0) return -1;
    }
    return 0;
}

/* ---- objects ---- */

static int by_process_then_time(const void *a, const void *b)
{
    const object_read *x = a, *y = b;
    if (x->lane != y->lane) return x->lane < y->lane ? -1 : 1;
    if (x->time != y->time) return x->time < y->time ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int by_time(const void *a, const void *b)
{
    const object_read *x = a, *y = b;
    if (x->time != y->time) return x->time < y->time ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The objects track of each process and type, after every other track: a
 * sample of the objects alive (created less destroyed, over the process's
 * streams) at each of its records. Then the records in time order. */
static int make_object_tracks(builder *b)
{
    if (!b->object_count) return 0; /* objects is NULL: qsort must not see it */
    qsort(b->objects, b->object_count, sizeof *b->objects, by_process_then_time);
    uint32_t first = (uint32_t)b->track_count;
    double *alive = NULL;
    size_t alive_cap = 0;
    for (size_t i = 0; i < b->object_count; i++) {
        object_read *o = &b->objects[i];
        uint32_t track = track_of(b, o->lane, o->type, TT_LOD_TRACK_OBJECTS);
        if (track == NONE || TT_RESERVE(alive, alive_cap, track - first + 1) != 0) {
            free(alive);
            return -1;
        }
        track_build *t = &b->tracks[track];
        if (t->rec.samples == 0) alive[track - first] = 0;
        t->rec.size = o->size;
        alive[track - first] += (double)o->created - (double)o->destroyed;
        o->track = track;
        if (add_sample(b, o->lane, o->type, TT_LOD_TRACK_OBJECTS, o->time, alive[track - first]) != 0) {
            free(alive);
            return -1;
        }
    }
    free(alive);
    qsort(b->objects, b->object_count, sizeof *b->objects, by_time);
    return 0;
}

/* ---- levels ---- */

/* A coarser level is stored when it has at most 1 / LOD_LEVEL_SHRINK of
 * the items of the last level stored below it (lod.h). */
#define LOD_LEVEL_SHRINK 6

uint64_t tt_lod_grain(unsigned level) { return level == 0 ? 0 : (uint64_t)1 << (5 + level); }

/* Level k from the level below it (see lod.h), span by span. A block is at
 * most 8 grains long, so that what a thread does over time still shows at
 * coarse levels. Without `out`, the spans are only counted.
 *
 * A level is read where a pixel is a grain or more, so its times need not
 * be finer than a fraction of a grain: they are kept to LOD_QUANTA per
 * grain, rounded outward (each item still holds what it merged), except
 * where that would make an item overlap the next: a time of whole quanta
 * takes fewer bytes than one to the ns (a run with --objects: its coarse
 * levels 40% smaller). */
#define LOD_QUANTA 8
typedef struct merger {
    uint64_t grain;
    span_vec *out;  /* or NULL */
    uint64_t count; /* spans made */
    tt_lod_span cur;
    uint64_t longest;
    int open;
    tt_lod_span made; /* the last span made, its end not yet rounded */
    int have_made;
} merger;

/* The last span made, its end rounded up unless that passes `before`. */
static int merge_put(builder *b, merger *m, uint64_t before)
{
    uint64_t q = m->grain / LOD_QUANTA, end = m->made.end, up = q - end % q; /* before >= end */
    if (end % q && before - end >= up) m->made.end = end + up;
    m->have_made = 0;
    return push_span(b, m->out, m->made);
}

static int merge_emit(builder *b, merger *m, tt_lod_span s)
{
    m->count++;
    if (!m->out) return 0;
    uint64_t start = s.start - s.start % (m->grain / LOD_QUANTA);
    if (m->have_made) {
        if (merge_put(b, m, s.start) != 0) return -1;
        if (start < m->made.end) start = m->made.end;
    }
    s.start = start;
    m->made = s;
    m->have_made = 1;
    return 0;
}

static int merge_span(builder *b, merger *m, tt_lod_span s)
{
    uint64_t len = s.end - s.start;
    if (len >= m->grain) {
        int rc = m->open ? merge_emit(b, m, m->cur) : 0;
        m->open = 0;
        return rc | merge_emit(b, m, s);
    }
    /* (Rounded outward, it stays within 8 grains.) */
    if (m->open && s.start - m->cur.end < m->grain &&
        s.end - m->cur.start <= 8 * m->grain - 2 * m->grain / LOD_QUANTA) {
        m->cur.end = s.end;
        m->cur.calls += s.calls;
        if (len > m->longest) {
            m->longest = len;
            m->cur.region = s.region;
        }
        return 0;
    }
    int rc = m->open ? merge_emit(b, m, m->cur) : 0;
    m->cur = s;
    m->longest = len;
    m->open = 1;
    return rc;
}

/* Feeds every span of `in` (its blocks read back from the image) to the
 * mergers m[0 .. n), then ends them. */
static int merge_level(builder *b, const span_vec *in, merger *m, size_t n)
{
    tt_lod_cursor *c = b->cursor;
    for (size_t i = 0; i < in->block_count; i++) {
        const lod_block *block = &in->blocks[i];
        if (in->scratch) {
            if (!b->io_errno &&
                pread(fileno(b->scratch), b->packed, block->stored, (off_t)block->data) != (ssize_t)block->stored)
                b->io_errno = errno ? errno : EIO;
            if (b->io_errno) return -1;
        } else if (block->codec & LOD_BLOCK_IN_CATALOG) {
            memcpy(b->packed, b->small + block->data, block->stored);
        } else if (out_read(b, block->data, b->packed, block->stored) != 0) {
            return -1;
        }
        c->blocks = NULL; /* this block only */
        c->block_count = c->block = 0;
        c->have = c->have_block = c->taken = c->trace = 0;
        c->until = UINT64_MAX;
        c->region_count = UINT32_MAX;
        if (!lod_block_decode(c, block, b->packed)) return -1;
        for (const tt_lod_span *s; (s = tt_lod_peek(c)); tt_lod_advance(c))
            for (size_t k = 0; k < n; k++)
                if (merge_span(b, &m[k], *s) != 0) return -1;
        b->spans_merged += block->spans;
        if (b->progress) b->progress->say(b->progress->ctx, TT_LOD_MERGING, b->spans_merged);
    }
    for (size_t k = 0; k < n; k++)
        if ((m[k].open && merge_emit(b, &m[k], m[k].cur) != 0) ||
            (m[k].have_made && merge_put(b, &m[k], UINT64_MAX) != 0))
            return -1;
    return m[0].out ? flush_block(b, m[0].out, 1) : 0;
}

/* Level k of a track: its samples in buckets of a grain. */
static int merge_samples(const sample_vec *in, sample_vec *out, uint64_t grain)
{
    tt_lod_sample cur = {0};
    uint64_t bucket = 0;
    int open = 0;
    for (size_t i = 0; i < in->n; i++) {
        tt_lod_sample s = in->v[i];
        if (open && s.time / grain == bucket) {
            if (s.min < cur.min) cur.min = s.min;
            if (s.max > cur.max) cur.max = s.max;
            cur.last = s.last;
            continue;
        }
        if (open && push_sample(out, cur) != 0) return -1;
        cur = s;
        bucket = s.time / grain;
        open = 1;
    }
    return open ? push_sample(out, cur) : 0;
}

/* Levels 1 and up of every lane's depths, and of the tracks. */
#define LOD_LEVELS_COUNTED 4

/* In a trace of at most LOD_UNMERGED_CALLS calls, a depth whose level 0
 * holds at most LOD_UNMERGED_BLOCKS blocks has no coarser level: a query
 * over the whole of it decodes these few blocks and merges what falls in a
 * pixel as it reads them (lod_query.c): a view of the whole run then reads
 * at most LOD_UNMERGED_CALLS calls (0.6 ms), where a small trace's coarse
 * levels were a tenth of its index. (In a larger trace, 50 threads say, a
 * view of the whole run would read every call.) A coarse level of more than
 * one block is merged further, so that a view of a long run reads at most
 * a block or two per depth. Tracks likewise, their samples read in place,
 * up to LOD_UNMERGED_CALLS of them in all. */
#define LOD_UNMERGED_BLOCKS 4
#define LOD_UNMERGED_CALLS 65536u
static int make_levels(builder *b)
{
    uint64_t span = b->end > b->begin ? b->end - b->begin : 0;
    b->levels = 1;
    while (b->levels < TT_LOD_MAX_LEVELS && tt_lod_grain(b->levels) <= span) b->levels++;
    merger m[LOD_LEVELS_COUNTED];
    uint64_t calls = 0, samples = 0;
    for (size_t i = 0; i < b->lane_count; i++) calls += b->lanes[i].rec.calls;
    for (size_t i = 0; i < b->track_count; i++) samples += b->tracks[i].level[0].n;
    uint64_t unmerged = (calls <= LOD_UNMERGED_CALLS ? LOD_UNMERGED_BLOCKS : 1) * (uint64_t)TT_LOD_BLOCK_SPANS;
    for (size_t i = 0; i < b->lane_count; i++) {
        lane_build *l = &b->lanes[i];
        for (uint32_t d = 0; d < l->rec.depths; d++) {
            span_vec *level = l->depths[d].level;
            free(level[0].v); /* written: its blocks say where */
            level[0].v = NULL;
            level[0].cap = 0;
            /* A level that would keep more than 1 / LOD_LEVEL_SHRINK of the
             * last level stored is not stored: reading that one instead
             * costs at most LOD_LEVEL_SHRINK times as much, and all levels
             * above 0 together are at most a fifth of it (the coarse levels'
             * items are merged ones, which take more bytes each than calls).
             * Level 0 of LOD_UNMERGED_BLOCKS blocks or fewer (a small
             * trace's), or a coarser level of one block, is not merged
             * further: reading it whole costs a query little more than
             * reading a coarser one.
             * A pass over the level `below` makes the level above it and
             * counts what the next few would hold, merged from the same;
             * when the first is not stored, the counts say which is (or
             * further passes count further), and a last pass makes it. */
            unsigned below = 0, next = 1;
            while (next < b->levels) {
                if (level[below].count <= (below ? TT_LOD_BLOCK_SPANS : unmerged)) {
                    while (next < b->levels) level[next++].same = 1;
                    break;
                }
                uint64_t enough = level[below].count / LOD_LEVEL_SHRINK, mark = b->size;
                size_t small_mark = b->small_size;
                size_t n = b->levels - next < LOD_LEVELS_COUNTED ? b->levels - next : LOD_LEVELS_COUNTED, first;
                for (size_t k = 0; k < n; k++) m[k] = (merger){.grain = tt_lod_grain(next + (unsigned)k)};
                m[0].out = &level[next];
                if (merge_level(b, &level[below], m, n) != 0) return -1;
                if (m[0].count > enough) {
                    out_cut(b, mark);
                    b->small_size = small_mark;
                    free(level[next].v);
                    free(level[next].blocks);
                    level[next] = (span_vec){0};
                    for (first = 0; first < n && m[first].count > enough; first++) level[next++].same = 1;
                    while (next < b->levels && first == n) {
                        n = b->levels - next < LOD_LEVELS_COUNTED ? b->levels - next : LOD_LEVELS_COUNTED;
                        for (size_t k = 0; k < n; k++) m[k] = (merger){.grain = tt_lod_grain(next + (unsigned)k)};
                        if (merge_level(b, &level[below], m, n) != 0) return -1;
                        for (first = 0; first < n && m[first].count > enough; first++) level[next++].same = 1;
                    }
                    if (next == b->levels) break;
                    m[0] = (merger){.grain = tt_lod_grain(next), .out = &level[next]};
                    if (merge_level(b, &level[below], m, 1) != 0) return -1;
                }
                free(level[next].v);
                level[next].v = NULL;
                level[next].cap = 0;
                below = next++;
            }
        }
    }
    for (size_t i = 0; i < b->track_count; i++) {
        sample_vec *level = b->tracks[i].level;
        int kept = samples <= LOD_UNMERGED_CALLS && level[0].n <= LOD_UNMERGED_BLOCKS * (size_t)TT_LOD_BLOCK_SPANS;
        for (unsigned k = 1; k < b->levels; k++) {
            const sample_vec *below = &level[k - 1];
            while (below->same) below--;
            if (kept) {
                level[k].same = 1;
                continue;
            }
            if (merge_samples(below, &level[k], tt_lod_grain(k)) != 0) return -1;
            if (level[k].n * LOD_LEVEL_SHRINK > below->n) {
                free(level[k].v);
                level[k] = (sample_vec){.same = 1};
            }
        }
    }
    /* Levels above the last one stored anywhere are that one: left out,
     * they would cost each lane's depth a reference (a small trace's
     * index would be mostly those). */
    unsigned stored = 0;
    for (size_t i = 0; i < b->lane_count; i++)
        for (uint32_t d = 0; d < b->lanes[i].rec.depths; d++)
            for (unsigned k = stored + 1; k < b->levels; k++)
                if (!b->lanes[i].depths[d].level[k].same) stored = k;
    for (size_t i = 0; i < b->track_count; i++)
        for (unsigned k = stored + 1; k < b->levels; k++)
            if (!b->tracks[i].level[k].same) stored = k;
    b->levels = stored + 1;
    return b->io_errno ? -1 : 0;
}

/* ---- the image ---- */

static uint64_t align8(uint64_t n) { return (n + 7) & ~(uint64_t)7; }

/* Where the records go in the catalog (lod_file.h): the records' offsets
 * are set, and refs (per lane, then per track, as the catalog holds them)
 * filled. Returns the offset of the strings. */
/* The spans the index keeps of level k of a depth: level 0's, those no chunk holds whole. */
static span_vec *kept_level(depth_levels *d, unsigned k) { return k ? &d->level[k] : &d->crossing; }

static uint64_t lay_out(builder *b, lod_header *h, lod_ref *refs, uint64_t *small_off)
{
    uint64_t off = 0;
    for (size_t i = 0; i < b->lane_count; i++)
        for (uint32_t d = 0; d < b->lanes[i].rec.depths; d++)
            for (unsigned k = 0; k < b->levels; k++) {
                span_vec *v = kept_level(&b->lanes[i].depths[d], k);
                if (v->same) continue;
                v->blocks_off = off;
                off += v->block_count * sizeof(lod_block);
            }
    h->regions_off = off;
    off += b->region_count * sizeof(lod_region_rec);
    h->lanes_off = off;
    off += b->lane_count * sizeof(lod_lane_rec);
    h->tracks_off = off;
    off += b->track_count * sizeof(lod_track_rec);
    h->problems_off = off;
    off = align8(off + b->problem_count * sizeof(uint32_t));
    uint64_t refs_off = off;
    size_t r = 0;
    for (size_t i = 0; i < b->lane_count; i++) {
        lane_build *l = &b->lanes[i];
        l->rec.refs_off = refs_off + r * sizeof(lod_ref);
        for (uint32_t d = 0; d < l->rec.depths; d++)
            for (unsigned k = 0; k < b->levels; k++, r++) {
                const span_vec *v = kept_level(&l->depths[d], k);
                if (!v->same)
                    refs[r] = (lod_ref){v->blocks_off, v->block_count};
                else /* level 0's, or the level's below it */
                    refs[r] = k == 1 ? (lod_ref){LOD_REF_TRACE, 0} : refs[r - 1];
            }
    }
    for (size_t i = 0; i < b->track_count; i++) {
        b->tracks[i].rec.refs_off = refs_off + r * sizeof(lod_ref);
        r += b->levels;
    }
    off += r * sizeof(lod_ref);
    for (size_t i = 0; i < b->lane_count; i++) {
        lane_build *l = &b->lanes[i];
        l->rec.params_off = off;
        off += l->rec.param_count * sizeof(tt_lod_param);
        l->rec.marks_off = off;
        off += l->rec.mark_count * sizeof(tt_lod_mark);
        l->rec.tree_off = off;
        off += l->rec.tree_count * sizeof(lod_tree_rec);
        l->rec.chunks_off = off;
        off += l->rec.chunk_count * sizeof(lod_chunk_rec);
        l->rec.sums_off = off;
        off += l->rec.sum_count * sizeof(uint64_t);
    }
    r = 0;
    for (size_t i = 0; i < b->lane_count; i++) r += (size_t)b->lanes[i].rec.depths * b->levels;
    for (size_t i = 0; i < b->track_count; i++)
        for (unsigned k = 0; k < b->levels; k++, r++) {
            const sample_vec *v = &b->tracks[i].level[k];
            if (v->same) {
                refs[r] = refs[r - 1];
            } else {
                refs[r] = (lod_ref){off, v->n};
                off += v->n * sizeof(tt_lod_sample);
            }
        }
    h->objects_off = off;
    h->object_count = b->object_count;
    off += b->object_count * sizeof(tt_lod_objects);
    *small_off = off;
    return off + b->small_size;
}

/* The catalog as it is assembled, in memory. */
typedef struct catalog {
    uint8_t *data;
    size_t size;
} catalog;

static void cat_put(catalog *c, const void *data, size_t len)
{
    if (len) memcpy(c->data + c->size, data, len);
    c->size += len;
}

static void cat_align8(catalog *c)
{
    static const uint8_t zeros[8];
    cat_put(c, zeros, (size_t)(-c->size & 7));
}

/* Appends the catalog after the spans, then puts the header in front. */
static int write_records(builder *b, uint64_t signature)
{
    if (b->progress) b->progress->say(b->progress->ctx, TT_LOD_WRITING, 0);
    size_t ref_count = 0;
    for (size_t i = 0; i < b->lane_count; i++) ref_count += (size_t)b->lanes[i].rec.depths * b->levels;
    ref_count += b->track_count * b->levels;
    lod_ref *refs = malloc((ref_count ? ref_count : 1) * sizeof *refs);
    if (!refs) return -1;
    lod_header h = {.version = LOD_VERSION, .levels = b->levels, .signature = signature};
    memcpy(h.magic, LOD_MAGIC, sizeof h.magic);
    h.begin = b->begin <= b->end ? b->begin : 0;
    h.end = b->end;
    h.region_count = (uint32_t)b->region_count;
    h.lane_count = (uint32_t)b->lane_count;
    h.track_count = (uint32_t)b->track_count;
    h.problem_count = (uint32_t)b->problem_count;
    uint64_t small_off;
    h.strings_off = lay_out(b, &h, refs, &small_off);
    h.strings_size = b->strings.size;
    uint64_t raw = h.strings_off + h.strings_size;
    catalog c = {raw <= UINT32_MAX ? malloc(raw) : NULL, 0};
    size_t bound = tt_compress_bound((size_t)raw);
    uint8_t *packed = c.data ? malloc(bound) : NULL;
    if (!packed) {
        free(c.data);
        free(refs);
        return -1;
    }
    for (size_t i = 0; i < b->lane_count; i++)
        for (uint32_t d = 0; d < b->lanes[i].rec.depths; d++)
            for (unsigned k = 0; k < b->levels; k++) {
                span_vec *v = kept_level(&b->lanes[i].depths[d], k);
                if (v->same) continue;
                for (size_t j = 0; j < v->block_count; j++)
                    if (v->blocks[j].codec & LOD_BLOCK_IN_CATALOG) v->blocks[j].data += small_off;
                cat_put(&c, v->blocks, v->block_count * sizeof *v->blocks);
            }
    cat_put(&c, b->regions, b->region_count * sizeof *b->regions);
    for (size_t i = 0; i < b->lane_count; i++) cat_put(&c, &b->lanes[i].rec, sizeof b->lanes[i].rec);
    for (size_t i = 0; i < b->track_count; i++) cat_put(&c, &b->tracks[i].rec, sizeof b->tracks[i].rec);
    cat_put(&c, b->problems, b->problem_count * sizeof *b->problems);
    cat_align8(&c);
    cat_put(&c, refs, ref_count * sizeof *refs);
    for (size_t i = 0; i < b->lane_count; i++) {
        const lane_build *l = &b->lanes[i];
        cat_put(&c, l->params, l->rec.param_count * sizeof *l->params);
        cat_put(&c, l->marks, l->rec.mark_count * sizeof *l->marks);
        for (size_t j = 0; j < l->rec.tree_count; j++) {
            const lod_tree_node *n = &l->tree.nodes[j];
            lod_tree_rec rec = {n->parent, n->region, (uint64_t)n->visits, (uint64_t)n->inclusive,
                                n->exclusive > 0 ? (uint64_t)n->exclusive : 0};
            cat_put(&c, &rec, sizeof rec);
        }
        cat_put(&c, l->chunks, l->rec.chunk_count * sizeof *l->chunks);
        cat_put(&c, l->sums, l->rec.sum_count * sizeof *l->sums);
    }
    for (size_t i = 0; i < b->track_count; i++)
        for (unsigned k = 0; k < b->levels; k++) {
            const sample_vec *v = &b->tracks[i].level[k];
            if (!v->same) cat_put(&c, v->v, v->n * sizeof *v->v);
        }
    for (size_t i = 0; i < b->object_count; i++) {
        const object_read *o = &b->objects[i];
        tt_lod_objects rec = {o->time, o->track, o->region, o->created, o->destroyed};
        cat_put(&c, &rec, sizeof rec);
    }
    cat_put(&c, b->small, b->small_size);
    cat_put(&c, b->strings.data, b->strings.size);
    free(refs);
    int rc = c.size == raw ? 0 : -1; /* lay_out and this disagree: a bug */
    if (rc == 0) rc = lod_columns(c.data, c.size, &h, 1);
    if (rc == 0) {
        void *cz = tt_compress_ctx_new(c.size <= LOD_CATALOG_SMALL ? LOD_CATALOG_LEVEL : LOD_ZSTD_LEVEL);
        size_t stored = tt_compress(cz, packed, bound, c.data, c.size);
        tt_compress_ctx_free(cz);
        h.catalog_codec = stored ? TT_CODEC_ZSTD : TT_CODEC_NONE;
        h.catalog_raw = (uint32_t)raw;
        h.catalog_stored = stored ? stored : raw;
        h.catalog_off = out_put(b, stored ? packed : c.data, (size_t)h.catalog_stored);
        h.size = b->size;
    }
    free(c.data);
    free(packed);
    if (rc != 0) return -1;
    out_flush(b);
    if (!b->io_errno && pwrite(b->fd, &h, sizeof h, 0) != (ssize_t)sizeof h) b->io_errno = errno ? errno : ENOSPC;
    return b->io_errno ? -1 : 0;
}

static void builder_free(builder *b)
{
    for (size_t i = 0; i < b->lane_count; i++) {
        lane_build *l = &b->lanes[i];
        for (uint32_t d = 0; d < l->rec.depths; d++)
            for (unsigned k = 0; k < TT_LOD_MAX_LEVELS; k++) {
                free(l->depths[d].level[k].v);
                free(l->depths[d].level[k].blocks);
            }
        for (uint32_t d = 0; d < l->rec.depths; d++) {
            free(l->depths[d].crossing.v);
            free(l->depths[d].crossing.blocks);
        }
        free(l->chunks);
        free(l->sums);
        free(l->depths);
        lod_tree_free(&l->tree);
        free(l->params);
        free(l->marks);
    }
    for (size_t i = 0; i < b->track_count; i++)
        for (unsigned k = 0; k < TT_LOD_MAX_LEVELS; k++) free(b->tracks[i].level[k].v);
    free(b->lanes);
    free(b->tracks);
    free(b->regions);
    free(b->region_by_name);
    free(b->problems);
    free(b->merged);
    free(b->objects);
    free(b->stack);
    free(b->strings.data);
    free(b->strings.slots);
    free(b->out);
    free(b->small);
    free(b->raw);
    free(b->packed);
    free(b->cursor);
    free(b->depth_sum);
    if (b->scratch) fclose(b->scratch);
    tt_compress_ctx_free(b->zctx);
}

/* Builds the image into b->fd. -1 with err set when the trace cannot be read
 * or memory runs out; -1 with b->io_errno set when the file cannot be
 * written. */
static int build(builder *b, const char *experiment_dir, uint64_t signature, uint64_t trace_bytes, tt_error *err)
{
    b->out = malloc(LOD_OUT_BUFFER);
    b->raw = malloc(TT_LOD_BLOCK_BYTES);
    b->packed = malloc(tt_compress_bound(TT_LOD_BLOCK_BYTES));
    b->cursor = malloc(sizeof *b->cursor);
    b->scratch = tmpfile();
    if (!b->scratch) return tt_fail_errno(err, "cannot make a temporary file for the index of %s", experiment_dir);
    b->zctx = tt_compress_ctx_new(trace_bytes <= LOD_SMALL_TRACE ? LOD_CATALOG_LEVEL : LOD_ZSTD_LEVEL);
    if (!b->out || !b->raw || !b->packed || !b->cursor)
        return tt_fail(err, "out of memory building the index of %s", experiment_dir);
    lod_header placeholder = {0}; /* the header goes in last */
    out_put(b, &placeholder, sizeof placeholder);
    tt_trace *t;
    if (tt_trace_open(experiment_dir, &t, err) != 0) return -1;
    b->begin = UINT64_MAX;
    /* The empty string first: offset 0 stands for "none" in the records. */
    uint32_t empty;
    int rc = blob_add(&b->strings, "", 0, &empty);
    for (size_t i = 0; rc == 0 && i < tt_trace_problem_count(t); i++) rc = add_problem(b, tt_trace_problem(t, i, NULL));
    for (size_t i = 0; rc == 0 && i < tt_trace_process_count(t); i++) {
        const tt_process *p = tt_trace_process(t, i);
        uint32_t name;
        rc = blob_add_str(&b->strings, p->name, &name);
        if (rc == 0) rc = read_process(b, t, p, (uint32_t)i, name);
    }
    tt_trace_close(t);
    if (rc == 0) rc = make_object_tracks(b);
    if (b->begin > b->end) b->begin = b->end = 0;
    if (rc == 0) rc = flush_all(b, 1);
    if (rc == 0) rc = make_levels(b);
    if (rc == 0) rc = write_records(b, signature);
    if (rc != 0 && !b->io_errno) return tt_fail(err, "out of memory building the index of %s", experiment_dir);
    return rc;
}

/* The whole file at fd, read into memory: 0, or -1 when memory runs out or
 * it cannot be read. */
static int read_image(int fd, uint64_t size, uint8_t **image)
{
    uint8_t *data = malloc(size ? size : 1);
    if (!data) return -1;
    for (uint64_t done = 0; done < size;) {
        ssize_t n = pread(fd, data + done, size - done, (off_t)done);
        if (n <= 0) {
            free(data);
            return -1;
        }
        done += (uint64_t)n;
    }
    *image = data;
    return 0;
}

int tt_lod_build_image(const char *experiment_dir, uint64_t signature, uint64_t trace_bytes, const char *path,
                       const tt_lod_progress *progress, uint8_t **image, size_t *size, tt_error *cache_problem,
                       tt_error *err)
{
    *image = NULL;
    *size = 0;
    /* Opened first, so that an experiment that cannot be written is known
     * before the work. Without it the image is built in a temporary file
     * and read into memory. */
    int fd = path ? tt_open_output(AT_FDCWD, path, O_RDWR) : -1;
    if (path && fd < 0) tt_fail(cache_problem, "cannot write %s: %s", path, tt_output_problem(errno));
    FILE *temp = fd < 0 ? tmpfile() : NULL;
    if (fd < 0 && !temp) return tt_fail_errno(err, "cannot make a temporary file for the index of %s", experiment_dir);
    builder b;
    memset(&b, 0, sizeof b);
    b.progress = progress;
    b.fd = temp ? fileno(temp) : fd;
    int rc = build(&b, experiment_dir, signature, trace_bytes, err);
    int io_errno = b.io_errno;
    uint64_t built = b.size;
    builder_free(&b);
    if (rc == 0 && temp) {
        if (read_image(fileno(temp), built, image) != 0)
            rc = tt_fail(err, "out of memory building the index of %s", experiment_dir);
        *size = (size_t)built;
    } else if (rc != 0 && io_errno) {
        errno = io_errno;
        if (temp) {
            rc = tt_fail_errno(err, "cannot write a temporary file for the index of %s", experiment_dir);
        } else {
            /* The experiment's disk is full, say: the index is kept in memory instead. */
            tt_fail_errno(cache_problem, "cannot write %s", path);
            close(fd);
            remove(path);
            return tt_lod_build_image(experiment_dir, signature, trace_bytes, NULL, progress, image, size,
                                      cache_problem, err);
        }
    }
    if (temp) fclose(temp);
    if (fd >= 0) {
        close(fd);
        if (rc != 0) remove(path);
    }
    return rc;
}

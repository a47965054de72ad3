/* lod.c -- opening the level-of-detail index (lod.h): the cache file, its
 * checks, and what the index describes. Building is lod_build.c's,
 * queries are lod_query.c's.
 */
#define _GNU_SOURCE
#include "lod.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"
#include "format.h"
#include "hash.h"
#include "lod_file.h"

/* Blocks of spans decompressed, kept for the queries that follow: a view
 * reads a block or two per depth where it starts, and the next view (a pan,
 * a zoom) mostly the same ones. The least recently used goes first. */
#define LOD_CACHED_BLOCKS 64
typedef struct cached_block {
    const lod_block *block; /* NULL: none yet */
    uint64_t used;
    uint8_t *raw; /* block->raw bytes */
} cached_block;

struct tt_lod {
    const uint8_t *image; /* the file */
    size_t size;
    int mapped;       /* 1: mmap'd from the cache file; 0: malloc'd */
    uint8_t *catalog; /* decoded (lod_file.h) */
    size_t catalog_size;
    const lod_header *h;
    const lod_region_rec *regions;
    const lod_lane_rec *lanes;
    const lod_track_rec *tracks;
    const uint32_t *problems;
    const tt_lod_objects *objects;
    const char *strings;
    tt_error cache_problem;
    int cache_failed;
    lod_trace *trace;            /* level 0's calls, read from the trace (lod_trace.c) */
    pthread_mutex_t blocks_lock; /* queries run in any number of threads */
    cached_block blocks[LOD_CACHED_BLOCKS];
    uint64_t blocks_used;
};

/* ---- the signature of the trace: names, sizes and times of its files ---- */

/* Adds what identifies the files under directory `dir` (and its
 * subdirectories, one level down) to *sum: their names relative to the
 * trace directory (`rel`), sizes and times. The order of the entries does
 * not matter, and neither does where the experiment is. */
static void sign_directory(const char *dir, const char *rel, uint64_t *sum, uint64_t *bytes, int depth)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[4096], name[512];
        struct stat st;
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= sizeof path ||
            (size_t)snprintf(name, sizeof name, "%s/%s", rel, e->d_name) >= sizeof name || stat(path, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            if (depth == 0) sign_directory(path, name, sum, bytes, 1);
            continue;
        }
        struct {
            uint64_t size, mtime_sec, mtime_nsec, name_hash;
        } key = {(uint64_t)st.st_size, (uint64_t)st.st_mtim.tv_sec, (uint64_t)st.st_mtim.tv_nsec,
                 XXH3_64bits(name, strlen(name))};
        *sum += XXH3_64bits(&key, sizeof key);
        *bytes += (uint64_t)st.st_size;
    }
    closedir(d);
}

/* The signature of the trace, and *bytes: the size of its files. */
static uint64_t trace_signature(const char *experiment_dir, uint64_t *bytes)
{
    char trace_dir[4096];
    snprintf(trace_dir, sizeof trace_dir, "%s/trace", experiment_dir);
    uint64_t sum = LOD_VERSION;
    *bytes = 0;
    sign_directory(trace_dir, "trace", &sum, bytes, 0);
    return sum;
}

/* The index of a trace below this size that would take more than half of
 * it is not cached: the region names and file paths a few hundred events
 * bring take that much, and such an index builds in a few ms (a 66 KiB
 * trace: 2.9 ms, against 0.3 ms to load it; bench/README.md). */
#define LOD_UNCACHED_BELOW (64u << 10)

/* ---- checking an image ---- */

/* 1 when [off, off + count * size) lies within the catalog, 8-byte aligned. */
static int fits(const tt_lod *x, uint64_t off, uint64_t count, size_t size)
{
    return off % 8 == 0 && off <= x->catalog_size && count <= (x->catalog_size - off) / size;
}

/* A catalog decodes to at most this many times its stored size (a real
 * one to some 15): a damaged header does not make its loader ask for
 * gigabytes. */
#define LOD_CATALOG_RATIO 4096u

/* Decodes the catalog of the image: 1 when it decodes. */
static int decode_catalog(tt_lod *x)
{
    const lod_header *h = x->h;
    if (h->catalog_off > x->size || h->catalog_stored != x->size - h->catalog_off || h->catalog_codec > TT_CODEC_ZSTD ||
        (h->catalog_codec == TT_CODEC_NONE && h->catalog_raw != h->catalog_stored) ||
        h->catalog_raw > LOD_CATALOG_RATIO * h->catalog_stored)
        return 0;
    x->catalog = malloc(h->catalog_raw ? h->catalog_raw : 1);
    if (!x->catalog) return 0;
    const char *why;
    struct tt_chunk_header c = {
        .stored_size = (uint32_t)h->catalog_stored, .raw_size = h->catalog_raw, .codec = (uint8_t)h->catalog_codec};
    if (h->catalog_stored > UINT32_MAX || tt_payload_decode(&c, x->image + h->catalog_off, x->catalog, &why) != 0)
        return 0;
    x->catalog_size = h->catalog_raw;
    return lod_columns(x->catalog, x->catalog_size, h, 0) == 0;
}

static int string_ok(const tt_lod *x, uint32_t offset) { return offset < x->h->strings_size; }

/* Checks every offset and count of the image against its size, and sets
 * the record pointers: 1 when the image can be used. */
static int check_image(tt_lod *x, uint64_t signature)
{
    const lod_header *h = (const lod_header *)x->image;
    if (x->size < sizeof *h || memcmp(h->magic, LOD_MAGIC, sizeof h->magic) != 0 || h->version != LOD_VERSION ||
        h->signature != signature || h->size != x->size || h->levels == 0 || h->levels > TT_LOD_MAX_LEVELS)
        return 0;
    x->h = h;
    if (!decode_catalog(x)) return 0;
    if (h->strings_off > x->catalog_size || h->strings_size != x->catalog_size - h->strings_off ||
        h->strings_size == 0 || x->catalog[x->catalog_size - 1] != '\0')
        return 0;
    x->strings = (const char *)x->catalog + h->strings_off;
    if (!fits(x, h->regions_off, h->region_count, sizeof(lod_region_rec)) ||
        !fits(x, h->lanes_off, h->lane_count, sizeof(lod_lane_rec)) ||
        !fits(x, h->tracks_off, h->track_count, sizeof(lod_track_rec)) ||
        (h->problems_off % 4 != 0 || h->problems_off > x->catalog_size ||
         h->problem_count > (x->catalog_size - h->problems_off) / 4))
        return 0;
    x->regions = (const lod_region_rec *)(x->catalog + h->regions_off);
    x->lanes = (const lod_lane_rec *)(x->catalog + h->lanes_off);
    x->tracks = (const lod_track_rec *)(x->catalog + h->tracks_off);
    x->problems = (const uint32_t *)(x->catalog + h->problems_off);
    for (uint32_t i = 0; i < h->problem_count; i++)
        if (!string_ok(x, x->problems[i])) return 0;
    for (uint32_t i = 0; i < h->region_count; i++)
        if (!string_ok(x, x->regions[i].name) || !string_ok(x, x->regions[i].file)) return 0;
    for (uint32_t i = 0; i < h->lane_count; i++) {
        const lod_lane_rec *l = &x->lanes[i];
        if (!string_ok(x, l->name) || !string_ok(x, l->process) ||
            !fits(x, l->refs_off, (uint64_t)l->depths * h->levels, sizeof(lod_ref)) ||
            !fits(x, l->params_off, l->param_count, sizeof(tt_lod_param)) ||
            !fits(x, l->marks_off, l->mark_count, sizeof(tt_lod_mark)) ||
            !fits(x, l->tree_off, l->tree_count, sizeof(lod_tree_rec)))
            return 0;
        const lod_ref *refs = (const lod_ref *)(x->catalog + l->refs_off);
        /* The spans themselves are not read here, so that a large index
         * loads in the time its metadata takes: a cursor checks each span
         * it decodes (tt_lod_peek). */
        for (uint64_t r = 0; r < (uint64_t)l->depths * h->levels; r++)
            if ((refs[r].off != LOD_REF_TRACE || refs[r].count != 0 || r % h->levels == 0) &&
                !fits(x, refs[r].off, refs[r].count, sizeof(lod_block)))
                return 0;
        /* Chunks in the stream's order: their times never go back (a cursor
         * finds one by binary search). The calls open at a chunk's start all
         * end at a depth the lane has. */
        if (!fits(x, l->chunks_off, l->chunk_count, sizeof(lod_chunk_rec))) return 0;
        const lod_chunk_rec *ch = (const lod_chunk_rec *)(x->catalog + l->chunks_off);
        if (!fits(x, l->sums_off, l->sum_count, sizeof(uint64_t))) return 0;
        for (uint64_t j = 0; j < l->chunk_count; j++)
            if (ch[j].first > ch[j].last || (j && ch[j].first < ch[j - 1].last) || ch[j].low > ch[j].high ||
                ch[j].high > l->depths || ch[j].depth > l->depths || ch[j].sums_at > l->sum_count ||
                ch[j].high - ch[j].low > l->sum_count - ch[j].sums_at)
                return 0;
        const tt_lod_param *p = (const tt_lod_param *)(x->catalog + l->params_off);
        for (uint64_t j = 0; j < l->param_count; j++)
            if (!string_ok(x, p[j].name) || !string_ok(x, p[j].text)) return 0;
        const tt_lod_mark *m = (const tt_lod_mark *)(x->catalog + l->marks_off);
        for (uint64_t j = 0; j < l->mark_count; j++)
            if (!string_ok(x, m[j].name)) return 0;
        /* Parents before their children: a merge of trees finds a node's parent made. */
        const lod_tree_rec *t = (const lod_tree_rec *)(x->catalog + l->tree_off);
        for (uint64_t j = 0; j < l->tree_count; j++)
            if ((t[j].parent != UINT32_MAX && t[j].parent >= j) || t[j].region >= h->region_count) return 0;
    }
    for (uint32_t i = 0; i < h->track_count; i++) {
        const lod_track_rec *t = &x->tracks[i];
        if (!string_ok(x, t->name) || t->lane >= h->lane_count || !fits(x, t->refs_off, h->levels, sizeof(lod_ref)))
            return 0;
        const lod_ref *refs = (const lod_ref *)(x->catalog + t->refs_off);
        for (unsigned k = 0; k < h->levels; k++)
            if (!fits(x, refs[k].off, refs[k].count, sizeof(tt_lod_sample))) return 0;
    }
    if (!fits(x, h->objects_off, h->object_count, sizeof(tt_lod_objects))) return 0;
    x->objects = (const tt_lod_objects *)(x->catalog + h->objects_off);
    for (uint64_t i = 0; i < h->object_count; i++) {
        const tt_lod_objects *o = &x->objects[i];
        if (o->track >= h->track_count || x->tracks[o->track].kind != TT_LOD_TRACK_OBJECTS ||
            (o->region != UINT32_MAX && o->region >= h->region_count) || (i && o->time < x->objects[i - 1].time))
            return 0;
    }
    return 1;
}

/* Maps the cache file at `path`: 1 when it is there and good. */
static int load_file(tt_lod *x, const char *path, uint64_t signature)
{
    struct stat st;
    int fd = tt_open_regular(path, &st);
    if (fd < 0) return 0;
    void *map = MAP_FAILED;
    if (st.st_size > 0) map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return 0;
    x->image = map;
    x->size = (size_t)st.st_size;
    x->mapped = 1;
    if (check_image(x, signature)) return 1;
    munmap(map, x->size);
    x->image = NULL;
    free(x->catalog);
    x->catalog = NULL;
    return 0;
}

int tt_lod_open(const char *experiment_dir, tt_lod **out, int *built, const tt_lod_progress *progress, tt_error *err)
{
    *out = NULL;
    tt_lod *x = calloc(1, sizeof *x);
    if (x) pthread_mutex_init(&x->blocks_lock, NULL);
    size_t len = strlen(experiment_dir);
    char *path = malloc(len + sizeof "/" TT_LOD_FILE + 32);
    if (!x || !path) {
        free(x);
        free(path);
        return tt_fail(err, "out of memory");
    }
    sprintf(path, "%s/%s", experiment_dir, TT_LOD_FILE);
    if (!(x->trace = lod_trace_new(experiment_dir))) {
        tt_lod_close(x);
        free(path);
        return tt_fail(err, "out of memory");
    }
    uint64_t trace_bytes;
    uint64_t signature = trace_signature(experiment_dir, &trace_bytes);
    int was_built = 0;
    if (!load_file(x, path, signature)) {
        char *temp = malloc(len + sizeof "/" TT_LOD_FILE + 32);
        if (!temp) {
            free(x);
            free(path);
            return tt_fail(err, "out of memory");
        }
        sprintf(temp, "%s.%ld.tmp", path, (long)getpid());
        uint8_t *image;
        size_t size;
        int rc = tt_lod_build_image(experiment_dir, signature, trace_bytes, temp, progress, &image, &size,
                                    &x->cache_problem, err);
        struct stat st;
        int uncached = rc == 0 && !image && trace_bytes < LOD_UNCACHED_BELOW && stat(temp, &st) == 0 &&
                       (uint64_t)st.st_size * 2 > trace_bytes;
        if (uncached) { /* made again, in memory only (LOD_UNCACHED_BELOW) */
            remove(temp);
            remove(path); /* an older one */
            rc = tt_lod_build_image(experiment_dir, signature, trace_bytes, NULL, progress, &image, &size,
                                    &x->cache_problem, err);
        } else if (rc == 0 && !image) {
            if (rename(temp, path) != 0) {
                tt_fail_errno(&x->cache_problem, "cannot write %s", path);
                remove(temp);
                rc = -1;
            } else if (!load_file(x, path, signature)) {
                tt_fail(&x->cache_problem, "%s changed while it was written", path);
                rc = -1;
            }
            if (rc != 0) /* keep the index in memory instead */
                rc = tt_lod_build_image(experiment_dir, signature, trace_bytes, NULL, progress, &image, &size,
                                        &x->cache_problem, err);
        }
        free(temp);
        if (rc == 0 && image) {
            x->cache_failed = !uncached;
            x->image = image;
            x->size = size;
            if (!check_image(x, signature)) rc = tt_fail(err, "internal error: the index built is inconsistent");
        }
        if (rc != 0) {
            tt_lod_close(x);
            free(path);
            return -1;
        }
        was_built = 1;
    }
    free(path);
    if (built) *built = was_built;
    *out = x;
    return 0;
}

void tt_lod_close(tt_lod *x)
{
    if (!x) return;
    for (size_t i = 0; i < LOD_CACHED_BLOCKS; i++) free(x->blocks[i].raw);
    lod_trace_free(x->trace);
    pthread_mutex_destroy(&x->blocks_lock);
    if (x->image && x->mapped)
        munmap((void *)x->image, x->size);
    else
        free((void *)x->image);
    free(x->catalog);
    free(x);
}

lod_trace *lod_trace_of(const tt_lod *x) { return x->trace; }

uint64_t tt_lod_begin(const tt_lod *x) { return x->h->begin; }
uint64_t tt_lod_end(const tt_lod *x) { return x->h->end; }
unsigned tt_lod_levels(const tt_lod *x) { return x->h->levels; }
size_t tt_lod_region_count(const tt_lod *x) { return x->h->region_count; }
size_t tt_lod_lane_count(const tt_lod *x) { return x->h->lane_count; }
size_t tt_lod_track_count(const tt_lod *x) { return x->h->track_count; }
size_t tt_lod_problem_count(const tt_lod *x) { return x->h->problem_count; }
const char *tt_lod_string(const tt_lod *x, uint32_t offset) { return string_ok(x, offset) ? x->strings + offset : ""; }

const char *tt_lod_problem(const tt_lod *x, size_t index)
{
    return index < x->h->problem_count ? x->strings + x->problems[index] : NULL;
}

const char *tt_lod_cache_problem(const tt_lod *x) { return x->cache_failed ? x->cache_problem.message : NULL; }

tt_lod_region_info tt_lod_region(const tt_lod *x, size_t index)
{
    const lod_region_rec *r = &x->regions[index];
    return (tt_lod_region_info){x->strings + r->name, x->strings + r->file, r->line, (uint8_t)r->kind};
}

tt_lod_lane_info tt_lod_lane(const tt_lod *x, size_t index)
{
    const lod_lane_rec *l = &x->lanes[index];
    return (tt_lod_lane_info){
        .name = x->strings + l->name,
        .process = x->strings + l->process,
        .pid = l->pid,
        .native_tid = l->native_tid,
        .stream = l->stream,
        .depths = l->depths,
        .begin = l->begin,
        .end = l->end,
        .calls = l->calls,
        .params = (uint32_t)l->param_count,
        .marks = (uint32_t)l->mark_count,
    };
}

tt_lod_track_info tt_lod_track(const tt_lod *x, size_t index)
{
    const lod_track_rec *t = &x->tracks[index];
    return (tt_lod_track_info){x->strings + t->name, t->lane, t->kind, t->samples, t->min, t->max, t->size};
}

const tt_lod_objects *tt_lod_object_records(const tt_lod *x, size_t *count)
{
    *count = (size_t)x->h->object_count;
    return x->objects;
}

/* ---- reading spans ---- */

static const lod_ref *span_ref(const tt_lod *x, size_t lane, uint32_t depth, unsigned level)
{
    if (lane >= x->h->lane_count || depth >= x->lanes[lane].depths || level >= x->h->levels) return NULL;
    return (const lod_ref *)(x->catalog + x->lanes[lane].refs_off) + (size_t)depth * x->h->levels + level;
}

/* Starts c on block b, its bytes decoded in c->raw: 0 when they do not fit. */
static int start_block(tt_lod_cursor *c, const lod_block *b)
{
    /* Gaps and durations take up to 8 bytes, regions and calls up to 4; the
     * columns fill the rest exactly. All checked before any is used. */
    static const uint8_t most[4] = {8, 8, 4, 4};
    size_t at = 4;
    for (int k = 0; k < 4; k++) {
        if (c->raw[k] > most[k]) return 0;
        c->width[k] = c->raw[k];
        c->col[k] = c->raw + at;
        at += (size_t)c->width[k] * b->spans;
    }
    if (at != b->raw) return 0;
    c->spans = b->spans;
    c->next = 0;
    c->prev_end = b->start;
    return 1;
}

int lod_block_decode(tt_lod_cursor *c, const lod_block *b, const uint8_t *stored)
{
    const char *why;
    struct tt_chunk_header h = {.stored_size = b->stored, .raw_size = b->raw, .codec = (uint8_t)b->codec};
    h.codec = (uint8_t)(b->codec & ~LOD_BLOCK_IN_CATALOG);
    if (b->raw < 4 || b->raw > TT_LOD_BLOCK_BYTES || (b->codec & ~LOD_BLOCK_IN_CATALOG) > TT_CODEC_ZSTD ||
        (h.codec == TT_CODEC_NONE && b->raw != b->stored) ||
        ((b->codec & LOD_BLOCK_IN_CATALOG) && h.codec != TT_CODEC_NONE) || b->spans == 0 ||
        b->spans > TT_LOD_BLOCK_SPANS || tt_payload_decode(&h, stored, c->raw, &why) != 0)
        return 0;
    return start_block(c, b);
}

/* Decompresses block c->block (or takes it from the blocks kept) and
 * starts decoding it; 0 when there is none (or it is damaged). */
static int load_block(tt_lod_cursor *c)
{
    if (c->block >= c->block_count) return 0;
    const lod_block *b = &c->blocks[c->block];
    tt_lod *x = (tt_lod *)c->x; /* its kept blocks only */
    if (b->codec & LOD_BLOCK_IN_CATALOG)
        return b->data <= x->catalog_size && b->stored <= x->catalog_size - b->data &&
               lod_block_decode(c, b, x->catalog + b->data);
    pthread_mutex_lock(&x->blocks_lock);
    cached_block *kept = NULL, *oldest = &x->blocks[0];
    for (size_t i = 0; i < LOD_CACHED_BLOCKS && !kept; i++) {
        if (x->blocks[i].block == b) kept = &x->blocks[i];
        if (x->blocks[i].used < oldest->used) oldest = &x->blocks[i];
    }
    if (kept) {
        kept->used = ++x->blocks_used;
        memcpy(c->raw, kept->raw, b->raw);
    }
    pthread_mutex_unlock(&x->blocks_lock);
    if (kept) return start_block(c, b);
    if (b->data > x->size || b->stored > x->size - b->data || !lod_block_decode(c, b, x->image + b->data)) return 0;
    pthread_mutex_lock(&x->blocks_lock);
    if (!oldest->raw) oldest->raw = malloc(TT_LOD_BLOCK_BYTES);
    if (oldest->raw) {
        memcpy(oldest->raw, c->raw, b->raw);
        oldest->block = b;
        oldest->used = ++x->blocks_used;
    }
    pthread_mutex_unlock(&x->blocks_lock);
    return 1;
}

static const tt_lod_span *block_peek(tt_lod_cursor *c);
static const tt_lod_span *local_peek(tt_lod_cursor *c);

/* Places c's blocks at their first span that ends after t. */
static void seek_blocks(tt_lod_cursor *c, const lod_ref *ref, uint64_t t)
{
    c->blocks = (const lod_block *)(c->x->catalog + ref->off);
    c->block_count = (size_t)ref->count;
    /* The first block that ends after t; then its first span that does. */
    size_t lo = 0, hi = c->block_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->blocks[mid].end > t)
            hi = mid;
        else
            lo = mid + 1;
    }
    c->block = lo;
    if (!load_block(c)) {
        c->block = c->block_count;
        return;
    }
    const tt_lod_span *s;
    while ((s = block_peek(c)) && s->end <= t) c->have_block = 0;
}

size_t lod_chunk_after(const lod_chunk_rec *chunks, size_t n, uint64_t t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (chunks[mid].last > t)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

static void seek(const tt_lod *x, size_t lane, uint32_t depth, unsigned level, uint64_t t0, uint64_t t1,
                 uint64_t skip_from, uint64_t skip_to, tt_lod_cursor *c)
{
    c->x = x;
    c->region_count = x->h->region_count;
    c->blocks = NULL;
    c->block_count = c->block = 0;
    c->spans = c->next = 0;
    c->have = c->have_block = c->taken = 0;
    c->until = t1;
    c->trace = 0;
    c->chunk = c->chunk_count = 0;
    c->local_count = c->local_next = 0;
    c->chunk_done = 0;
    c->skip_from = skip_from;
    c->skip_to = skip_to;
    const lod_ref *ref = span_ref(x, lane, depth, level);
    if (!ref) return;
    if (level > 0 && ref->off == LOD_REF_TRACE) ref = span_ref(x, lane, depth, 0);
    c->trace = ref == span_ref(x, lane, depth, 0);
    seek_blocks(c, ref, t0);
    if (!c->trace) return;
    /* The chunks: from the first whose last event is after t0. */
    const lod_chunk_rec *chunks = lod_lane_chunks(x, lane, &c->chunk_count);
    c->lane = lane;
    c->depth = depth;
    c->chunk = lod_chunk_after(chunks, c->chunk_count, t0);
    c->chunk_from = 0;
    const tt_lod_span *s;
    while ((s = local_peek(c)) && s->end <= t0) c->local_next++;
}

void tt_lod_seek(const tt_lod *x, size_t lane, uint32_t depth, unsigned level, uint64_t t0, uint64_t t1,
                 tt_lod_cursor *c)
{
    seek(x, lane, depth, level, t0, t1, 1, 0, c);
}

uint64_t lod_seek_callees(const tt_lod *x, size_t lane, uint32_t depth, uint64_t start, uint64_t end, tt_lod_cursor *c)
{
    seek(x, lane, depth, 0, start, end, start, end, c);
    size_t n;
    const lod_chunk_rec *chunks = lod_lane_chunks(x, lane, &n);
    const uint64_t *sums = lod_lane_sums(x, lane);
    uint64_t summed = 0;
    /* (From the first chunk in it: c has read on past those it skips.) */
    for (size_t i = lod_chunk_after(chunks, n, start); i < n && chunks[i].first < end; i++)
        if (chunks[i].first >= start && chunks[i].last <= end && depth >= chunks[i].low && depth < chunks[i].high)
            summed += sums[chunks[i].sums_at + depth - chunks[i].low];
    return summed;
}

/* Value i of a column of `width`-byte values in planes of n bytes (byte
 * 0 of every value, then byte 1, ...: lod_file.h). */
static inline uint64_t column_value(const uint8_t *col, unsigned width, size_t n, size_t i)
{
    uint64_t v = 0;
    for (unsigned k = 0; k < width; k++) v |= (uint64_t)col[k * n + i] << (8 * k);
    return v;
}

/* The next span of the blocks, or NULL. */
static const tt_lod_span *block_peek(tt_lod_cursor *c)
{
    if (c->have_block) return &c->block_span;
    while (c->next >= c->spans) {
        if (c->block >= c->block_count) return NULL;
        c->block++;
        if (!load_block(c)) {
            c->block = c->block_count;
            return NULL;
        }
    }
    size_t n = c->spans, i = c->next;
    uint64_t gap = column_value(c->col[0], c->width[0], n, i), length = column_value(c->col[1], c->width[1], n, i),
             region = column_value(c->col[2], c->width[2], n, i), calls = column_value(c->col[3], c->width[3], n, i);
    if (region >= c->region_count || calls >= UINT32_MAX || gap > UINT64_MAX - c->prev_end ||
        length > UINT64_MAX - c->prev_end - gap) {
        c->block = c->block_count; /* damage: the reading ends here */
        c->spans = 0;
        return NULL;
    }
    uint64_t start = c->prev_end + gap;
    c->block_span = (tt_lod_span){start, start + length, (uint32_t)region, (uint32_t)calls + 1};
    c->prev_end = start + length;
    c->next++;
    c->have_block = 1;
    return &c->block_span;
}

/* The next call of the chunks held whole, or NULL; a chunk is read only
 * once the calls before it are, and only when it starts before c->until
 * and holds calls at c's depth. */
static const tt_lod_span *local_peek(tt_lod_cursor *c)
{
    size_t n;
    const lod_chunk_rec *chunks = lod_lane_chunks(c->x, c->lane, &n);
    while (c->local_next >= c->local_count) {
        if (c->chunk_done) {
            c->chunk++;
            c->chunk_from = 0;
            c->chunk_done = 0;
        }
        if (c->chunk >= c->chunk_count || chunks[c->chunk].first >= c->until) return NULL;
        const lod_chunk_rec *ch = &chunks[c->chunk];
        int skipped = ch->first >= c->skip_from && ch->last <= c->skip_to;
        size_t got = !skipped && c->depth >= ch->low && c->depth < ch->high
                         ? lod_chunk_spans(c->x, c->lane, c->chunk, c->depth, c->chunk_from, c->local,
                                           TT_LOD_CHUNK_SPANS)
                         : 0;
        c->local_count = (uint32_t)got;
        c->local_next = 0;
        c->chunk_from += got;
        c->chunk_done = got < TT_LOD_CHUNK_SPANS;
    }
    return &c->local[c->local_next];
}

const tt_lod_span *tt_lod_peek(tt_lod_cursor *c)
{
    if (c->have) return &c->span;
    if (c->taken == 1) c->have_block = 0;
    if (c->taken == 2) c->local_next++;
    c->taken = 0;
    const tt_lod_span *a = block_peek(c), *b = c->trace ? local_peek(c) : NULL;
    const tt_lod_span *s = b && (!a || b->start < a->start) ? b : a;
    if (!s || s->start >= c->until) return NULL;
    c->taken = s == a ? 1 : 2;
    c->span = *s;
    c->have = 1;
    return &c->span;
}

const char *tt_lod_read_problem(const tt_lod *x) { return lod_trace_problem(x->trace); }

const tt_lod_param *tt_lod_params(const tt_lod *x, size_t lane, size_t *count)
{
    *count = lane < x->h->lane_count ? (size_t)x->lanes[lane].param_count : 0;
    return *count ? (const tt_lod_param *)(x->catalog + x->lanes[lane].params_off) : NULL;
}

const tt_lod_mark *tt_lod_marks(const tt_lod *x, size_t lane, size_t *count)
{
    *count = lane < x->h->lane_count ? (size_t)x->lanes[lane].mark_count : 0;
    return *count ? (const tt_lod_mark *)(x->catalog + x->lanes[lane].marks_off) : NULL;
}

const tt_lod_sample *tt_lod_samples(const tt_lod *x, size_t track, unsigned level, size_t *count)
{
    *count = 0;
    if (track >= x->h->track_count || level >= x->h->levels) return NULL;
    const lod_ref *ref = (const lod_ref *)(x->catalog + x->tracks[track].refs_off) + level;
    *count = (size_t)ref->count;
    return (const tt_lod_sample *)(x->catalog + ref->off);
}

const lod_chunk_rec *lod_lane_chunks(const tt_lod *x, size_t lane, size_t *count)
{
    *count = lane < x->h->lane_count ? (size_t)x->lanes[lane].chunk_count : 0;
    return *count ? (const lod_chunk_rec *)(x->catalog + x->lanes[lane].chunks_off) : NULL;
}

const uint64_t *lod_lane_sums(const tt_lod *x, size_t lane)
{
    return lane < x->h->lane_count && x->lanes[lane].sum_count
               ? (const uint64_t *)(x->catalog + x->lanes[lane].sums_off)
               : NULL;
}

uint32_t lod_lane_process(const tt_lod *x, size_t lane) { return x->lanes[lane].trace_process; }

const lod_tree_rec *lod_lane_tree(const tt_lod *x, size_t lane, size_t *count)
{
    *count = lane < x->h->lane_count ? (size_t)x->lanes[lane].tree_count : 0;
    return *count ? (const lod_tree_rec *)(x->catalog + x->lanes[lane].tree_off) : NULL;
}

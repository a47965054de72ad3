/* lod_build.c -- building the level-of-detail index (lod.h) from a trace,
 * and writing its image (lod_file.h).
 *
 * One pass through the reader per stream: a stack of the open calls turns
 * each LEAVE into a span at the depth it closes, appended to that depth's
 * level 0 in start order (calls at one depth never overlap, so they close in
 * the order they start). Parameters, counters and marks are appended to the
 * lane as they come, OBJECTS records to the builder's list. Once every
 * stream is read, the objects tracks are made from that list (objects.c
 * below), and, the trace's span known, each level is derived from the one
 * below it (merge_spans, merge_samples), and the whole is written out in
 * one go.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "lod_file.h"
#include "reader.h"

#define NONE UINT32_MAX

/* ---- growable vectors ---- */

/* The spans of one depth at one level: built as records (v), then encoded
 * into blocks and their bytes (lod_file.h) once the levels above are made. */
typedef struct span_vec {
    tt_lod_span *v;
    size_t n, cap;
    int same; /* this level equals the one below it: shares its array */
    lod_block *blocks; /* data: offsets into bytes until written */
    size_t block_count, block_cap;
    uint8_t *bytes;
    size_t size, bytes_cap;
    uint64_t data_off; /* where the bytes go in the image */
} span_vec;

typedef struct sample_vec {
    tt_lod_sample *v;
    size_t n, cap;
    int same;
} sample_vec;

typedef struct depth_levels {
    span_vec level[TT_LOD_MAX_LEVELS];
} depth_levels;

typedef struct track_build {
    lod_track_rec rec;
    sample_vec level[TT_LOD_MAX_LEVELS];
} track_build;

typedef struct lane_build {
    lod_lane_rec rec;
    depth_levels *depths;
    size_t depth_cap;
    tt_lod_param *params;
    size_t param_cap;
    tt_lod_mark *marks;
    size_t mark_cap;
} lane_build;

typedef struct frame {
    uint64_t start;
    uint32_t region;
} frame;

/* An OBJECTS record as read, until its track is known. */
typedef struct object_read {
    uint64_t time;
    uint32_t lane;   /* the first lane of its process */
    uint32_t type;   /* string offset */
    uint32_t region; /* index region, or NONE */
    uint32_t size;
    uint64_t created, destroyed;
    uint64_t seq;    /* order of reading, to sort stably */
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
} builder;

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
            size_t j = hash_bytes(b->strings.data + b->regions[i].name,
                                  strlen(b->strings.data + b->regions[i].name)) & (size - 1);
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

static int push_span(span_vec *v, tt_lod_span s)
{
    if (TT_RESERVE(v->v, v->cap, v->n + 1) != 0) return -1;
    v->v[v->n++] = s;
    return 0;
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
    object_read o = {.time = ev->time, .lane = b->process_lane, .region = NONE, .created = ev->created,
                     .destroyed = ev->destroyed, .seq = b->object_count,
                     .size = ev->bytes > UINT32_MAX ? UINT32_MAX : (uint32_t)ev->bytes};
    if (ev->region != UINT32_MAX && (o.region = region_of(b, p, ev->region)) == NONE) return -1;
    if (blob_add_str(&b->strings, p->strings[ev->name], &o.type) != 0 ||
        TT_RESERVE(b->objects, b->object_cap, b->object_count + 1) != 0)
        return -1;
    b->objects[b->object_count++] = o;
    return 0;
}

/* Reads one stream into lane `lane`. Fails only when memory runs out. */
static int read_lane(builder *b, const tt_process *p, uint32_t lane, tt_cursor *c)
{
    lane_build *l = &b->lanes[lane];
    size_t depth = 0;
    tt_event ev;
    int first = 1;
    while (tt_cursor_next(c, &ev)) {
        if (++b->events % TT_LOD_PROGRESS_EVENTS == 0 && b->progress) b->progress->read(b->progress->ctx, b->events);
        if (first) {
            l->rec.begin = ev.time;
            first = 0;
        }
        l->rec.end = ev.time;
        switch (ev.kind) {
        case TT_EV_ENTER: {
            uint32_t region = region_of(b, p, ev.region);
            if (region == NONE || TT_RESERVE(b->stack, b->stack_cap, depth + 1) != 0) return -1;
            b->stack[depth++] = (frame){ev.time, region};
            break;
        }
        case TT_EV_LEAVE: {
            frame f = b->stack[--depth]; /* the reader guarantees well nesting */
            if (depth >= l->rec.depths) {
                if (TT_RESERVE(l->depths, l->depth_cap, depth + 1) != 0) return -1;
                memset(l->depths + l->rec.depths, 0, (depth + 1 - l->rec.depths) * sizeof *l->depths);
                l->rec.depths = (uint32_t)depth + 1;
            }
            if (push_span(&l->depths[depth].level[0], (tt_lod_span){f.start, ev.time, f.region, 1}) != 0) return -1;
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
    if (!first) {
        if (l->rec.begin < b->begin) b->begin = l->rec.begin;
        if (l->rec.end > b->end) b->end = l->rec.end;
    }
    return 0;
}

static int read_process(builder *b, const tt_trace *t, const tt_process *p, uint32_t process_name)
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
        l->rec.pid = p->pid;
        l->rec.native_tid = th->native_tid;
        l->rec.stream = (uint32_t)s;
        int rc = blob_add_str(&b->strings, th->name, &l->rec.name);
        if (rc == 0) rc = read_lane(b, p, lane, c);
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
#define LOD_LEVEL_SHRINK 4

uint64_t tt_lod_grain(unsigned level) { return level == 0 ? 0 : (uint64_t)1 << (5 + level); }

/* Level k from level k-1 (see lod.h). A block is at most 8 grains long, so
 * that what a thread does over time still shows at coarse levels. */
static int merge_spans(const span_vec *in, span_vec *out, uint64_t grain)
{
    tt_lod_span cur = {0};
    uint64_t longest = 0;
    int open = 0;
    for (size_t i = 0; i < in->n; i++) {
        tt_lod_span s = in->v[i];
        uint64_t len = s.end - s.start;
        if (len >= grain) {
            if (open && push_span(out, cur) != 0) return -1;
            open = 0;
            if (push_span(out, s) != 0) return -1;
        } else if (open && s.start - cur.end < grain && s.end - cur.start <= 8 * grain) {
            cur.end = s.end;
            cur.calls += s.calls;
            if (len > longest) {
                longest = len;
                cur.region = s.region;
            }
        } else {
            if (open && push_span(out, cur) != 0) return -1;
            cur = s;
            longest = len;
            open = 1;
        }
    }
    return open ? push_span(out, cur) : 0;
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

/* The index is written once and read many times, and its blocks are
 * small: level 3 packs them some 4% tighter than the trace's level 1 at no
 * cost in build time (its bytes to write shrink as much). */
#define LOD_ZSTD_LEVEL 3

/* Encodes v's records into blocks (lod_file.h) and frees them. `raw` is
 * scratch of TT_LOD_BLOCK_BYTES; `zctx` compresses (tt_compress). */
static int encode_spans(span_vec *v, void *zctx, uint8_t *raw)
{
    for (size_t i = 0; i < v->n; i += TT_LOD_BLOCK_SPANS) {
        size_t n = v->n - i < TT_LOD_BLOCK_SPANS ? v->n - i : TT_LOD_BLOCK_SPANS;
        /* The columns one after another: each varint is at most 10 bytes
         * (gaps, durations) or 5 (regions, calls less one). */
        uint8_t *col[4] = {raw + 12, raw + 12 + n * 10, raw + 12 + n * 20, raw + 12 + n * 25}, *p[4];
        memcpy(p, col, sizeof p);
        uint64_t prev_end = v->v[i].start;
        for (size_t j = i; j < i + n; j++) {
            const tt_lod_span *s = &v->v[j];
            p[0] = tt_put_varint(p[0], s->start - prev_end);
            p[1] = tt_put_varint(p[1], s->end - s->start);
            p[2] = tt_put_varint(p[2], s->region);
            p[3] = tt_put_varint(p[3], s->calls - 1);
            prev_end = s->end;
        }
        uint8_t *end = p[0];
        for (int k = 1; k < 4; k++) {
            tt_put_u32(raw + 4 * (k - 1), (uint32_t)(end - raw));
            memmove(end, col[k], (size_t)(p[k] - col[k]));
            end += p[k] - col[k];
        }
        size_t size = (size_t)(end - raw);
        if (TT_RESERVE(v->blocks, v->block_cap, v->block_count + 1) != 0 ||
            TT_RESERVE(v->bytes, v->bytes_cap, v->size + tt_compress_bound(size)) != 0)
            return -1;
        size_t stored = tt_compress(zctx, v->bytes + v->size, tt_compress_bound(size), raw, size);
        if (stored == 0) memcpy(v->bytes + v->size, raw, stored = size);
        v->blocks[v->block_count++] = (lod_block){v->v[i].start, v->v[i + n - 1].end, v->size, (uint32_t)n,
                                                  size == stored ? TT_CODEC_NONE : TT_CODEC_ZSTD, (uint32_t)size,
                                                  (uint32_t)stored};
        v->size += stored;
    }
    free(v->v);
    v->v = NULL;
    v->n = v->cap = 0;
    return 0;
}

static int make_levels(builder *b, void *zctx, uint8_t *raw)
{
    uint64_t span = b->end > b->begin ? b->end - b->begin : 0;
    b->levels = 1;
    while (b->levels < TT_LOD_MAX_LEVELS && tt_lod_grain(b->levels) <= span) b->levels++;
    for (size_t i = 0; i < b->lane_count; i++) {
        lane_build *l = &b->lanes[i];
        for (uint32_t d = 0; d < l->rec.depths; d++) {
            span_vec *level = l->depths[d].level;
            for (unsigned k = 1; k < b->levels; k++) {
                /* A level that would keep more than 1 / LOD_LEVEL_SHRINK
                 * of the last level stored is not stored: reading that one
                 * instead costs at most LOD_LEVEL_SHRINK times as much, and
                 * all levels above 0 together are at most a third of it
                 * (the coarse levels' items are merged ones, which take
                 * more bytes each than calls). */
                const span_vec *below = &level[k - 1];
                while (below->same) below--;
                if (merge_spans(below, &level[k], tt_lod_grain(k)) != 0) return -1;
                if (level[k].n * LOD_LEVEL_SHRINK > below->n) {
                    free(level[k].v);
                    level[k] = (span_vec){.same = 1};
                }
            }
            for (unsigned k = 0; k < b->levels; k++)
                if (!level[k].same && encode_spans(&level[k], zctx, raw) != 0) return -1;
        }
    }
    for (size_t i = 0; i < b->track_count; i++) {
        sample_vec *level = b->tracks[i].level;
        for (unsigned k = 1; k < b->levels; k++) {
            const sample_vec *below = &level[k - 1];
            while (below->same) below--;
            if (merge_samples(below, &level[k], tt_lod_grain(k)) != 0) return -1;
            if (level[k].n * LOD_LEVEL_SHRINK > below->n) {
                free(level[k].v);
                level[k] = (sample_vec){.same = 1};
            }
        }
    }
    return 0;
}

/* ---- the image ---- */

static uint64_t align8(uint64_t n) { return (n + 7) & ~(uint64_t)7; }

/* Where everything goes: the records' offsets are set, and refs (per lane,
 * then per track, as the image holds them) filled. Returns the data's end. */
static uint64_t lay_out(builder *b, lod_header *h, lod_ref *refs)
{
    uint64_t off = sizeof *h;
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
        b->lanes[i].rec.refs_off = refs_off + r * sizeof(lod_ref);
        r += (size_t)b->lanes[i].rec.depths * b->levels;
    }
    for (size_t i = 0; i < b->track_count; i++) {
        b->tracks[i].rec.refs_off = refs_off + r * sizeof(lod_ref);
        r += b->levels;
    }
    off += r * sizeof(lod_ref);

    r = 0;
    for (size_t i = 0; i < b->lane_count; i++) {
        lane_build *l = &b->lanes[i];
        for (uint32_t d = 0; d < l->rec.depths; d++)
            for (unsigned k = 0; k < b->levels; k++, r++) {
                span_vec *v = &l->depths[d].level[k];
                if (v->same) {
                    refs[r] = refs[r - 1];
                } else {
                    refs[r] = (lod_ref){off, v->block_count};
                    v->data_off = off + v->block_count * sizeof(lod_block);
                    off = align8(v->data_off + v->size);
                }
            }
        l->rec.params_off = off;
        off += l->rec.param_count * sizeof(tt_lod_param);
        l->rec.marks_off = off;
        off += l->rec.mark_count * sizeof(tt_lod_mark);
    }
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
    return off;
}

static int put(FILE *f, const void *data, size_t size) { return size == 0 || fwrite(data, size, 1, f) == 1 ? 0 : -1; }

static int write_image(builder *b, uint64_t signature, FILE *f)
{
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
    h.strings_off = lay_out(b, &h, refs);
    h.strings_size = b->strings.size;
    h.size = h.strings_off + h.strings_size;

    static const uint8_t zeros[8];
    int rc = put(f, &h, sizeof h) | put(f, b->regions, b->region_count * sizeof *b->regions);
    for (size_t i = 0; i < b->lane_count; i++) rc |= put(f, &b->lanes[i].rec, sizeof b->lanes[i].rec);
    for (size_t i = 0; i < b->track_count; i++) rc |= put(f, &b->tracks[i].rec, sizeof b->tracks[i].rec);
    rc |= put(f, b->problems, b->problem_count * sizeof *b->problems);
    rc |= put(f, zeros, (size_t)(align8(b->problem_count * 4) - b->problem_count * 4));
    rc |= put(f, refs, ref_count * sizeof *refs);
    for (size_t i = 0; i < b->lane_count; i++) {
        lane_build *l = &b->lanes[i];
        for (uint32_t d = 0; d < l->rec.depths; d++)
            for (unsigned k = 0; k < b->levels; k++) {
                const span_vec *v = &l->depths[d].level[k];
                if (v->same) continue;
                for (size_t j = 0; j < v->block_count; j++) {
                    lod_block block = v->blocks[j];
                    block.data += v->data_off;
                    rc |= put(f, &block, sizeof block);
                }
                rc |= put(f, v->bytes, v->size);
                rc |= put(f, zeros, (size_t)(align8(v->size) - v->size));
            }
        rc |= put(f, l->params, l->rec.param_count * sizeof *l->params);
        rc |= put(f, l->marks, l->rec.mark_count * sizeof *l->marks);
    }
    for (size_t i = 0; i < b->track_count; i++)
        for (unsigned k = 0; k < b->levels; k++) {
            const sample_vec *v = &b->tracks[i].level[k];
            if (!v->same) rc |= put(f, v->v, v->n * sizeof *v->v);
        }
    for (size_t i = 0; i < b->object_count; i++) {
        const object_read *o = &b->objects[i];
        tt_lod_objects rec = {o->time, o->track, o->region, o->created, o->destroyed};
        rc |= put(f, &rec, sizeof rec);
    }
    rc |= put(f, b->strings.data, b->strings.size);
    free(refs);
    return rc;
}

static void builder_free(builder *b)
{
    for (size_t i = 0; i < b->lane_count; i++) {
        lane_build *l = &b->lanes[i];
        for (uint32_t d = 0; d < l->rec.depths; d++)
            for (unsigned k = 0; k < TT_LOD_MAX_LEVELS; k++) {
                free(l->depths[d].level[k].v);
                free(l->depths[d].level[k].blocks);
                free(l->depths[d].level[k].bytes);
            }
        free(l->depths);
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
}

static int build(builder *b, const char *experiment_dir, tt_error *err)
{
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
        if (rc == 0) rc = read_process(b, t, p, name);
    }
    tt_trace_close(t);
    if (rc == 0) rc = make_object_tracks(b);
    if (b->begin > b->end) b->begin = b->end = 0;
    void *zctx = tt_compress_ctx_new(LOD_ZSTD_LEVEL);
    uint8_t *raw = malloc(TT_LOD_BLOCK_BYTES);
    if (rc == 0) rc = raw ? make_levels(b, zctx, raw) : -1;
    free(raw);
    tt_compress_ctx_free(zctx);
    return rc == 0 ? 0 : tt_fail(err, "out of memory building the index of %s", experiment_dir);
}

/* Writes the image to a memory buffer: 0, or -1 when memory runs out. */
static int image_in_memory(builder *b, uint64_t signature, uint8_t **image, size_t *size)
{
    char *data = NULL;
    FILE *f = open_memstream(&data, size);
    if (!f) return -1;
    int failed = write_image(b, signature, f) != 0;
    if (fclose(f) != 0) failed = 1;
    if (failed) {
        free(data);
        return -1;
    }
    *image = (uint8_t *)data;
    return 0;
}

int tt_lod_build_image(const char *experiment_dir, uint64_t signature, const char *path,
                       const tt_lod_progress *progress, uint8_t **image, size_t *size, tt_error *cache_problem,
                       tt_error *err)
{
    *image = NULL;
    *size = 0;
    /* Opened first, so that an experiment that cannot be written is known
     * before the work, and the index built once, in memory. */
    FILE *f = path ? fopen(path, "wb") : NULL;
    if (path && !f) tt_fail_errno(cache_problem, "cannot write %s", path);
    builder b;
    memset(&b, 0, sizeof b);
    b.progress = progress;
    int rc = build(&b, experiment_dir, err), written = 0;
    if (f) {
        int failed = rc != 0 || write_image(&b, signature, f) != 0;
        if (fclose(f) != 0) failed = 1;
        if (failed) {
            if (rc == 0) tt_fail_errno(cache_problem, "cannot write %s", path);
            remove(path);
        }
        written = !failed;
    }
    if (rc == 0 && !written && image_in_memory(&b, signature, image, size) != 0)
        rc = tt_fail(err, "out of memory building the index of %s", experiment_dir);
    builder_free(&b);
    return rc;
}

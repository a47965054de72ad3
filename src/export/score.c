/* score.c -- `tracetop score` (see score.h). */
#include "score.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <otf2/OTF2_EventSizeEstimator.h>

#include "format.h"
#include "grow.h"
#include "out.h"

#define NONE UINT32_MAX

/* OTF2's estimates of its records, a timestamp included in each. */
typedef struct otf2_sizes {
    uint64_t enter, leave, param_int, param_uint, param_string, metric, switch_;
} otf2_sizes;

typedef struct open_call {
    uint32_t region; /* merged */
    uint64_t begin, callees;
} open_call;

typedef struct builder {
    tt_score *s;
    size_t region_cap, problem_cap, stream_cap, stored_cap;
    uint32_t *slots; /* merged regions by name: index + 1 */
    size_t mask;
    uint32_t *map; /* the process being read: region id -> merged, NONE until needed */
    open_call *stack;
    size_t stack_cap;
    otf2_sizes otf2;
} builder;

static uint64_t hash_name(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ULL;
    return h;
}

static uint32_t merged(builder *b, const tt_process *p, uint32_t id)
{
    if (b->map[id] != NONE) return b->map[id];
    tt_score *s = b->s;
    if ((s->region_count + 1) * 2 > (b->slots ? b->mask + 1 : 0)) {
        size_t size = b->slots ? (b->mask + 1) * 2 : 256;
        uint32_t *slots = calloc(size, sizeof *slots);
        if (!slots) return NONE;
        for (size_t i = 0; i < s->region_count; i++) {
            size_t j = hash_name(s->regions[i].name) & (size - 1);
            while (slots[j]) j = (j + 1) & (size - 1);
            slots[j] = (uint32_t)i + 1;
        }
        free(b->slots);
        b->slots = slots;
        b->mask = size - 1;
    }
    const tt_region *r = &p->regions[id];
    size_t j = hash_name(r->name) & b->mask;
    for (; b->slots[j]; j = (j + 1) & b->mask)
        if (strcmp(s->regions[b->slots[j] - 1].name, r->name) == 0) return b->map[id] = b->slots[j] - 1;
    if (TT_RESERVE(s->regions, b->region_cap, s->region_count + 1) != 0) return NONE;
    s->regions[s->region_count] = (tt_score_region){.name = r->name, .file = r->file, .kind = r->kind};
    b->slots[j] = (uint32_t)++s->region_count;
    return b->map[id] = (uint32_t)s->region_count - 1;
}

static int add_problem(builder *b, const char *line, int corrupt)
{
    tt_score *s = b->s;
    if (TT_RESERVE(s->problems, b->problem_cap, s->problem_count + 1) != 0) return -1;
    if (!(s->problems[s->problem_count] = strdup(line))) return -1;
    s->problem_count++;
    s->corrupt |= corrupt;
    return 0;
}

/* What a file takes: its size, or its blocks where they are fewer (the
 * holes of a ring's dropped chunks, format.h, take none). */
static uint64_t file_size(const char *dir, const char *name)
{
    char path[8192];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (stat(path, &st) != 0) return 0;
    uint64_t blocks = (uint64_t)st.st_blocks * 512u;
    return blocks < (uint64_t)st.st_size ? blocks : (uint64_t)st.st_size;
}

/* Reads one stream; its record bytes in *bytes, as decoded. Fails only when memory runs out. */
static int read_stream(builder *b, const tt_process *p, tt_cursor *c, uint64_t *bytes)
{
    tt_score *s = b->s;
    size_t depth = 0;
    uint64_t before = tt_cursor_record_bytes(c);
    tt_event ev;
    while (tt_cursor_next(c, &ev)) {
        uint64_t after = tt_cursor_record_bytes(c), size = after - before;
        before = after;
        if (ev.kind == TT_EV_ENTER) {
            uint32_t r = merged(b, p, ev.region);
            if (r == NONE || TT_RESERVE(b->stack, b->stack_cap, depth + 1) != 0) return -1;
            b->stack[depth++] = (open_call){r, ev.time, 0};
            s->regions[r].visits += !ev.resumed;
            s->regions[r].bytes += size;
            s->regions[r].otf2_bytes += b->otf2.enter;
        } else if (ev.kind == TT_EV_LEAVE) {
            open_call *call = &b->stack[--depth];
            uint64_t inclusive = ev.time - call->begin;
            tt_score_region *r = &s->regions[call->region];
            r->exclusive_ns += inclusive - call->callees;
            r->bytes += size;
            r->otf2_bytes += b->otf2.leave;
            if (depth) b->stack[depth - 1].callees += inclusive;
        } else {
            s->other_events++;
            s->other_bytes += size;
            s->other_otf2_bytes += ev.kind == TT_EV_PARAM_INT      ? b->otf2.param_int
                                   : ev.kind == TT_EV_PARAM_UINT   ? b->otf2.param_uint
                                   : ev.kind == TT_EV_PARAM_STRING ? b->otf2.param_string
                                   : ev.kind == TT_EV_COUNTER      ? b->otf2.metric
                                   : ev.kind == TT_EV_STREAM_END   ? 0
                                                                   : b->otf2.switch_;
        }
    }
    *bytes = before;
    return 0;
}

/* The call tree behind stream `stream` of p, when it has one: its bytes, and
 * its nodes per region, which a filter keeps or not with their region. 0, or
 * -1 when memory runs out. */
static int count_tree(builder *b, const tt_process *p, size_t stream)
{
    tt_score *s = b->s;
    tt_stream_tree tree;
    tt_error err;
    int rc = tt_stream_tree_read(s->trace, p, stream, &tree, &err);
    if (rc <= 0) return rc;
    s->tree_bytes += tree.bytes;
    s->tree_nodes += tree.node_count;
    for (size_t n = 0; n < tree.node_count && rc == 1; n++) {
        uint32_t r = merged(b, p, tree.nodes[n].region);
        if (r == NONE)
            rc = -1;
        else
            s->regions[r].tree_nodes++;
    }
    tt_stream_tree_free(&tree);
    return rc < 0 ? -1 : 0;
}

static int read_process(builder *b, const tt_process *p)
{
    tt_score *s = b->s;
    if (p->defs_cut && add_problem(b, p->defs_cut, p->defs_state == TT_STREAM_CORRUPT) != 0) return -1;
    free(b->map);
    if (!(b->map = malloc((p->region_count + 1) * sizeof *b->map))) return -1;
    memset(b->map, 0xff, (p->region_count + 1) * sizeof *b->map);
    s->defs_bytes += file_size(p->dir, "defs.tts");
    s->trace_bytes += file_size(p->dir, "defs.tts");
    uint64_t process_bytes = 0;
    for (size_t i = 0; i < p->thread_count; i++) {
        if (!p->threads[i].present) continue;
        char name[32];
        snprintf(name, sizeof name, "%zu.tts", i);
        s->trace_bytes += file_size(p->dir, name);
        tt_cursor *c;
        tt_error err;
        if (tt_cursor_open(s->trace, p, i, &c, &err) != 0) {
            if (add_problem(b, err.message, 0) != 0) return -1;
            continue;
        }
        s->streams++;
        uint64_t bytes, stored, raw;
        int rc = read_stream(b, p, c, &bytes);
        if (rc == 0 && tt_cursor_state(c) != TT_STREAM_COMPLETE)
            rc = add_problem(b, tt_cursor_problem(c), tt_cursor_state(c) == TT_STREAM_CORRUPT);
        tt_cursor_payload_bytes(c, &stored, &raw);
        tt_cursor_close(c);
        if (rc != 0 || count_tree(b, p, i) != 0) return -1;
        if (TT_RESERVE(s->stream_bytes, b->stream_cap, s->streams) != 0 ||
            TT_RESERVE(s->stream_stored, b->stored_cap, s->streams) != 0)
            return -1;
        s->stream_bytes[s->streams - 1] = bytes;
        s->stream_stored[s->streams - 1] = raw ? (double)stored / (double)raw : 1.0;
        if (bytes > s->max_stream_bytes) s->max_stream_bytes = bytes;
        process_bytes += bytes;
    }
    if (process_bytes > s->max_process_bytes) s->max_process_bytes = process_bytes;
    return 0;
}

static otf2_sizes otf2_estimates(const tt_trace *t)
{
    uint64_t regions = 0, strings = 0, locations = 0;
    for (size_t i = 0; i < tt_trace_process_count(t); i++) {
        const tt_process *p = tt_trace_process(t, i);
        regions += p->region_count + 1;
        strings += p->string_count;
        locations += p->thread_count;
    }
    OTF2_EventSizeEstimator *e = OTF2_EventSizeEstimator_New();
    if (!e) return (otf2_sizes){0};
    OTF2_EventSizeEstimator_SetNumberOfRegionDefinitions(e, regions);
    OTF2_EventSizeEstimator_SetNumberOfStringDefinitions(e, strings);
    OTF2_EventSizeEstimator_SetNumberOfLocationDefinitions(e, locations);
    OTF2_EventSizeEstimator_SetNumberOfParameterDefinitions(e, strings);
    OTF2_EventSizeEstimator_SetNumberOfMetricDefinitions(e, strings);
    uint64_t ts = OTF2_EventSizeEstimator_GetSizeOfTimestamp(e);
    otf2_sizes sizes = {
        .enter = ts + OTF2_EventSizeEstimator_GetSizeOfEnterEvent(e),
        .leave = ts + OTF2_EventSizeEstimator_GetSizeOfLeaveEvent(e),
        .param_int = ts + OTF2_EventSizeEstimator_GetSizeOfParameterIntEvent(e),
        .param_uint = ts + OTF2_EventSizeEstimator_GetSizeOfParameterUnsignedIntEvent(e),
        .param_string = ts + OTF2_EventSizeEstimator_GetSizeOfParameterStringEvent(e),
        .metric = ts + OTF2_EventSizeEstimator_GetSizeOfMetricEvent(e, 1),
        .switch_ = ts + OTF2_EventSizeEstimator_GetSizeOfMeasurementOnOffEvent(e),
    };
    OTF2_EventSizeEstimator_Delete(e);
    return sizes;
}

int tt_score_build(const tt_trace *t, tt_score **out, tt_error *err)
{
    *out = NULL;
    tt_score *s = calloc(1, sizeof *s);
    if (!s) return tt_fail(err, "out of memory");
    s->trace = t;
    /* A writer rotates a chunk when a record might not fit its end. */
    s->chunk_payload = TT_CHUNK_PAYLOAD_SIZE - TT_RECORD_MAX_FIXED / 2;
    builder b = {.s = s, .otf2 = otf2_estimates(t)};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < tt_trace_problem_count(t); i++) {
        int corrupt;
        const char *line = tt_trace_problem(t, i, &corrupt);
        rc = add_problem(&b, line, corrupt);
    }
    for (size_t i = 0; rc == 0 && i < tt_trace_process_count(t); i++) rc = read_process(&b, tt_trace_process(t, i));
    for (size_t i = 0; i < s->region_count; i++) s->total_ns += s->regions[i].exclusive_ns;
    free(b.slots);
    free(b.map);
    free(b.stack);
    if (rc != 0) {
        tt_score_free(s);
        return tt_fail(err, "out of memory");
    }
    *out = s;
    return 0;
}

void tt_score_free(tt_score *s)
{
    if (!s) return;
    free(s->regions);
    free(s->stream_bytes);
    free(s->stream_stored);
    for (size_t i = 0; i < s->problem_count; i++) free(s->problems[i]);
    free(s->problems);
    free(s);
}

int tt_score_excluded(const tt_score_region *r, const tt_filter *f)
{
    return f && r->kind && tt_filter_excludes(f, r->name, r->file);
}

/* Record bytes of the regions f keeps (and of everything else). */
static uint64_t kept_records(const tt_score *s, const tt_filter *f, int otf2)
{
    uint64_t kept = otf2 ? s->other_otf2_bytes : s->other_bytes;
    for (size_t i = 0; i < s->region_count; i++)
        if (!tt_score_excluded(&s->regions[i], f)) kept += otf2 ? s->regions[i].otf2_bytes : s->regions[i].bytes;
    return kept;
}

uint64_t tt_score_native_bytes(const tt_score *s, const tt_filter *f)
{
    uint64_t records = kept_records(s, f, 0), all = kept_records(s, NULL, 0), chunks = 0, stored = 0;
    /* Streams keep the same share of their records: each fills its chunks,
     * which take on disk what its chunks take now (compressed or not). */
    double share = all ? (double)records / (double)all : 0;
    for (size_t i = 0; i < s->streams; i++) {
        uint64_t kept = (uint64_t)llround((double)s->stream_bytes[i] * share);
        chunks += kept ? (kept + s->chunk_payload - 1) / s->chunk_payload : 1;
        stored += (uint64_t)llround((double)kept * s->stream_stored[i]);
    }
    /* The call trees keep the nodes of the regions kept (a filtered call's
     * children move up a level, where they may share a node: a bound). */
    uint64_t nodes = 0;
    for (size_t i = 0; i < s->region_count; i++)
        if (!tt_score_excluded(&s->regions[i], f)) nodes += s->regions[i].tree_nodes;
    uint64_t trees = s->tree_nodes ? (uint64_t)llround((double)s->tree_bytes * (double)nodes / (double)s->tree_nodes)
                                   : 0;
    return s->defs_bytes + s->streams * TT_FILE_HEADER_SIZE + chunks * TT_CHUNK_HEADER_SIZE + stored + trees;
}

uint64_t tt_score_otf2_bytes(const tt_score *s, const tt_filter *f) { return kept_records(s, f, 1); }

/* ---- the report ---- */

static const char *const kind_groups[] = {[0] = "UND",
                                          [TT_REGION_PYTHON] = "PY",
                                          [TT_REGION_C] = "C",
                                          [TT_REGION_USER] = "USR",
                                          [TT_REGION_MPI] = "MPI",
                                          [TT_REGION_GC] = "GC"};
#define KIND_GROUPS (sizeof kind_groups / sizeof *kind_groups)

static void size_text(char *buf, size_t size, uint64_t bytes)
{
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    size_t u = 0;
    while (v >= 1024 && u + 1 < sizeof units / sizeof *units) v /= 1024, u++;
    if (u == 0)
        snprintf(buf, size, "%" PRIu64 " bytes", bytes);
    else
        snprintf(buf, size, "%.1f %s", v, units[u]);
}

typedef struct row {
    uint64_t bytes, otf2_bytes, visits, exclusive_ns;
} row;

static void print_row(tt_out *o, const tt_score *s, const char *flt, const char *type, const row *r, const char *name)
{
    double us = r->visits ? (double)r->exclusive_ns / 1e3 / (double)r->visits : 0;
    tt_out_printf(o, "%3s  %-4s %14" PRIu64 " %14" PRIu64 " %12" PRIu64 " %10.3f %7.1f %14.3f  %s\n", flt, type,
                  r->bytes, r->otf2_bytes, r->visits, (double)r->exclusive_ns / 1e9,
                  s->total_ns ? 100.0 * (double)r->exclusive_ns / (double)s->total_ns : 0.0, us, name);
}

static void add_row(row *to, const tt_score_region *r)
{
    to->bytes += r->bytes;
    to->otf2_bytes += r->otf2_bytes;
    to->visits += r->visits;
    to->exclusive_ns += r->exclusive_ns;
}

static const tt_score_region **by_bytes(const tt_score *s)
{
    const tt_score_region **order = malloc((s->region_count ? s->region_count : 1) * sizeof *order);
    if (!order) return NULL;
    for (size_t i = 0; i < s->region_count; i++) order[i] = &s->regions[i];
    for (size_t i = 1; i < s->region_count; i++) { /* insertion sort: stable, and regions are few */
        const tt_score_region *r = order[i];
        size_t j = i;
        for (; j > 0 && (order[j - 1]->bytes < r->bytes ||
                         (order[j - 1]->bytes == r->bytes && strcmp(order[j - 1]->name, r->name) > 0));
             j--)
            order[j] = order[j - 1];
        order[j] = r;
    }
    return order;
}

/* Memory for the largest process to keep all its records in its buffers:
 * its records plus a chunk per stream being filled, in whole MiB. */
static uint64_t memory_needed(const tt_score *s)
{
    uint64_t bytes = s->max_process_bytes + (s->streams + 1) * (TT_CHUNK_PAYLOAD_SIZE + TT_CHUNK_HEADER_SIZE);
    uint64_t mib = (bytes + (1u << 20) - 1) >> 20;
    return mib ? mib : 1;
}

/* A text written through tt_out into memory, over the regions by bytes. */
typedef struct text_report {
    char *text;
    size_t len;
    tt_out out;
    const tt_score_region **order;
} text_report;

static int report_open(text_report *t, const tt_score *s)
{
    *t = (text_report){0};
    t->out.f = open_memstream(&t->text, &t->len);
    t->order = t->out.f ? by_bytes(s) : NULL;
    if (t->order) return 0;
    if (t->out.f) fclose(t->out.f);
    free(t->text);
    return -1;
}

/* The text, or NULL when writing it failed. */
static char *report_close(text_report *t)
{
    free(t->order);
    if (fclose(t->out.f) != 0 || t->out.error) {
        free(t->text);
        return NULL;
    }
    return t->text;
}

char *tt_score_render(const tt_score *s, const tt_filter *f, const char *filter_name, size_t top)
{
    text_report t;
    if (report_open(&t, s) != 0) return NULL;
    const tt_score_region **order = t.order;
    char a[32], b[32], c[32];
    size_t nproc = tt_trace_process_count(s->trace);
    tt_out_printf(&t.out, "tracetop score \xe2\x80\x94 %zu process%s, %" PRIu64 " thread%s\n\n", nproc,
                  nproc == 1 ? "" : "es", s->streams, s->streams == 1 ? "" : "s");
    size_text(a, sizeof a, tt_score_native_bytes(s, NULL));
    size_text(b, sizeof b, s->trace_bytes);
    size_text(c, sizeof c, tt_score_otf2_bytes(s, NULL));
    tt_out_printf(&t.out, "Estimated size of the native trace:        %s (on disk: %s)\n", a, b);
    tt_out_printf(&t.out, "Estimated size of OTF2 events:             %s\n", c);
    size_text(a, sizeof a, s->max_stream_bytes);
    tt_out_printf(&t.out, "Largest thread's records (max_buf):        %s\n", a);
    tt_out_printf(&t.out, "Memory to hold a process's trace unflushed: --memory %" PRIu64 "M\n", memory_needed(s));
    if (f) {
        uint64_t native = tt_score_native_bytes(s, f);
        size_text(a, sizeof a, native);
        size_text(c, sizeof c, tt_score_otf2_bytes(s, f));
        tt_out_printf(&t.out, "\nWith %s: native trace %s (%.1f %% of it), OTF2 events %s\n", filter_name, a,
                      s->trace_bytes ? 100.0 * (double)native / (double)tt_score_native_bytes(s, NULL) : 0.0, c);
    }

    tt_out_printf(&t.out, "\n%3s  %-4s %14s %14s %12s %10s %7s %14s  %s\n", "flt", "type", "native[B]", "otf2[B]",
                  "visits", "time[s]", "time[%]", "time/visit[us]", "region");
    row all = {s->other_bytes, s->other_otf2_bytes, 0, 0}, groups[KIND_GROUPS] = {{0}}, excluded = {0};
    for (size_t i = 0; i < s->region_count; i++) {
        const tt_score_region *r = &s->regions[i];
        add_row(&all, r);
        add_row(&groups[r->kind], r);
        if (tt_score_excluded(r, f)) add_row(&excluded, r);
    }
    print_row(&t.out, s, "", "ALL", &all, "ALL");
    for (size_t k = 1; k < KIND_GROUPS; k++)
        if (groups[k].visits) print_row(&t.out, s, "", kind_groups[k], &groups[k], kind_groups[k]);
    if (groups[0].visits) print_row(&t.out, s, "", "UND", &groups[0], "UND");
    row other = {s->other_bytes, s->other_otf2_bytes, s->other_events, 0};
    print_row(&t.out, s, "", "EVT", &other, "EVT (parameters, counters, marks, switches, stream ends)");
    if (f) print_row(&t.out, s, "-", "FLT", &excluded, "FLT (excluded by the filter)");

    size_t rows = s->region_count < top ? s->region_count : top;
    tt_out_printf(&t.out, "\nRegions by native bytes%s\n", rows < s->region_count ? " (the first ones)" : "");
    tt_out_printf(&t.out, "%3s  %-4s %14s %14s %12s %10s %7s %14s  %s\n", "flt", "type", "native[B]", "otf2[B]",
                  "visits", "time[s]", "time[%]", "time/visit[us]", "region");
    for (size_t i = 0; i < rows; i++) {
        row r = {0};
        add_row(&r, order[i]);
        print_row(&t.out, s, tt_score_excluded(order[i], f) ? "-" : "", kind_groups[order[i]->kind], &r,
                  order[i]->name);
    }
    if (rows < s->region_count)
        tt_out_printf(&t.out, "(%zu more regions; --top N shows more)\n", s->region_count - rows);
    return report_close(&t);
}

/* A name as a filter pattern: wildcards, blanks and '#' escaped. */
static void pattern(tt_out *o, const char *name)
{
    for (; *name; name++) {
        if (strchr("*?[]\\# \t", *name)) tt_out_byte(o, '\\');
        tt_out_byte(o, (uint8_t)*name);
    }
}

char *tt_score_suggest(const tt_score *s, double min_share, double max_ns_per_visit, size_t *count)
{
    text_report t;
    if (report_open(&t, s) != 0) return NULL;
    const tt_score_region **order = t.order;
    uint64_t records = kept_records(s, NULL, 0);
    tt_out_printf(&t.out,
                  "# Score-P filter file suggested by `tracetop score`: it excludes the regions that take at\n"
                  "# least %.3g %% of the trace's bytes and at most %.3g us per visit.\n"
                  "SCOREP_REGION_NAMES_BEGIN\n  EXCLUDE\n",
                  min_share * 100, max_ns_per_visit / 1e3);
    *count = 0;
    for (size_t i = 0; i < s->region_count; i++) {
        const tt_score_region *r = order[i];
        if (!r->kind || !r->visits || (double)r->bytes < min_share * (double)records ||
            (double)r->exclusive_ns / (double)r->visits > max_ns_per_visit)
            continue;
        char size[32];
        size_text(size, sizeof size, r->bytes);
        tt_out_str(&t.out, "    ");
        pattern(&t.out, r->name);
        tt_out_printf(&t.out, "  # %s, %" PRIu64 " visits, %.3f us per visit\n", size, r->visits,
                      (double)r->exclusive_ns / 1e3 / (double)r->visits);
        ++*count;
    }
    tt_out_str(&t.out, "SCOREP_REGION_NAMES_END\n");
    return report_close(&t);
}

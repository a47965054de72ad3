/* export.c -- the table of converters and what they share (see export.h). */
#include "converters.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"

static const struct {
    const char *format, *file_name;
    tt_converter *convert;
} converters[] = {
    {"otf2", "traces.otf2", tt_export_otf2},
    {"cubex", "profile.cubex", tt_export_cubex},
    {"perfetto", "trace.perfetto-trace", tt_export_perfetto},
    {"chrome", "trace.chrome.json", tt_export_chrome},
    {"speedscope", "profile.speedscope.json", tt_export_speedscope},
    {"pstats", "profile.pstats", tt_export_pstats},
    {"collapsed", "profile.collapsed", tt_export_collapsed},
};
#define CONVERTERS (sizeof converters / sizeof *converters)

const char *tt_export_format(size_t index) { return index < CONVERTERS ? converters[index].format : NULL; }

const char *tt_export_default_name(const char *format)
{
    for (size_t i = 0; i < CONVERTERS; i++)
        if (strcmp(converters[i].format, format) == 0) return converters[i].file_name;
    return NULL;
}

int tt_export(const tt_trace *t, const char *format, const char *path, tt_export_result *result, tt_error *err)
{
    *result = (tt_export_result){0};
    for (size_t i = 0; i < CONVERTERS; i++) {
        if (strcmp(converters[i].format, format) != 0) continue;
        int rc = converters[i].convert(t, path, result, err);
        if (rc != 0) tt_export_result_free(result);
        return rc;
    }
    return tt_fail(err, "unknown format '%s'", format);
}

void tt_export_result_free(tt_export_result *result)
{
    for (size_t i = 0; i < result->problem_count; i++) free(result->problems[i]);
    free(result->problems);
    *result = (tt_export_result){0};
}

int tt_export_problem(tt_export_result *r, const char *line, int corrupt)
{
    size_t cap = r->problem_count; /* grown one at a time: problems are few */
    if (TT_RESERVE(r->problems, cap, r->problem_count + 1) != 0) return -1;
    if (!(r->problems[r->problem_count] = strdup(line))) return -1;
    r->problem_count++;
    r->corrupt |= corrupt;
    return 0;
}

int tt_export_trace_problems(const tt_trace *t, tt_export_result *r)
{
    for (size_t i = 0; i < tt_trace_problem_count(t); i++) {
        int corrupt;
        const char *line = tt_trace_problem(t, i, &corrupt);
        if (tt_export_problem(r, line, corrupt) != 0) return -1;
    }
    for (size_t i = 0; i < tt_trace_process_count(t); i++) {
        const tt_process *p = tt_trace_process(t, i);
        if (p->defs_cut && tt_export_problem(r, p->defs_cut, p->defs_state == TT_STREAM_CORRUPT) != 0) return -1;
    }
    return 0;
}

int tt_export_stream_done(tt_cursor *c, tt_export_result *r)
{
    r->events += tt_cursor_events_read(c);
    if (tt_cursor_state(c) == TT_STREAM_COMPLETE) return 0;
    return tt_export_problem(r, tt_cursor_problem(c), tt_cursor_state(c) == TT_STREAM_CORRUPT);
}

int tt_export_profile(const tt_trace *t, tt_profile **prof, tt_export_result *r, tt_error *err)
{
    if (tt_profile_build(t, prof, err) != 0) return -1;
    r->events = (*prof)->events;
    r->corrupt = (*prof)->corrupt;
    for (size_t i = 0; i < (*prof)->problem_count; i++)
        if (tt_export_problem(r, (*prof)->problems[i], 0) != 0) {
            tt_profile_free(*prof);
            return tt_fail(err, "out of memory");
        }
    return 0;
}

/* A process's place in rank order: MPI processes first, by rank; the
 * others in trace order. */
typedef struct ranked {
    uint64_t not_mpi, rank;
    size_t index;
} ranked;

static int by_rank(const void *a, const void *b)
{
    const ranked *p = a, *q = b;
    if (p->not_mpi != q->not_mpi) return p->not_mpi < q->not_mpi ? -1 : 1;
    if (p->rank != q->rank) return p->rank < q->rank ? -1 : 1;
    return p->index < q->index ? -1 : p->index > q->index;
}

size_t *tt_export_process_order(const tt_trace *t)
{
    size_t n = tt_trace_process_count(t);
    ranked *keys = malloc((n ? n : 1) * sizeof *keys);
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    if (keys && order) {
        for (size_t i = 0; i < n; i++) {
            const tt_process *p = tt_trace_process(t, i);
            keys[i] = (ranked){!p->mpi_size, p->mpi_size ? p->mpi_rank : 0, i};
        }
        qsort(keys, n, sizeof *keys, by_rank);
        for (size_t i = 0; i < n; i++) order[i] = keys[i].index;
    } else {
        free(order);
        order = NULL;
    }
    free(keys);
    return order;
}

const char *tt_export_attribute(const tt_process *p, const char *key)
{
    for (size_t i = 0; i < p->attribute_count; i++)
        if (strcmp(p->attributes[i].key, key) == 0) return p->attributes[i].value;
    return NULL;
}

const char *tt_export_host(const tt_process *p)
{
    const char *host = tt_export_attribute(p, "host");
    return host ? host : "";
}

uint64_t tt_export_epoch_realtime(const tt_trace *t)
{
    const tt_process *p = tt_trace_process(t, 0); /* a trace has at least one */
    return p->start_realtime_ns - (uint64_t)p->sync_time;
}

uint64_t tt_export_tid(const tt_process *p, size_t s)
{
    return p->threads[s].native_tid ? p->threads[s].native_tid : s;
}

/* FNV-1a: names of regions. */
static uint64_t hash_name(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ULL;
    return h;
}

int tt_export_region_maps(const tt_profile *prof, uint32_t ***maps)
{
    size_t nproc = tt_trace_process_count(prof->trace), size = 64;
    while (size < prof->region_count * 2) size *= 2;
    uint32_t *slots = malloc(size * sizeof *slots); /* index + 1; 0 is empty */
    *maps = calloc(nproc ? nproc : 1, sizeof **maps);
    int rc = slots && *maps ? 0 : -1;
    if (rc == 0) {
        memset(slots, 0, size * sizeof *slots);
        for (size_t i = 0; i < prof->region_count; i++) {
            size_t j = hash_name(prof->regions[i].name) & (size - 1);
            while (slots[j]) j = (j + 1) & (size - 1);
            slots[j] = (uint32_t)i + 1;
        }
    }
    for (size_t i = 0; rc == 0 && i < nproc; i++) {
        const tt_process *p = tt_trace_process(prof->trace, i);
        uint32_t *map = malloc((p->region_count + 1) * sizeof *map);
        if (!map) {
            rc = -1;
            break;
        }
        for (size_t id = 0; id <= p->region_count; id++) {
            const char *name = p->regions[id].name;
            size_t j = hash_name(name) & (size - 1);
            while (slots[j] && strcmp(prof->regions[slots[j] - 1].name, name) != 0) j = (j + 1) & (size - 1);
            map[id] = slots[j] ? slots[j] - 1 : UINT32_MAX;
        }
        (*maps)[i] = map;
    }
    free(slots);
    if (rc != 0) {
        if (*maps) tt_export_free_region_maps(prof, *maps);
        *maps = NULL;
    }
    return rc;
}

void tt_export_free_region_maps(const tt_profile *prof, uint32_t **maps)
{
    for (size_t i = 0; i < tt_trace_process_count(prof->trace); i++) free(maps[i]);
    free(maps);
}

#define NO_NODE UINT32_MAX

int tt_export_walk(const tt_profile_thread *th, int (*enter)(void *ctx, uint32_t node),
                   void (*leave)(void *ctx, uint32_t node), void *ctx)
{
    const tt_profile_node *nodes = th->nodes;
    uint32_t n = th->node_count ? 0 : NO_NODE;
    while (n != NO_NODE) {
        int rc = enter(ctx, n);
        if (rc != 0) return rc;
        if (nodes[n].first_child != NO_NODE) {
            n = nodes[n].first_child;
            continue;
        }
        /* Leave n, and its ancestors while they have no next sibling. */
        for (;;) {
            leave(ctx, n);
            if (nodes[n].next_sibling != NO_NODE) {
                n = nodes[n].next_sibling;
                break;
            }
            if ((n = nodes[n].parent) == NO_NODE) break;
        }
    }
    return 0;
}

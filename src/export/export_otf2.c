/* export_otf2.c -- an OTF2 archive through libotf2: DIR/NAME.otf2 (the
 * anchor), NAME.def (global definitions) and NAME/ (a file of events per
 * location, their local definitions, the markers).
 *
 * Mapping: one location group per process, in rank order for the ranks of
 * an MPI job (tt_export_process_order), below the system tree node of the
 * host it ran on ("host" attribute), below one machine; one location (a
 * CPU thread) per stream. Regions are merged by name over processes, as
 * `tracetop summary` merges them: one definition each, with the file, first
 * line, paradigm and role of the first process that has it; parameters are
 * parameter events, counters metric events (a metric per counter name),
 * marks markers, the recording switches MeasurementOnOff events. Objects
 * counted (--objects) are a metric location "objects" per process, a
 * metric per type whose members are the objects created and destroyed
 * since counting began and those alive, at each batch time
 * (objects_series.h). Time is
 * the reader's: ns since the experiment's epoch (timer resolution 1e9,
 * global offset 0), and the clock properties give that epoch in real time.
 *
 * MPI (when every rank of the job is in the trace): a process of rank r is
 * the location group "MPI Rank r", its MPI events are OTF2's MPI events, and
 * the communicators of all processes are made one set (mpi_comms.h),
 * each with its group of ranks, over a group of the ranks' locations (the
 * first of each process's, which records its MPI calls).
 *
 * libotf2's rules: it needs flush and (serial) collective callbacks; a
 * definition must come after the strings it names, which is why the global
 * definitions are written last, once the events have named everything; and
 * timestamps never decrease within a location, which the reader guarantees.
 * Event writers flush their buffers to disk as they fill (memory callbacks
 * that give each a few chunks), so memory stays bounded; one location is
 * written at a time.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <otf2/otf2.h>

#include "converters.h"
#include "file.h"
#include "grow.h"
#include "mpi_comms.h"
#include "objects_series.h"
#include "registry.h"
#include "u64map.h"

#define NONE UINT32_MAX
#define EVENT_CHUNK (1u << 20)
#define DEF_CHUNK (4u << 20)

/* ---- what libotf2 says went wrong: its error callback, per thread ---- */

static __thread char otf2_message[256];

static OTF2_ErrorCode on_otf2_error(void *data, const char *file, uint64_t line, const char *function,
                                    OTF2_ErrorCode code, const char *fmt, va_list va)
{
    (void)data, (void)file, (void)line, (void)function;
    char detail[192] = "";
    if (fmt) vsnprintf(detail, sizeof detail, fmt, va);
    snprintf(otf2_message, sizeof otf2_message, "%s%s%s", OTF2_Error_GetDescription(code), *detail ? ": " : "", detail);
    return code;
}

static OTF2_FlushType pre_flush(void *data, OTF2_FileType type, OTF2_LocationRef location, void *caller, bool final)
{
    (void)data, (void)type, (void)location, (void)caller, (void) final;
    return OTF2_FLUSH;
}

static const OTF2_FlushCallbacks flush_callbacks = {.otf2_pre_flush = pre_flush, .otf2_post_flush = NULL};

/* libotf2 flushes a buffer to its file only when it cannot get memory for
 * another chunk; by default it always can, and would keep a location's
 * events in memory until the location is closed. These callbacks give an
 * event buffer at most EVENT_CHUNKS chunks, so that it flushes and the
 * memory stays bounded; other buffers (definitions) grow as they need. */
#define EVENT_CHUNKS 4

typedef struct chunk_list {
    size_t count, cap;
    void *chunks[];
} chunk_list;

static void *allocate_chunk(void *data, OTF2_FileType type, OTF2_LocationRef location, void **per_buffer, uint64_t size)
{
    (void)data, (void)location;
    chunk_list *list = *per_buffer;
    if (type == OTF2_FILETYPE_EVENTS && list && list->count >= EVENT_CHUNKS) return NULL;
    if (!list || list->count == list->cap) {
        size_t cap = list ? list->cap * 2 : EVENT_CHUNKS;
        chunk_list *grown = realloc(list, sizeof *list + cap * sizeof *list->chunks);
        if (!grown) return NULL;
        if (!list) grown->count = 0;
        grown->cap = cap;
        *per_buffer = list = grown;
    }
    void *chunk = malloc(size);
    if (chunk) list->chunks[list->count++] = chunk;
    return chunk;
}

static void free_chunks(void *data, OTF2_FileType type, OTF2_LocationRef location, void **per_buffer, bool final)
{
    (void)data, (void)type, (void)location;
    chunk_list *list = *per_buffer;
    if (!list) return;
    for (size_t i = 0; i < list->count; i++) free(list->chunks[i]);
    list->count = 0;
    if (final) {
        free(list);
        *per_buffer = NULL;
    }
}

static const OTF2_MemoryCallbacks memory_callbacks = {.otf2_allocate = allocate_chunk, .otf2_free_all = free_chunks};

/* ---- the export ---- */

typedef struct location {
    uint32_t name;  /* string */
    uint32_t group; /* process index */
    uint64_t events;
    OTF2_LocationType type;
} location;

typedef struct parameter {
    uint32_t name;
    OTF2_ParameterType type;
} parameter;

/* A metric class of the archive: a counter, whose one member has its name;
 * or the objects of one type, counted from the start: created, destroyed,
 * and alive (OBJECTS_MEMBERS). */
#define OBJECTS_MEMBERS 3
typedef struct metric {
    uint32_t names[OBJECTS_MEMBERS]; /* strings: its members' names */
    int objects;
} metric;

/* A region of the archive: the regions of that name in every process. */
typedef struct global_region {
    uint32_t name, file, description; /* strings */
    uint32_t line;
    uint8_t kind;
} global_region;

typedef struct otf2_export {
    const tt_trace *trace;
    OTF2_Archive *archive;
    OTF2_MarkerWriter *markers;

    /* Global strings: their text in id order, and a map from the text's hash
     * chain to ids (keys are hashes; collisions are resolved by comparing). */
    char **strings;
    size_t string_count, string_cap;
    uint32_t *string_slots; /* id + 1; 0 empty */
    size_t string_mask;

    uint32_t *process_strings; /* the process being written: string id -> global string, NONE until needed */
    size_t *order;             /* process indices in rank order: location group k is process order[k] */
    uint32_t *region_map;      /* the process being written: region id -> global region */
    global_region *regions;
    size_t region_count, region_cap;
    tt_u64map region_ids; /* name (global string) -> global region */
    location *locations;
    size_t location_count, location_cap;
    parameter *parameters;
    size_t parameter_count, parameter_cap;
    tt_u64map parameter_ids; /* (name << 2 | type) -> parameter */
    metric *metrics;
    size_t metric_count, metric_cap;
    tt_u64map metric_ids;      /* name -> metric */
    tt_u64map objects_ids;     /* type name -> metric */
    tt_objects_series objects; /* of the process being written */
    tt_u64map marker_ids;      /* name -> marker */
    uint32_t marker_count;
    uint64_t last_time;
    int nomem;

    /* MPI: written when world_size is not 0 (every rank in the trace). */
    uint32_t world_size;
    uint64_t *rank_location; /* by world rank */
    tt_mpi_comms comms;      /* the archive's communicators, by index */
    uint32_t *comm_names;    /* by communicator: its name (string) */
} otf2_export;

static uint64_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < len; i++) h = (h ^ (uint8_t)s[i]) * 0x100000001b3ULL;
    return h;
}

/* The global string of len bytes at s, defined on first use; NONE when out
 * of memory. */
static uint32_t string_n(otf2_export *x, const char *s, size_t len)
{
    if ((x->string_count + 1) * 2 > (x->string_slots ? x->string_mask + 1 : 0)) {
        size_t size = x->string_slots ? (x->string_mask + 1) * 2 : 1024;
        uint32_t *slots = calloc(size, sizeof *slots);
        if (!slots) return x->nomem = 1, NONE;
        for (size_t i = 0; i < x->string_count; i++) {
            size_t j = hash_bytes(x->strings[i], strlen(x->strings[i])) & (size - 1);
            while (slots[j]) j = (j + 1) & (size - 1);
            slots[j] = (uint32_t)i + 1;
        }
        free(x->string_slots);
        x->string_slots = slots;
        x->string_mask = size - 1;
    }
    size_t j = hash_bytes(s, len) & x->string_mask;
    for (; x->string_slots[j]; j = (j + 1) & x->string_mask) {
        const char *t = x->strings[x->string_slots[j] - 1];
        if (strncmp(t, s, len) == 0 && t[len] == '\0') return x->string_slots[j] - 1;
    }
    char *copy = strndup(s, len);
    if (!copy || TT_RESERVE(x->strings, x->string_cap, x->string_count + 1) != 0) {
        free(copy);
        return x->nomem = 1, NONE;
    }
    x->strings[x->string_count] = copy;
    x->string_slots[j] = (uint32_t)++x->string_count;
    return (uint32_t)x->string_count - 1;
}

static uint32_t string(otf2_export *x, const char *s) { return string_n(x, s, strlen(s)); }

/* OTF2_UNDEFINED_STRING for "", which OTF2 readers show as unknown. */
static OTF2_StringRef optional_string(otf2_export *x, const char *s)
{
    return *s ? string(x, s) : OTF2_UNDEFINED_STRING;
}

/* A string id of the process being written, as a global string. */
static uint32_t process_string(otf2_export *x, const tt_process *p, uint32_t id)
{
    if (x->process_strings[id] == NONE) x->process_strings[id] = string(x, p->strings[id]);
    return x->process_strings[id];
}

static uint32_t parameter_of(otf2_export *x, const tt_process *p, uint32_t name, OTF2_ParameterType type)
{
    uint32_t global = process_string(x, p, name);
    int fresh = 0;
    uint64_t *id = global == NONE ? NULL : tt_u64map_slot(&x->parameter_ids, (uint64_t)global << 8 | type, &fresh);
    if (!id || (fresh && TT_RESERVE(x->parameters, x->parameter_cap, x->parameter_count + 1) != 0))
        return x->nomem = 1, NONE;
    if (fresh) {
        x->parameters[x->parameter_count] = (parameter){global, type};
        *id = x->parameter_count++;
    }
    return (uint32_t)*id;
}

/* The metric of counter `name` (objects 0), or of the objects of type
 * `name` (objects 1), a string id of p. */
static uint32_t metric_of(otf2_export *x, const tt_process *p, uint32_t name, int objects)
{
    uint32_t global = process_string(x, p, name);
    int fresh = 0;
    uint64_t *id = global == NONE ? NULL : tt_u64map_slot(objects ? &x->objects_ids : &x->metric_ids, global, &fresh);
    if (!id || (fresh && TT_RESERVE(x->metrics, x->metric_cap, x->metric_count + 1) != 0)) return x->nomem = 1, NONE;
    if (fresh) {
        metric *m = &x->metrics[x->metric_count];
        *m = (metric){{global}, objects};
        if (objects) {
            static const char *const members[OBJECTS_MEMBERS] = {"created", "destroyed", "alive"};
            for (size_t i = 0; i < OBJECTS_MEMBERS; i++) {
                char text[TT_STRING_MAX + 32];
                snprintf(text, sizeof text, "objects %s: %s", members[i], p->strings[name]);
                m->names[i] = string(x, text);
            }
        }
        *id = x->metric_count++;
    }
    return (uint32_t)*id;
}

/* A mark: a marker on the location, of a marker definition per name. */
static OTF2_ErrorCode mark(otf2_export *x, const tt_process *p, uint32_t name, uint64_t time, uint64_t location)
{
    uint32_t global = process_string(x, p, name);
    int fresh = 0;
    uint64_t *id = global == NONE ? NULL : tt_u64map_slot(&x->marker_ids, global, &fresh);
    if (!id) return x->nomem = 1, OTF2_SUCCESS;
    OTF2_ErrorCode rc = OTF2_SUCCESS;
    if (fresh) {
        *id = x->marker_count++;
        rc = OTF2_MarkerWriter_WriteDefMarker(x->markers, (OTF2_MarkerRef)*id, "tracetop", p->strings[name],
                                              OTF2_SEVERITY_NONE);
    }
    if (rc == OTF2_SUCCESS)
        rc = OTF2_MarkerWriter_WriteMarker(x->markers, time, 0, (OTF2_MarkerRef)*id, OTF2_MARKER_SCOPE_LOCATION,
                                           location, p->strings[name]);
    return rc;
}

/* ---- MPI ---- */

/* The communicators of the MPI job when every rank is in the trace (else
 * its messages could not be placed: written as no MPI), and their names;
 * 0, or -1 when out of memory. */
static int map_comms(otf2_export *x)
{
    if (tt_mpi_comms_build(x->trace, &x->comms) != 0) return -1;
    if (!x->comms.complete) return 0;
    x->world_size = x->comms.world_size;
    if (!(x->rank_location = malloc(x->world_size * sizeof *x->rank_location)) ||
        !(x->comm_names = malloc((x->comms.count ? x->comms.count : 1) * sizeof *x->comm_names)))
        return -1;
    for (size_t i = 0; i < x->comms.count; i++) {
        char name[64];
        tt_mpi_comm_name(&x->comms, (uint32_t)i, name, sizeof name);
        x->comm_names[i] = string(x, name);
    }
    return x->nomem ? -1 : 0;
}

static OTF2_ErrorCode mpi_event(otf2_export *x, OTF2_EvtWriter *w, size_t process, const tt_event *ev)
{
    OTF2_TimeStamp t = ev->time;
    uint32_t comm = tt_mpi_comms_of(&x->comms, process, ev->comm);
    switch (ev->kind) {
    case TT_EV_MPI_SEND:
        return comm == NONE ? OTF2_SUCCESS : OTF2_EvtWriter_MpiSend(w, NULL, t, ev->peer, comm, ev->tag, ev->bytes);
    case TT_EV_MPI_RECV:
        return comm == NONE ? OTF2_SUCCESS : OTF2_EvtWriter_MpiRecv(w, NULL, t, ev->peer, comm, ev->tag, ev->bytes);
    case TT_EV_MPI_ISEND:
        return comm == NONE ? OTF2_SUCCESS
                            : OTF2_EvtWriter_MpiIsend(w, NULL, t, ev->peer, comm, ev->tag, ev->bytes, ev->request);
    case TT_EV_MPI_IRECV:
        return comm == NONE ? OTF2_SUCCESS
                            : OTF2_EvtWriter_MpiIrecv(w, NULL, t, ev->peer, comm, ev->tag, ev->bytes, ev->request);
    case TT_EV_MPI_ISEND_COMPLETE:
        return OTF2_EvtWriter_MpiIsendComplete(w, NULL, t, ev->request);
    case TT_EV_MPI_IRECV_REQUEST:
        return OTF2_EvtWriter_MpiIrecvRequest(w, NULL, t, ev->request);
    case TT_EV_MPI_COLLECTIVE_BEGIN:
        return OTF2_EvtWriter_MpiCollectiveBegin(w, NULL, t);
    case TT_EV_MPI_COLLECTIVE_END:
        /* Numbered as OTF2_CollectiveOp (format.h). A begin needs its end,
         * so one whose communicator is unknown still ends: on the world,
         * which is global communicator 0 as every rank defines it first. */
        return OTF2_EvtWriter_MpiCollectiveEnd(w, NULL, t, ev->op, comm == NONE ? 0 : comm,
                                               ev->root == UINT32_MAX ? OTF2_UNDEFINED_UINT32 : ev->root, ev->sent,
                                               ev->received);
    }
    return OTF2_SUCCESS;
}

/* The groups and communicators, after the location groups and locations. */
static OTF2_ErrorCode write_mpi_definitions(otf2_export *x, OTF2_GlobalDefWriter *w, uint32_t ranks_name)
{
    OTF2_ErrorCode rc = OTF2_GlobalDefWriter_WriteGroup(w, 0, ranks_name, OTF2_GROUP_TYPE_COMM_LOCATIONS,
                                                        OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE, x->world_size,
                                                        x->rank_location);
    uint64_t *members = malloc(x->world_size * sizeof *members);
    if (!members) return x->nomem = 1, rc;
    for (size_t i = 0; rc == OTF2_SUCCESS && i < x->comms.count; i++) {
        const tt_mpi_comm *g = &x->comms.comms[i];
        uint32_t count = 0;
        if (g->kind == TT_COMM_WORLD)
            for (count = 0; count < x->world_size; count++) members[count] = count;
        else if (g->kind == TT_COMM_DERIVED)
            for (count = 0; count < g->listed && count < x->world_size; count++) members[count] = g->members[count];
        rc = OTF2_GlobalDefWriter_WriteGroup(w, (OTF2_GroupRef)(i + 1), x->comm_names[i],
                                             g->kind == TT_COMM_SELF ? OTF2_GROUP_TYPE_COMM_SELF
                                                                     : OTF2_GROUP_TYPE_COMM_GROUP,
                                             OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE, count, members);
        if (rc == OTF2_SUCCESS)
            rc = OTF2_GlobalDefWriter_WriteComm(w, (OTF2_CommRef)i, x->comm_names[i], (OTF2_GroupRef)(i + 1),
                                                g->parent == NONE ? OTF2_UNDEFINED_COMM : g->parent,
                                                OTF2_COMM_FLAG_NONE);
    }
    free(members);
    return rc;
}

static const struct {
    OTF2_Paradigm paradigm;
    OTF2_RegionRole role;
    const char *description;
} region_kinds[] = {
    [0] = {OTF2_PARADIGM_UNKNOWN, OTF2_REGION_ROLE_UNKNOWN, "undefined region"},
    [TT_REGION_PYTHON] = {OTF2_PARADIGM_USER, OTF2_REGION_ROLE_FUNCTION, "Python function"},
    [TT_REGION_C] = {OTF2_PARADIGM_COMPILER, OTF2_REGION_ROLE_FUNCTION, "C function"},
    [TT_REGION_USER] = {OTF2_PARADIGM_USER, OTF2_REGION_ROLE_CODE, "user region"},
    [TT_REGION_MPI] = {OTF2_PARADIGM_MPI, OTF2_REGION_ROLE_FUNCTION, "MPI function"},
    [TT_REGION_GC] = {OTF2_PARADIGM_USER, OTF2_REGION_ROLE_ARTIFICIAL, "garbage collection"},
};

/* Maps the regions of p to the archive's (x->region_map), defining those
 * of a name not seen before. */
static void map_regions(otf2_export *x, const tt_process *p)
{
    free(x->region_map);
    if (!(x->region_map = malloc((p->region_count + 1) * sizeof *x->region_map))) {
        x->nomem = 1;
        return;
    }
    for (size_t id = 0; !x->nomem && id <= p->region_count; id++) {
        const tt_region *r = &p->regions[id];
        uint32_t name = string(x, r->name);
        int fresh = 0;
        uint64_t *global = name == NONE ? NULL : tt_u64map_slot(&x->region_ids, name, &fresh);
        if (!global || (fresh && TT_RESERVE(x->regions, x->region_cap, x->region_count + 1) != 0)) {
            x->nomem = 1;
            return;
        }
        if (fresh) {
            x->regions[x->region_count] = (global_region){
                name, optional_string(x, r->file), string(x, region_kinds[r->kind].description), r->line, r->kind};
            *global = x->region_count++;
        }
        x->region_map[id] = (uint32_t)*global;
    }
}

/* Writes the events of one stream as location `loc`. */
static OTF2_ErrorCode write_location(otf2_export *x, size_t process, const tt_process *p, tt_cursor *c, uint64_t loc)
{
    OTF2_EvtWriter *w = OTF2_Archive_GetEvtWriter(x->archive, loc);
    if (!w) return OTF2_ERROR_MEM_FAULT;
    const uint32_t *regions = x->region_map;
    OTF2_ErrorCode rc = OTF2_SUCCESS;
    tt_event ev;
    while (rc == OTF2_SUCCESS && !x->nomem && tt_cursor_next(c, &ev)) {
        OTF2_TimeStamp t = ev.time;
        uint32_t id;
        switch (ev.kind) {
        case TT_EV_ENTER:
            rc = OTF2_EvtWriter_Enter(w, NULL, t, regions[ev.region]);
            break;
        case TT_EV_LEAVE:
            rc = OTF2_EvtWriter_Leave(w, NULL, t, regions[ev.region]);
            break;
        case TT_EV_PARAM_INT:
            if ((id = parameter_of(x, p, ev.name, OTF2_PARAMETER_TYPE_INT64)) != NONE)
                rc = OTF2_EvtWriter_ParameterInt(w, NULL, t, id, ev.int_value);
            break;
        case TT_EV_PARAM_UINT:
            if ((id = parameter_of(x, p, ev.name, OTF2_PARAMETER_TYPE_UINT64)) != NONE)
                rc = OTF2_EvtWriter_ParameterUnsignedInt(w, NULL, t, id, ev.uint_value);
            break;
        case TT_EV_PARAM_STRING: {
            uint32_t value = string_n(x, ev.str, ev.str_len);
            if ((id = parameter_of(x, p, ev.name, OTF2_PARAMETER_TYPE_STRING)) != NONE && value != NONE)
                rc = OTF2_EvtWriter_ParameterString(w, NULL, t, id, value);
            break;
        }
        case TT_EV_COUNTER:
            if ((id = metric_of(x, p, ev.name, 0)) != NONE) {
                OTF2_Type type = OTF2_TYPE_DOUBLE;
                OTF2_MetricValue value = {.floating_point = ev.double_value};
                rc = OTF2_EvtWriter_Metric(w, NULL, t, id, 1, &type, &value);
            }
            break;
        case TT_EV_MARK:
            rc = mark(x, p, ev.name, t, loc);
            break;
        case TT_EV_OBJECTS:
            if (tt_objects_series_add(&x->objects, &ev) != 0) x->nomem = 1;
            break;
        case TT_EV_RECORDING_OFF:
        case TT_EV_RECORDING_ON:
            rc = OTF2_EvtWriter_MeasurementOnOff(
                w, NULL, t, ev.kind == TT_EV_RECORDING_ON ? OTF2_MEASUREMENT_ON : OTF2_MEASUREMENT_OFF);
            break;
        default: /* MPI, STREAM_END */
            if (ev.kind >= TT_EV_MPI_SEND && x->world_size) rc = mpi_event(x, w, process, &ev);
            break;
        }
        if (ev.time > x->last_time) x->last_time = ev.time;
    }
    uint64_t events = 0;
    if (rc == OTF2_SUCCESS) rc = OTF2_EvtWriter_GetNumberOfEvents(w, &events);
    x->locations[x->location_count - 1].events = events;
    OTF2_ErrorCode closed = OTF2_Archive_CloseEvtWriter(x->archive, w);
    return rc != OTF2_SUCCESS ? rc : closed;
}

/* The objects of process p over time, from the series of its streams just
 * written, as a location of its own in group `group`: a metric location
 * with, at each batch time, a metric event per type counted then. */
static OTF2_ErrorCode write_objects(otf2_export *x, const tt_process *p, uint32_t group)
{
    tt_objects_series *s = &x->objects;
    if (tt_objects_series_finish(s) != 0 || TT_RESERVE(x->locations, x->location_cap, x->location_count + 1) != 0)
        return x->nomem = 1, OTF2_SUCCESS;
    if (!s->count) return OTF2_SUCCESS;
    uint64_t loc = x->location_count;
    x->locations[x->location_count++] = (location){string(x, "objects"), group, 0, OTF2_LOCATION_TYPE_METRIC};
    OTF2_EvtWriter *w = OTF2_Archive_GetEvtWriter(x->archive, loc);
    if (!w) return OTF2_ERROR_MEM_FAULT;
    OTF2_ErrorCode rc = OTF2_SUCCESS;
    static const OTF2_Type types[OBJECTS_MEMBERS] = {OTF2_TYPE_UINT64, OTF2_TYPE_UINT64, OTF2_TYPE_UINT64};
    for (size_t i = 0; rc == OTF2_SUCCESS && !x->nomem && i < s->count; i++) {
        const tt_objects_point *point = &s->points[i];
        uint32_t id = metric_of(x, p, point->type, 1);
        OTF2_MetricValue values[OBJECTS_MEMBERS] = {{.unsigned_int = point->created},
                                                    {.unsigned_int = point->destroyed},
                                                    {.unsigned_int = tt_objects_alive(point)}};
        if (id != NONE) rc = OTF2_EvtWriter_Metric(w, NULL, point->time, id, OBJECTS_MEMBERS, types, values);
        if (point->time > x->last_time) x->last_time = point->time;
    }
    uint64_t events = 0;
    if (rc == OTF2_SUCCESS) rc = OTF2_EvtWriter_GetNumberOfEvents(w, &events);
    x->locations[loc].events = events;
    OTF2_ErrorCode closed = OTF2_Archive_CloseEvtWriter(x->archive, w);
    return rc != OTF2_SUCCESS ? rc : closed;
}

/* The stream of p that is its first location. */
static size_t first_stream(const tt_process *p)
{
    size_t s = 0;
    while (s < p->thread_count && !p->threads[s].present) s++;
    return s;
}

static OTF2_ErrorCode write_events(otf2_export *x, tt_export_result *r, tt_error *err, int *failed)
{
    OTF2_ErrorCode rc = OTF2_SUCCESS;
    for (size_t k = 0; rc == OTF2_SUCCESS && !*failed && k < tt_trace_process_count(x->trace); k++) {
        size_t i = x->order[k];
        const tt_process *p = tt_trace_process(x->trace, i);
        map_regions(x, p);
        if (x->nomem) break;
        free(x->process_strings);
        if (!(x->process_strings = malloc((p->string_count + 1) * sizeof *x->process_strings))) {
            x->nomem = 1;
            break;
        }
        memset(x->process_strings, 0xff, (p->string_count + 1) * sizeof *x->process_strings);
        tt_objects_series_reset(&x->objects);
        for (size_t s = 0; rc == OTF2_SUCCESS && s < p->thread_count; s++) {
            if (!p->threads[s].present) continue;
            tt_cursor *c;
            if (tt_cursor_open(x->trace, p, s, &c, err) != 0) {
                *failed = 1;
                break;
            }
            uint32_t name = string(x, p->threads[s].name);
            if (TT_RESERVE(x->locations, x->location_cap, x->location_count + 1) != 0) x->nomem = 1;
            if (!x->nomem) {
                x->locations[x->location_count++] = (location){name, (uint32_t)k, 0, OTF2_LOCATION_TYPE_CPU_THREAD};
                if (x->world_size && p->mpi_size && s == first_stream(p))
                    x->rank_location[p->mpi_rank] = x->location_count - 1;
                rc = write_location(x, i, p, c, x->location_count - 1);
            }
            if (tt_export_stream_done(c, r) != 0) x->nomem = 1;
            tt_cursor_close(c);
            if (x->nomem) break;
        }
        if (rc == OTF2_SUCCESS && !*failed && !x->nomem) rc = write_objects(x, p, (uint32_t)k);
    }
    return rc;
}

/* The global definitions, strings first: every string is named by now but
 * those of the definitions themselves, which are made first. The system
 * tree: node 0 the machine, below it a node per host (in the order of the
 * location groups), below each its location groups. */
static OTF2_ErrorCode write_definitions(otf2_export *x)
{
    const tt_trace *t = x->trace;
    size_t nproc = tt_trace_process_count(t);
    uint32_t machine = string(x, "machine"), node_class = string(x, "node"), unit = string(x, "");
    uint32_t objects_unit = string(x, "objects");
    uint32_t ranks_name = string(x, "MPI ranks");
    uint32_t *group_names = malloc(nproc * sizeof *group_names), *group_nodes = malloc(nproc * sizeof *group_nodes);
    uint32_t *node_names = malloc(nproc * sizeof *node_names), node_count = 0;
    tt_u64map node_ids = {0}; /* host (global string) -> its node's index among the hosts */
    if (!group_names || !group_nodes || !node_names) x->nomem = 1;
    for (size_t k = 0; !x->nomem && k < nproc; k++) {
        const tt_process *p = tt_trace_process(t, x->order[k]);
        char name[TT_STRING_MAX + 48];
        if (x->world_size && p->mpi_size)
            snprintf(name, sizeof name, "MPI Rank %" PRIu64, p->mpi_rank);
        else
            snprintf(name, sizeof name, "process %" PRIu64 " (%s)", p->pid, p->name);
        group_names[k] = string(x, name);
        const char *host = tt_export_host(p);
        uint32_t host_name = string(x, *host ? host : "unknown host");
        int fresh = 0;
        uint64_t *node = host_name == NONE ? NULL : tt_u64map_slot(&node_ids, host_name, &fresh);
        if (!node) {
            x->nomem = 1;
            break;
        }
        if (fresh) {
            node_names[node_count] = host_name;
            *node = node_count++;
        }
        group_nodes[k] = (uint32_t)*node + 1;
    }
    tt_u64map_free(&node_ids);
    OTF2_ErrorCode rc = OTF2_SUCCESS;
    OTF2_GlobalDefWriter *w = x->nomem ? NULL : OTF2_Archive_GetGlobalDefWriter(x->archive);
    if (!w && !x->nomem) rc = OTF2_ERROR_MEM_FAULT;
    if (w)
        rc = OTF2_GlobalDefWriter_WriteClockProperties(w, 1000000000u, 0, x->last_time + 1,
                                                       tt_export_epoch_realtime(t));
    for (size_t i = 0; w && rc == OTF2_SUCCESS && i < x->string_count; i++)
        rc = OTF2_GlobalDefWriter_WriteString(w, (OTF2_StringRef)i, x->strings[i]);
    if (w && rc == OTF2_SUCCESS)
        rc = OTF2_GlobalDefWriter_WriteSystemTreeNode(w, 0, machine, machine, OTF2_UNDEFINED_SYSTEM_TREE_NODE);
    for (uint32_t n = 0; w && rc == OTF2_SUCCESS && n < node_count; n++)
        rc = OTF2_GlobalDefWriter_WriteSystemTreeNode(w, n + 1, node_names[n], node_class, 0);
    for (size_t k = 0; w && rc == OTF2_SUCCESS && k < nproc; k++)
        rc = OTF2_GlobalDefWriter_WriteLocationGroup(w, (OTF2_LocationGroupRef)k, group_names[k],
                                                     OTF2_LOCATION_GROUP_TYPE_PROCESS, group_nodes[k],
                                                     OTF2_UNDEFINED_LOCATION_GROUP);
    for (size_t i = 0; w && rc == OTF2_SUCCESS && i < x->location_count; i++) {
        const location *l = &x->locations[i];
        rc = OTF2_GlobalDefWriter_WriteLocation(w, (OTF2_LocationRef)i, l->name, l->type, l->events, l->group);
    }
    if (w && rc == OTF2_SUCCESS && x->world_size) rc = write_mpi_definitions(x, w, ranks_name);
    for (size_t i = 0; w && rc == OTF2_SUCCESS && i < x->region_count; i++) {
        const global_region *r = &x->regions[i];
        rc = OTF2_GlobalDefWriter_WriteRegion(w, (OTF2_RegionRef)i, r->name, r->name, r->description,
                                              region_kinds[r->kind].role, region_kinds[r->kind].paradigm,
                                              OTF2_REGION_FLAG_NONE, r->file, r->line, 0);
    }
    for (size_t i = 0; w && rc == OTF2_SUCCESS && i < x->parameter_count; i++)
        rc = OTF2_GlobalDefWriter_WriteParameter(w, (OTF2_ParameterRef)i, x->parameters[i].name, x->parameters[i].type);
    /* A counter's member: a double at a point; the objects': counts since
     * counting began, and alive at a point. */
    OTF2_MetricMemberRef next_member = 0;
    for (size_t i = 0; w && rc == OTF2_SUCCESS && i < x->metric_count; i++) {
        const metric *m = &x->metrics[i];
        size_t count = m->objects ? OBJECTS_MEMBERS : 1;
        OTF2_MetricMemberRef members[OBJECTS_MEMBERS];
        for (size_t j = 0; rc == OTF2_SUCCESS && j < count; j++) {
            members[j] = next_member++;
            OTF2_MetricMode mode = m->objects && j < 2 ? OTF2_METRIC_ACCUMULATED_START : OTF2_METRIC_ABSOLUTE_POINT;
            rc = OTF2_GlobalDefWriter_WriteMetricMember(w, members[j], m->names[j], m->names[j], OTF2_METRIC_TYPE_USER,
                                                        mode, m->objects ? OTF2_TYPE_UINT64 : OTF2_TYPE_DOUBLE,
                                                        OTF2_BASE_DECIMAL, 0, m->objects ? objects_unit : unit);
        }
        if (rc == OTF2_SUCCESS)
            rc = OTF2_GlobalDefWriter_WriteMetricClass(w, (OTF2_MetricRef)i, (uint8_t)count, members,
                                                       OTF2_METRIC_ASYNCHRONOUS, OTF2_RECORDER_KIND_ABSTRACT);
    }
    free(group_names);
    free(group_nodes);
    free(node_names);
    return rc;
}

/* Empty local definitions, one per location: readers open them. */
static OTF2_ErrorCode write_local_definitions(otf2_export *x)
{
    OTF2_ErrorCode rc = OTF2_Archive_OpenDefFiles(x->archive);
    for (size_t i = 0; rc == OTF2_SUCCESS && i < x->location_count; i++) {
        OTF2_DefWriter *w = OTF2_Archive_GetDefWriter(x->archive, (OTF2_LocationRef)i);
        rc = w ? OTF2_Archive_CloseDefWriter(x->archive, w) : OTF2_ERROR_MEM_FAULT;
    }
    OTF2_ErrorCode closed = OTF2_Archive_CloseDefFiles(x->archive);
    return rc != OTF2_SUCCESS ? rc : closed;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* The files of archive NAME in DIR besides its anchor, as libotf2 names
 * them: definitions, markers, and the directory of the locations' files. */
static const char *const archive_parts[] = {"%s/%s.def", "%s/%s.marker", "%s/%s"};
#define PARTS (sizeof archive_parts / sizeof *archive_parts)

/* Converting again replaces an earlier archive of the same name, as the
 * other converters replace their file; libotf2 would refuse to. Only what
 * an anchor file says is an archive is removed. */
static int remove_old_archive(const char *anchor, const char *dir, const char *name, tt_error *err)
{
    if (access(anchor, F_OK) != 0) return 0;
    if (remove(anchor) != 0) return tt_fail_errno(err, "cannot replace %s", anchor);
    for (size_t i = 0; i < PARTS; i++) {
        char path[8192];
        snprintf(path, sizeof path, archive_parts[i], dir, name);
        if (nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT)
            return tt_fail_errno(err, "cannot replace %s", path);
    }
    return 0;
}

/* Whether folder `path` holds an experiment (its MANIFEST.md or trace/):
 * `convert EXP -o EXP.otf2` names the archive's folder of locations EXP. */
static int holds_experiment(const char *path)
{
    static const char *const marks[] = {"MANIFEST.md", "trace"};
    for (size_t i = 0; i < sizeof marks / sizeof *marks; i++) {
        char inside[8192 + 16];
        struct stat st;
        if ((size_t)snprintf(inside, sizeof inside, "%s/%s", path, marks[i]) < sizeof inside && lstat(inside, &st) == 0)
            return 1;
    }
    return 0;
}

/* libotf2 opens an archive's files by name, following links: an archive is
 * written only where none of its names is a link or another user's file
 * (file.h), which leaves the moment between this look and libotf2's open.
 * Nor is it written over what is not an earlier archive of the same name
 * (its parts there without its anchor, or an experiment as its folder):
 * replacing an archive removes its parts, which would remove those. */
static int check_names(const char *anchor, const char *dir, const char *name, tt_error *err)
{
    struct stat st;
    int earlier_archive = lstat(anchor, &st) == 0;
    for (size_t i = 0; i <= PARTS; i++) {
        char path[8192];
        if (i == PARTS)
            snprintf(path, sizeof path, "%s", anchor);
        else
            snprintf(path, sizeof path, archive_parts[i], dir, name);
        if (lstat(path, &st) != 0) continue;
        if (S_ISLNK(st.st_mode) || st.st_uid != geteuid())
            return tt_fail(err, "cannot write %s: %s", path, tt_output_problem(S_ISLNK(st.st_mode) ? ELOOP : EPERM));
        if (i < PARTS && (!earlier_archive || (S_ISDIR(st.st_mode) && holds_experiment(path))))
            return tt_fail(err,
                           "cannot write %s: the archive's %s is there already and is not an earlier archive's; "
                           "give -o another name",
                           anchor, path);
    }
    return 0;
}

/* Splits "DIR/NAME.otf2" into DIR and NAME, malloc'd. */
static int split_anchor(const char *path, char **dir, char **name, tt_error *err)
{
    size_t len = strlen(path);
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    if (len < 5 || strcmp(path + len - 5, ".otf2") != 0 || path + len - 5 == base)
        return tt_fail(err, "an OTF2 archive is named by its anchor file, NAME.otf2: not %s", path);
    *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    *name = strndup(base, (size_t)(path + len - 5 - base));
    if (*dir && *name) return 0;
    free(*dir);
    free(*name);
    return tt_fail(err, "out of memory");
}

static void export_free(otf2_export *x)
{
    for (size_t i = 0; i < x->string_count; i++) free(x->strings[i]);
    free(x->strings);
    free(x->string_slots);
    free(x->process_strings);
    free(x->order);
    free(x->region_map);
    free(x->regions);
    tt_u64map_free(&x->region_ids);
    free(x->locations);
    free(x->parameters);
    tt_u64map_free(&x->parameter_ids);
    free(x->metrics);
    tt_u64map_free(&x->metric_ids);
    tt_u64map_free(&x->objects_ids);
    tt_objects_series_free(&x->objects);
    tt_u64map_free(&x->marker_ids);
    tt_mpi_comms_free(&x->comms);
    free(x->comm_names);
    free(x->rank_location);
}

/* The size of the archive's files: the anchor, NAME.def and NAME/. */
static __thread uint64_t archive_bytes;

static int add_size(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)path, (void)ftw;
    if (flag == FTW_F) archive_bytes += (uint64_t)st->st_size;
    return 0;
}

static uint64_t size_of(const char *anchor, const char *dir, const char *name)
{
    struct stat st;
    archive_bytes = stat(anchor, &st) == 0 ? (uint64_t)st.st_size : 0;
    for (size_t i = 0; i < PARTS; i++) {
        char path[8192];
        snprintf(path, sizeof path, archive_parts[i], dir, name);
        nftw(path, add_size, 16, FTW_PHYS);
    }
    return archive_bytes;
}

int tt_export_otf2(const tt_trace *t, const char *path, tt_export_result *r, tt_error *err)
{
    char *dir = NULL, *name = NULL;
    if (split_anchor(path, &dir, &name, err) != 0) return -1;
    int status = tt_export_trace_problems(t, r) != 0 ? tt_fail(err, "out of memory") : 0;
    if (status == 0 && access(dir, W_OK) != 0) status = tt_fail_errno(err, "cannot write %s", path);
    if (status == 0) status = check_names(path, dir, name, err);
    if (status == 0) status = remove_old_archive(path, dir, name, err);
    if (status != 0) {
        free(dir);
        free(name);
        return -1;
    }
    OTF2_Error_RegisterCallback(on_otf2_error, NULL);
    otf2_message[0] = '\0';
    otf2_export x = {.trace = t};
    if (map_comms(&x) != 0) x.nomem = 1;
    x.order = tt_export_process_order(t);
    x.archive = x.order ? OTF2_Archive_Open(dir, name, OTF2_FILEMODE_WRITE, EVENT_CHUNK, DEF_CHUNK,
                                            OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE)
                        : NULL;
    int failed = 0;
    OTF2_ErrorCode rc = x.archive ? OTF2_SUCCESS : OTF2_ERROR_MEM_FAULT;
    if (rc == OTF2_SUCCESS) rc = OTF2_Archive_SetFlushCallbacks(x.archive, &flush_callbacks, NULL);
    if (rc == OTF2_SUCCESS) rc = OTF2_Archive_SetMemoryCallbacks(x.archive, &memory_callbacks, NULL);
    if (rc == OTF2_SUCCESS) rc = OTF2_Archive_SetSerialCollectiveCallbacks(x.archive);
    if (rc == OTF2_SUCCESS) rc = OTF2_Archive_SetCreator(x.archive, "tracetop");
    if (rc == OTF2_SUCCESS) rc = OTF2_Archive_OpenEvtFiles(x.archive);
    if (rc == OTF2_SUCCESS && !(x.markers = OTF2_Archive_GetMarkerWriter(x.archive))) rc = OTF2_ERROR_MEM_FAULT;
    if (rc == OTF2_SUCCESS) rc = write_events(&x, r, err, &failed);
    if (rc == OTF2_SUCCESS && !failed && !x.nomem) rc = OTF2_Archive_CloseMarkerWriter(x.archive, x.markers);
    if (rc == OTF2_SUCCESS && !failed && !x.nomem) rc = OTF2_Archive_CloseEvtFiles(x.archive);
    if (rc == OTF2_SUCCESS && !failed && !x.nomem) rc = write_local_definitions(&x);
    if (rc == OTF2_SUCCESS && !failed && !x.nomem) rc = write_definitions(&x);
    OTF2_ErrorCode closed = x.archive ? OTF2_Archive_Close(x.archive) : OTF2_SUCCESS;
    if (rc == OTF2_SUCCESS) rc = closed;
    export_free(&x);

    if (failed)
        status = -1;
    else if (x.nomem)
        status = tt_fail(err, "out of memory");
    else if (rc != OTF2_SUCCESS)
        status = tt_fail(err, "cannot write %s: %s", path,
                         *otf2_message ? otf2_message : OTF2_Error_GetDescription(rc));
    if (status != 0) {
        tt_error ignored;
        remove_old_archive(path, dir, name, &ignored);
    } else {
        r->bytes = size_of(path, dir, name);
    }
    free(dir);
    free(name);
    return status;
}

/* export_cubex.c -- a CUBE4 call-path profile (.cubex), written without
 * cubelib: a tar archive of
 *
 *     anchor.xml            metrics, regions, the call tree (cnodes), the system tree
 *     N.index, N.data       metric N, a value per call path and thread:
 *                           visits, time (exclusive, s), min_time and max_time
 *                           (of one visit, inclusive, s), bytes_sent,
 *                           bytes_received (MPI, point-to-point and
 *                           collective), messages (MPI point-to-point, sent
 *                           and received), Score-P's metrics; with objects
 *                           counted (--objects), objects_created,
 *                           bytes_created and objects_alive (at the end)
 *
 * Regions are merged by name over processes, as `tracetop summary` merges
 * them, and the call trees of all threads are merged into one: a cnode per
 * call path, with a value per location (thread). Cube needs one root, so
 * every path hangs below an artificial region "<program>", whose own time
 * on a thread is the thread's span outside any recorded call.
 *
 * Visits and time come from the call-path profile (profile.h); the others,
 * which it does not keep, from a second read of each stream that follows
 * the same call paths. Objects are counted per creating region, not per
 * call path (format.h): a region's are spread over its call paths and
 * threads by their visits, exactly in sum (a region called from one place
 * has them all there), and those made outside any recorded call go to
 * "<program>". The system tree is Score-P's: the machine, a node
 * per host, the processes below their host in rank order (MPI ranks as
 * "MPI Rank r" of rank r), their threads.
 *
 * Data files hold a row per cnode, in the depth-first order of the cnode
 * ids (what Cube calls the tree index of an exclusive metric), each row a
 * value per location; the index files list those tree indices. Everything
 * little-endian, as the index file's leading 1 tells readers.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "converters.h"
#include "grow.h"
#include "out.h"
#include "registry.h"
#include "u64map.h"

#define NONE UINT32_MAX
#define OBJECT_METRICS 3 /* the last metrics: objects_created, bytes_created, objects_alive */

typedef struct cnode {
    uint32_t region; /* merged region; prof->region_count is "<program>" */
    uint32_t parent, first_child, last_child, next_sibling;
    uint32_t order; /* depth-first position: its id in the file */
} cnode;

typedef struct cube {
    const tt_profile *prof;
    size_t *order;   /* process indices in rank order (tt_export_process_order) */
    size_t *columns; /* by profile thread: its location, in the order of the system tree */
    int frozen;      /* the call tree is complete: child() finds, never adds */
    cnode *cnodes;
    size_t count, cap;
    tt_u64map cnode_of;      /* (parent, region) -> index in cnodes */
    uint32_t *thread_cnodes; /* the thread being merged: its node -> cnode */
    size_t thread_cap;
    const uint32_t *map;
    size_t metrics; /* the metrics written: without objects counted, not the object metrics */
} cube;

/* The cnode for region under parent, made on first sight; NONE when out of memory. */
static uint32_t child(cube *c, uint32_t parent, uint32_t region)
{
    uint64_t key = tt_u64_pair(parent, region);
    uint64_t *found = tt_u64map_find(&c->cnode_of, key);
    if (found) return (uint32_t)*found;
    int fresh;
    uint64_t *slot;
    if (c->frozen || c->count >= NONE - 1 || TT_RESERVE(c->cnodes, c->cap, c->count + 1) != 0 ||
        !(slot = tt_u64map_slot(&c->cnode_of, key, &fresh)))
        return NONE;
    uint32_t id = (uint32_t)c->count++;
    c->cnodes[id] = (cnode){region, parent, NONE, NONE, NONE, 0};
    if (parent != NONE) {
        cnode *p = &c->cnodes[parent];
        if (p->last_child == NONE)
            p->first_child = id;
        else
            c->cnodes[p->last_child].next_sibling = id;
        p->last_child = id;
    }
    *slot = id;
    return id;
}

/* Merges a thread's tree below the root (cnode 0); fills c->thread_cnodes. */
static int merge_thread(cube *c, const tt_profile_thread *th)
{
    if (TT_RESERVE(c->thread_cnodes, c->thread_cap, th->node_count) != 0) return -1;
    for (size_t n = 0; n < th->node_count; n++) {
        /* A node's parent comes before it in the profile. */
        uint32_t parent = th->nodes[n].parent == NONE ? 0 : c->thread_cnodes[th->nodes[n].parent];
        uint32_t id = child(c, parent, c->map[th->nodes[n].region]);
        if (id == NONE) return -1;
        c->thread_cnodes[n] = id;
    }
    return 0;
}

/* Numbers the cnodes depth first: Cube's order for exclusive metrics. */
static uint32_t *depth_first(cube *c)
{
    uint32_t *order = malloc(c->count * sizeof *order); /* position -> cnode */
    if (!order) return NULL;
    uint32_t n = 0, next = 0;
    while (n != NONE) {
        c->cnodes[n].order = next;
        order[next++] = n;
        if (c->cnodes[n].first_child != NONE) {
            n = c->cnodes[n].first_child;
            continue;
        }
        while (n != NONE && c->cnodes[n].next_sibling == NONE) n = c->cnodes[n].parent;
        if (n != NONE) n = c->cnodes[n].next_sibling;
    }
    return order;
}

/* Whether the process at position k of c->order is the first there of its
 * host: the one that opens the host's node of the system tree. */
static int first_on_host(const cube *c, size_t k)
{
    const char *host = tt_export_host(tt_trace_process(c->prof->trace, c->order[k]));
    for (size_t g = 0; g < k; g++)
        if (strcmp(tt_export_host(tt_trace_process(c->prof->trace, c->order[g])), host) == 0) return 0;
    return 1;
}

/* The profile's threads as the system tree lists them: hosts in the order
 * of their first process, on each its processes in rank order, their
 * threads in profile order. c->columns[thread] is the thread's location. */
static int number_locations(cube *c)
{
    const tt_profile *prof = c->prof;
    const tt_trace *t = prof->trace;
    size_t nproc = tt_trace_process_count(t), location = 0;
    if (!(c->order = tt_export_process_order(t)) ||
        !(c->columns = malloc((prof->thread_count ? prof->thread_count : 1) * sizeof *c->columns)))
        return -1;
    for (size_t k = 0; k < nproc; k++) {
        if (!first_on_host(c, k)) continue;
        const char *host = tt_export_host(tt_trace_process(t, c->order[k]));
        for (size_t g = k; g < nproc; g++) {
            if (strcmp(tt_export_host(tt_trace_process(t, c->order[g])), host) != 0) continue;
            for (size_t th = 0; th < prof->thread_count; th++)
                if (prof->threads[th].process == c->order[g]) c->columns[th] = location++;
        }
    }
    return 0;
}

/* ---- the metrics the profile does not keep: a second read ---- */

/* Per cnode and location, as the data files hold them. */
typedef struct extra {
    uint64_t *min_ns, *max_ns, *sent, *received, *messages;
} extra;

typedef struct open_call {
    uint32_t cnode;
    uint64_t entered;
} open_call;

/* Reads stream `stream` of process `process` again, following its call
 * paths in the cnodes (which hold them all: the profile made them; a path
 * that is not there, which the profile did not count, counts nothing), into
 * column `column` of x. 0, or -1 (err set) when it cannot be read. */
static int read_extra(cube *c, size_t process, size_t stream, size_t column, extra *x, tt_error *err)
{
    const tt_process *p = tt_trace_process(c->prof->trace, process);
    size_t locations = c->prof->thread_count, depth = 0, cap = 0;
    open_call *stack = NULL;
    tt_cursor *cursor;
    if (tt_cursor_open(c->prof->trace, p, stream, &cursor, err) != 0) return -1;
    int rc = 0;
    tt_event ev;
    while (rc == 0 && tt_cursor_next(cursor, &ev)) {
        uint32_t at = depth ? stack[depth - 1].cnode : 0;
        size_t cell = (size_t)at * locations + column;
        if (at == NONE && ev.kind != TT_EV_ENTER && ev.kind != TT_EV_LEAVE) continue;
        switch (ev.kind) {
        case TT_EV_ENTER:
            if (TT_RESERVE(stack, cap, depth + 1) != 0) {
                rc = tt_fail(err, "out of memory");
                break;
            }
            stack[depth++] = (open_call){at == NONE ? NONE : child(c, at, c->map[ev.region]), ev.time};
            break;
        case TT_EV_LEAVE:
            if (depth && stack[depth - 1].cnode == NONE) {
                depth--;
            } else if (depth) {
                uint64_t spent = ev.time - stack[depth - 1].entered;
                if (spent < x->min_ns[cell]) x->min_ns[cell] = spent;
                if (spent > x->max_ns[cell]) x->max_ns[cell] = spent;
                depth--;
            }
            break;
        case TT_EV_MPI_SEND:
        case TT_EV_MPI_ISEND:
            x->sent[cell] += ev.bytes;
            x->messages[cell]++;
            break;
        case TT_EV_MPI_RECV:
        case TT_EV_MPI_IRECV:
            x->received[cell] += ev.bytes;
            x->messages[cell]++;
            break;
        case TT_EV_MPI_COLLECTIVE_END:
            x->sent[cell] += ev.sent;
            x->received[cell] += ev.received;
            break;
        default:
            break;
        }
    }
    free(stack);
    tt_cursor_close(cursor);
    return rc;
}

/* ---- objects: counted per creating region, spread over its call paths ---- */

/* floor(total * part / whole), for part <= whole, whole > 0. */
static uint64_t share(uint64_t total, uint64_t part, uint64_t whole)
{
    return (uint64_t)((unsigned __int128)total * part / whole);
}

/* Fills out[k] (the object metrics), per cnode and location: each region's
 * objects (prof->objects) spread over the cells of its cnodes by their
 * visits, each cell the difference of two running shares so that the cells
 * add up to the region's exactly; the objects of a region without a cnode,
 * and those made outside any recorded call, go to "<program>" (cnode 0).
 * 0, or -1 when out of memory. */
static int spread_objects(const cube *c, const uint64_t *visits, size_t locations, uint64_t *const *out)
{
    const tt_profile *prof = c->prof;
    size_t regions = prof->region_count + 1, program = prof->region_count;
    uint64_t *totals = calloc(regions * OBJECT_METRICS, sizeof *totals); /* per region: as the metrics */
    uint64_t *whole = calloc(regions * 2, sizeof *whole); /* per region: its visits, those spread over so far */
    int rc = totals && whole ? 0 : -1;
    for (size_t n = 0; rc == 0 && n < c->count; n++)
        for (size_t l = 0; l < locations; l++) whole[(size_t)c->cnodes[n].region * 2] += visits[n * locations + l];
    for (size_t i = 0; rc == 0 && i < prof->object_count; i++) {
        const tt_profile_objects *o = &prof->objects[i];
        size_t r = o->region == NONE || !whole[(size_t)o->region * 2] ? program : o->region;
        totals[r * OBJECT_METRICS] += o->created;
        totals[r * OBJECT_METRICS + 1] += o->created * o->size;
        totals[r * OBJECT_METRICS + 2] += o->created > o->destroyed ? o->created - o->destroyed : 0;
    }
    for (size_t n = 0; rc == 0 && n < c->count; n++) {
        size_t r = c->cnodes[n].region;
        for (size_t l = 0; l < locations; l++) {
            size_t cell = n * locations + l;
            uint64_t before = whole[r * 2 + 1], after = before + visits[cell];
            whole[r * 2 + 1] = after;
            for (size_t k = 0; after > before && k < OBJECT_METRICS; k++) {
                uint64_t total = totals[r * OBJECT_METRICS + k];
                out[k][cell] = share(total, after, whole[r * 2]) - share(total, before, whole[r * 2]);
            }
        }
    }
    free(totals);
    free(whole);
    return rc;
}

/* ---- XML ---- */

static void xml_text(tt_out *o, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&':
            tt_out_str(o, "&amp;");
            break;
        case '<':
            tt_out_str(o, "&lt;");
            break;
        case '>':
            tt_out_str(o, "&gt;");
            break;
        case '"':
            tt_out_str(o, "&quot;");
            break;
        default:
            /* Control characters are not allowed in XML 1.0. */
            tt_out_byte(o, (uint8_t)*s < 0x20 && *s != '\t' && *s != '\n' ? '?' : (uint8_t)*s);
        }
    }
}

static void element(tt_out *o, const char *indent, const char *tag, const char *text)
{
    tt_out_printf(o, "%s<%s>", indent, tag);
    xml_text(o, text);
    tt_out_printf(o, "</%s>\n", tag);
}

static const struct {
    const char *name, *display, *type, *unit, *description;
} metrics[] = {
    {"visits", "Visits", "UINT64", "occ", "Number of visits"},
    {"time", "Time", "DOUBLE", "sec", "Time spent in a call path, without its callees"},
    {"min_time", "Minimum Inclusive Time", "MINDOUBLE", "sec", "The shortest visit of a call path, with its callees"},
    {"max_time", "Maximum Inclusive Time", "MAXDOUBLE", "sec", "The longest visit of a call path, with its callees"},
    {"bytes_sent", "Bytes sent", "UINT64", "bytes", "MPI bytes sent (point-to-point and collective)"},
    {"bytes_received", "Bytes received", "UINT64", "bytes", "MPI bytes received (point-to-point and collective)"},
    {"messages", "Messages", "UINT64", "occ", "MPI point-to-point messages sent and received"},
    {"objects_created", "Objects created", "UINT64", "occ",
     "Objects created (--objects): a region's, spread over its call paths by their visits"},
    {"bytes_created", "Bytes created", "UINT64", "bytes",
     "Bytes of the objects created (their fixed part, where the type's size is known)"},
    {"objects_alive", "Objects alive at the end", "UINT64", "occ",
     "Objects created and not destroyed when the measurement ended (leak candidates)"},
};
#define METRICS (sizeof metrics / sizeof *metrics)

static const char *paradigm(uint8_t kind)
{
    return kind == TT_REGION_C ? "compiler" : kind == TT_REGION_MPI ? "mpi" : "user";
}

static void anchor(tt_out *o, const cube *c)
{
    const tt_profile *prof = c->prof;
    tt_out_str(o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<cube version=\"4.5\">\n"
                  "<attr key=\"CUBE_CT_AGGR\" value=\"SUM\"/>\n<attr key=\"Creator\" value=\"tracetop\"/>\n"
                  "<doc>\n<mirrors>\n</mirrors>\n</doc>\n<metrics title=\"Metric tree\">\n");
    for (size_t m = 0; m < c->metrics; m++) {
        tt_out_printf(o, "<metric id=\"%zu\" type=\"EXCLUSIVE\" viztype=\"NORMAL\">\n", m);
        element(o, "", "disp_name", metrics[m].display);
        element(o, "", "uniq_name", metrics[m].name);
        element(o, "", "dtype", metrics[m].type);
        element(o, "", "uom", metrics[m].unit);
        tt_out_str(o, "<url></url>\n");
        element(o, "", "descr", metrics[m].description);
        tt_out_str(o, "</metric>\n");
    }
    tt_out_str(o, "</metrics>\n<program>\n");
    for (size_t i = 0; i <= prof->region_count; i++) {
        int program = i == prof->region_count;
        const tt_profile_region *r = program ? NULL : &prof->regions[i];
        tt_out_printf(o, "<region id=\"%zu\" mod=\"", i);
        xml_text(o, program ? "" : r->file);
        tt_out_printf(o, "\" begin=\"%" PRId64 "\" end=\"-1\">\n",
                      program || !r->line ? (int64_t)-1 : (int64_t)r->line);
        element(o, "", "name", program ? "<program>" : r->name);
        element(o, "", "mangled_name", program ? "<program>" : r->name);
        element(o, "", "paradigm", program ? "measurement" : paradigm(r->kind));
        element(o, "", "role", program ? "artificial" : r->kind == TT_REGION_USER ? "code" : "function");
        tt_out_str(o, "<url></url>\n");
        element(o, "", "descr",
                program ? "all measured threads; its own time is theirs outside any recorded call" : "");
        tt_out_str(o, "</region>\n");
    }
    /* The cnodes nested as the tree is, ids in depth-first order. */
    uint32_t n = 0;
    while (n != NONE) {
        tt_out_printf(o, "<cnode id=\"%" PRIu32 "\" calleeId=\"%" PRIu32 "\">\n", c->cnodes[n].order,
                      c->cnodes[n].region);
        if (c->cnodes[n].first_child != NONE) {
            n = c->cnodes[n].first_child;
            continue;
        }
        for (;;) { /* close n, and its ancestors while they have no next sibling */
            tt_out_str(o, "</cnode>\n");
            if (c->cnodes[n].next_sibling != NONE) {
                n = c->cnodes[n].next_sibling;
                break;
            }
            if ((n = c->cnodes[n].parent) == NONE) break;
        }
    }
    tt_out_str(o, "</program>\n<system>\n<systemtreenode Id=\"0\" "
                  "class=\"machine\">\n<name>machine</name>\n<class>machine</class>\n");
    const tt_trace *t = prof->trace;
    size_t nproc = tt_trace_process_count(t), location = 0, node = 0;
    for (size_t k = 0; k < nproc; k++) {
        const char *host = tt_export_host(tt_trace_process(t, c->order[k]));
        if (!first_on_host(c, k)) continue;
        tt_out_printf(o, "<systemtreenode Id=\"%zu\" class=\"node\">\n", ++node);
        element(o, "", "name", *host ? host : "unknown host");
        tt_out_str(o, "<class>node</class>\n");
        for (size_t g = k; g < nproc; g++) {
            const tt_process *p = tt_trace_process(t, c->order[g]);
            if (strcmp(tt_export_host(p), host) != 0) continue;
            char name[TT_STRING_MAX + 48];
            if (p->mpi_size)
                snprintf(name, sizeof name, "MPI Rank %" PRIu64, p->mpi_rank);
            else
                snprintf(name, sizeof name, "process %" PRIu64 " (%s)", p->pid, p->name);
            tt_out_printf(o, "<locationgroup Id=\"%zu\">\n", g);
            element(o, "", "name", name);
            tt_out_printf(o, "<rank>%" PRIu64 "</rank>\n<type>process</type>\n",
                          p->mpi_size ? p->mpi_rank : (uint64_t)g);
            size_t rank = 0;
            for (size_t th = 0; th < prof->thread_count; th++) {
                if (prof->threads[th].process != c->order[g]) continue;
                tt_out_printf(o, "<location Id=\"%zu\">\n", location++);
                element(o, "", "name", p->threads[prof->threads[th].stream].name);
                tt_out_printf(o, "<rank>%zu</rank>\n<type>thread</type>\n</location>\n", rank++);
            }
            tt_out_str(o, "</locationgroup>\n");
        }
        tt_out_str(o, "</systemtreenode>\n");
    }
    tt_out_str(o, "</systemtreenode>\n</system>\n</cube>\n");
}

/* ---- tar ---- */

static void tar_header(tt_out *o, const char *name, uint64_t size)
{
    uint8_t h[512] = {0};
    snprintf((char *)h, 100, "%s", name);
    memcpy(h + 100, "0000644", 8);
    memcpy(h + 108, "0000000", 8);
    memcpy(h + 116, "0000000", 8);
    snprintf((char *)h + 124, 12, "%011" PRIo64, size);
    snprintf((char *)h + 136, 12, "%011llo", (unsigned long long)time(NULL));
    memset(h + 148, ' ', 8);
    h[156] = '0';
    memcpy(h + 257, "ustar", 6);
    memcpy(h + 263, "00", 2);
    unsigned sum = 0;
    for (size_t i = 0; i < sizeof h; i++) sum += h[i];
    snprintf((char *)h + 148, 8, "%06o", sum);
    h[155] = ' ';
    tt_out_write(o, h, sizeof h);
}

static void tar_pad(tt_out *o, uint64_t size)
{
    static const uint8_t zeros[512];
    if (size % 512) tt_out_write(o, zeros, 512 - size % 512);
}

static void put_u32(tt_out *o, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    tt_out_write(o, b, 4);
}

static void put_u64(tt_out *o, uint64_t v)
{
    for (int i = 0; i < 8; i++) tt_out_byte(o, (uint8_t)(v >> (8 * i)));
}

static void index_file(tt_out *o, const char *name, uint32_t cnodes)
{
    uint64_t size = 11 + 4 + 2 + 1 + 4 + (uint64_t)cnodes * 4;
    tar_header(o, name, size);
    tt_out_str(o, "CUBEX.INDEX");
    put_u32(o, 1);              /* endianness: reads as 1 in the writer's byte order */
    tt_out_write(o, "\0\0", 2); /* version */
    tt_out_byte(o, 1);          /* sparse: the rows present are listed */
    put_u32(o, cnodes);
    for (uint32_t i = 0; i < cnodes; i++) put_u32(o, i);
    tar_pad(o, size);
}

/* A data file: rows of `locations` 8-byte values, in depth-first order. */
static void data_file(tt_out *o, const char *name, const uint64_t *values, const uint32_t *order, size_t cnodes,
                      size_t locations)
{
    uint64_t size = 10 + (uint64_t)cnodes * locations * 8;
    tar_header(o, name, size);
    tt_out_str(o, "CUBEX.DATA");
    for (size_t k = 0; k < cnodes; k++)
        for (size_t l = 0; l < locations; l++) put_u64(o, values[(size_t)order[k] * locations + l]);
    tar_pad(o, size);
}

static void seconds_in_place(uint64_t *ns, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double s = (double)ns[i] / 1e9;
        memcpy(&ns[i], &s, sizeof s);
    }
}

int tt_export_cubex(const tt_trace *t, const char *path, tt_export_result *r, tt_error *err)
{
    tt_profile *prof;
    if (tt_export_profile(t, &prof, r, err) != 0) return -1;
    uint32_t **maps = NULL;
    cube c = {.prof = prof, .metrics = prof->object_count ? METRICS : METRICS - OBJECT_METRICS};
    size_t locations = prof->thread_count;
    uint64_t *values[METRICS] = {0};
    uint32_t *order = NULL;
    int rc = tt_export_region_maps(prof, &maps) == 0 && child(&c, NONE, (uint32_t)prof->region_count) == 0 &&
                     number_locations(&c) == 0
                 ? 0
                 : -1;
    for (size_t i = 0; rc == 0 && i < prof->thread_count; i++) {
        c.map = maps[prof->threads[i].process];
        rc = merge_thread(&c, &prof->threads[i]);
    }
    for (size_t m = 0; rc == 0 && locations && m < c.metrics; m++)
        if (!(values[m] = calloc(c.count * locations, sizeof *values[m]))) rc = -1;
    if (rc == 0 && locations && !(order = depth_first(&c))) rc = -1;
    uint64_t *visits = values[0], *times = values[1];
    extra x = {values[2], values[3], values[4], values[5], values[6]};
    for (size_t i = 0; rc == 0 && i < c.count * locations; i++) x.min_ns[i] = UINT64_MAX;
    for (size_t l = 0; rc == 0 && l < locations; l++) {
        const tt_profile_thread *th = &prof->threads[l];
        size_t column = c.columns[l];
        uint64_t outside = th->end_ns - th->begin_ns;
        c.map = maps[th->process];
        merge_thread(&c, th); /* again, for its node -> cnode map: finds, never adds */
        for (size_t n = 0; n < th->node_count; n++) {
            size_t at = (size_t)c.thread_cnodes[n] * locations + column;
            visits[at] += th->nodes[n].visits;
            times[at] += th->nodes[n].exclusive_ns;
            if (th->nodes[n].parent == NONE) outside -= th->nodes[n].inclusive_ns;
        }
        visits[column] = th->node_count ? 1 : 0;
        times[column] = outside;
        x.min_ns[column] = x.max_ns[column] = th->end_ns - th->begin_ns;
    }
    if (rc == 0 && locations && c.metrics == METRICS)
        rc = spread_objects(&c, visits, locations, &values[METRICS - OBJECT_METRICS]);
    c.frozen = 1;
    int unread = 0; /* a stream that cannot be read again: err says why */
    for (size_t l = 0; rc == 0 && !unread && l < locations; l++) {
        c.map = maps[prof->threads[l].process];
        unread = read_extra(&c, prof->threads[l].process, prof->threads[l].stream, c.columns[l], &x, err) != 0;
    }
    for (size_t i = 0; rc == 0 && i < c.count * locations; i++)
        if (x.min_ns[i] == UINT64_MAX) x.min_ns[i] = 0;
    tt_out o = {0};
    char *anchor_text = NULL;
    size_t anchor_size = 0;
    if (unread) {
        rc = -1;
    } else if (rc != 0) {
        rc = tt_fail(err, "out of memory");
    } else if (locations == 0) {
        rc = tt_fail(err, "no thread with events to make a profile of");
    } else {
        tt_out mem = {.f = open_memstream(&anchor_text, &anchor_size)};
        if (!mem.f) {
            rc = tt_fail(err, "out of memory");
        } else {
            anchor(&mem, &c);
            if (fclose(mem.f) != 0 || mem.error) rc = tt_fail(err, "out of memory");
        }
    }
    if (rc == 0 && (rc = tt_out_open(&o, path, err)) == 0) {
        tar_header(&o, "anchor.xml", anchor_size);
        tt_out_write(&o, anchor_text, anchor_size);
        tar_pad(&o, anchor_size);
        for (size_t m = 0; m < c.metrics; m++) {
            char name[32];
            if (strstr(metrics[m].type, "DOUBLE")) seconds_in_place(values[m], c.count * locations);
            snprintf(name, sizeof name, "%zu.index", m);
            index_file(&o, name, (uint32_t)c.count);
            snprintf(name, sizeof name, "%zu.data", m);
            data_file(&o, name, values[m], order, c.count, locations);
        }
        static const uint8_t end[1024];
        tt_out_write(&o, end, sizeof end);
    }
    free(anchor_text);
    for (size_t m = 0; m < METRICS; m++) free(values[m]);
    free(order);
    free(c.cnodes);
    tt_u64map_free(&c.cnode_of);
    free(c.thread_cnodes);
    free(c.order);
    free(c.columns);
    if (maps) tt_export_free_region_maps(prof, maps);
    tt_profile_free(prof);
    if (rc != 0) return rc;
    r->bytes = tt_out_size(&o);
    return tt_out_close(&o, err);
}

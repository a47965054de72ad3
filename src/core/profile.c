/* profile.c -- the call-path profile and its text summary (see profile.h).
 *
 * One pass per stream through the reader. The cursor guarantees well
 * nesting, so a stack of open frames is all the state a stream needs: on
 * LEAVE the frame's duration goes to its call-path node (inclusive), minus
 * the time of its children (exclusive), and to its region. A region's
 * inclusive time is added only when its outermost activation on the thread
 * ends, so recursion is not counted twice.
 */
#include "profile.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

#define NONE UINT32_MAX

/* ---- open-addressing hash sets of indices (0 marks an empty slot) ---- */

typedef struct index_set {
    uint32_t *slots; /* index + 1 */
    size_t mask;     /* slots - 1; the set keeps at most half of them used */
    size_t used;
} index_set;

static uint64_t hash_u64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

static uint64_t hash_str(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ULL;
    return h;
}

/* Makes room for one more index; `rehash` gives the hash of a stored index. */
static int set_reserve(index_set *set, uint64_t (*rehash)(const void *ctx, uint32_t index), const void *ctx)
{
    if ((set->used + 1) * 2 <= (set->slots ? set->mask + 1 : 0)) return 0;
    size_t size = set->slots ? (set->mask + 1) * 2 : 64;
    uint32_t *slots = calloc(size, sizeof *slots);
    if (!slots) return -1;
    for (size_t i = 0; set->slots && i <= set->mask; i++) {
        if (!set->slots[i]) continue;
        size_t j = rehash(ctx, set->slots[i] - 1) & (size - 1);
        while (slots[j]) j = (j + 1) & (size - 1);
        slots[j] = set->slots[i];
    }
    free(set->slots);
    set->slots = slots;
    set->mask = size - 1;
    return 0;
}

/* ---- building ---- */

typedef struct frame {
    uint32_t node;
    uint32_t region;   /* merged region index */
    uint64_t enter;    /* ns */
    uint64_t child_ns; /* inclusive time of the children so far */
} frame;

typedef struct builder {
    const tt_trace *trace;
    tt_profile *prof;
    size_t thread_cap, region_cap, problem_cap;
    index_set names; /* merged regions by name */

    /* The process being read: its region ids -> merged region (NONE until
     * the region is first entered, so unvisited regions never appear). */
    uint32_t *merged;
    size_t merged_cap;

    /* The thread being read. */
    tt_profile_thread *th;
    size_t node_cap;
    index_set paths;      /* nodes by (parent, region) */
    uint32_t *last_child; /* per node, to append children in call order */
    size_t last_child_cap;
    uint32_t last_root;
    frame *frames;
    size_t depth, frame_cap;
    /* Per merged region: its open activations and exclusive time on this
     * thread. Zero between threads. */
    uint32_t *active;
    uint64_t *thread_excl;
    size_t active_cap, excl_cap;
} builder;

static uint64_t name_rehash(const void *ctx, uint32_t index)
{
    return hash_str(((const tt_profile *)ctx)->regions[index].name);
}

static uint64_t path_key(uint32_t parent, uint32_t region) { return hash_u64((uint64_t)parent << 32 | region); }

static uint64_t path_rehash(const void *ctx, uint32_t index)
{
    const tt_profile_node *n = &((const tt_profile_thread *)ctx)->nodes[index];
    return path_key(n->parent, n->region);
}

static int add_problem(builder *b, const char *line, int corrupt)
{
    tt_profile *prof = b->prof;
    if (TT_RESERVE(prof->problems, b->problem_cap, prof->problem_count + 1) != 0) return -1;
    if (!(prof->problems[prof->problem_count] = strdup(line))) return -1;
    prof->problem_count++;
    prof->corrupt |= corrupt;
    return 0;
}

/* The merged region of process-local region `id` of p (created on first use):
 * its index, or NONE when memory runs out. */
static uint32_t merged_region(builder *b, const tt_process *p, uint32_t id)
{
    if (b->merged[id] != NONE) return b->merged[id];
    tt_profile *prof = b->prof;
    const tt_region *r = &p->regions[id];
    if (set_reserve(&b->names, name_rehash, prof) != 0) return NONE;
    size_t j = hash_str(r->name) & b->names.mask;
    for (; b->names.slots[j]; j = (j + 1) & b->names.mask)
        if (strcmp(prof->regions[b->names.slots[j] - 1].name, r->name) == 0)
            return b->merged[id] = b->names.slots[j] - 1;

    size_t n = prof->region_count;
    if (n >= NONE || TT_RESERVE(prof->regions, b->region_cap, n + 1) != 0 ||
        TT_RESERVE(b->active, b->active_cap, n + 1) != 0 || TT_RESERVE(b->thread_excl, b->excl_cap, n + 1) != 0)
        return NONE;
    prof->regions[n] = (tt_profile_region){.name = r->name, .file = r->file, .line = r->line, .kind = r->kind};
    b->active[n] = 0;
    b->thread_excl[n] = 0;
    b->names.slots[j] = (uint32_t)n + 1;
    b->names.used++;
    prof->region_count++;
    return b->merged[id] = (uint32_t)n;
}

/* The call-path node for `region` under `parent` (created on first call):
 * its index, or NONE when memory runs out. */
static uint32_t path_node(builder *b, uint32_t parent, uint32_t region)
{
    tt_profile_thread *th = b->th;
    if (set_reserve(&b->paths, path_rehash, th) != 0) return NONE;
    size_t j = path_key(parent, region) & b->paths.mask;
    for (; b->paths.slots[j]; j = (j + 1) & b->paths.mask) {
        const tt_profile_node *n = &th->nodes[b->paths.slots[j] - 1];
        if (n->parent == parent && n->region == region) return b->paths.slots[j] - 1;
    }

    size_t count = th->node_count;
    if (count >= NONE || TT_RESERVE(th->nodes, b->node_cap, count + 1) != 0 ||
        TT_RESERVE(b->last_child, b->last_child_cap, count + 1) != 0)
        return NONE;
    uint32_t index = (uint32_t)count;
    th->nodes[index] = (tt_profile_node){
        .region = region, .parent = parent, .first_child = NONE, .next_sibling = NONE};
    b->last_child[index] = NONE;
    uint32_t *last = parent == NONE ? &b->last_root : &b->last_child[parent];
    if (*last != NONE)
        th->nodes[*last].next_sibling = index;
    else if (parent != NONE)
        th->nodes[parent].first_child = index;
    *last = index;
    b->paths.slots[j] = index + 1;
    b->paths.used++;
    th->node_count++;
    return index;
}

static int enter(builder *b, const tt_process *p, const tt_event *ev)
{
    uint32_t region = merged_region(b, p, ev->region);
    if (region == NONE) return -1;
    uint32_t node = path_node(b, b->depth ? b->frames[b->depth - 1].node : NONE, ev->region);
    if (node == NONE || TT_RESERVE(b->frames, b->frame_cap, b->depth + 1) != 0) return -1;
    b->th->nodes[node].visits++;
    b->prof->regions[region].visits++;
    b->active[region]++;
    b->frames[b->depth++] = (frame){.node = node, .region = region, .enter = ev->time, .child_ns = 0};
    return 0;
}

static void leave(builder *b, uint64_t time)
{
    frame *f = &b->frames[--b->depth];
    /* Times never decrease within a stream (reader.h), so the frame spans
     * at least its children. */
    uint64_t inclusive = time - f->enter, exclusive = inclusive - f->child_ns;
    tt_profile_node *node = &b->th->nodes[f->node];
    tt_profile_region *region = &b->prof->regions[f->region];
    node->inclusive_ns += inclusive;
    node->exclusive_ns += exclusive;
    region->exclusive_ns += exclusive;
    b->thread_excl[f->region] += exclusive;
    if (--b->active[f->region] == 0) region->inclusive_ns += inclusive;
    if (b->depth) b->frames[b->depth - 1].child_ns += inclusive;
}

/* Reads one stream into a new profile thread. Fails only when memory runs out. */
static int build_thread(builder *b, size_t process, size_t stream)
{
    tt_profile *prof = b->prof;
    const tt_process *p = tt_trace_process(b->trace, process);
    tt_cursor *c;
    tt_error err;
    if (tt_cursor_open(b->trace, p, stream, &c, &err) != 0) return add_problem(b, err.message, 0);
    if (TT_RESERVE(prof->threads, b->thread_cap, prof->thread_count + 1) != 0) {
        tt_cursor_close(c);
        return -1;
    }
    b->th = &prof->threads[prof->thread_count++];
    *b->th = (tt_profile_thread){.process = process, .stream = stream, .top_region = SIZE_MAX};
    b->node_cap = 0;
    free(b->paths.slots); /* sized for this thread's tree, not the biggest one's */
    b->paths = (index_set){0};
    b->last_root = NONE;
    b->depth = 0;

    int rc = 0;
    tt_event ev;
    uint64_t events = 0;
    while (rc == 0 && tt_cursor_next(c, &ev)) {
        if (events++ == 0) b->th->begin_ns = ev.time;
        b->th->end_ns = ev.time;
        if (ev.kind == TT_EV_ENTER)
            rc = enter(b, p, &ev);
        else if (ev.kind == TT_EV_LEAVE)
            leave(b, ev.time);
    }
    b->th->events = tt_cursor_events_read(c);
    if (rc == 0 && tt_cursor_state(c) != TT_STREAM_COMPLETE)
        rc = add_problem(b, tt_cursor_problem(c), tt_cursor_state(c) == TT_STREAM_CORRUPT);
    tt_cursor_close(c);
    if (rc != 0) return rc;

    /* The cursor closed every region, so the per-thread tables are back to
     * zero but for the exclusive times: pick the top one and clear them. */
    uint64_t best = 0;
    for (size_t i = 0; i < prof->region_count; i++) {
        if (b->thread_excl[i] > best) {
            best = b->thread_excl[i];
            b->th->top_region = i;
        }
        b->thread_excl[i] = 0;
    }
    prof->events += b->th->events;
    prof->total_ns += b->th->end_ns - b->th->begin_ns;
    return 0;
}

static int build_process(builder *b, size_t index)
{
    const tt_process *p = tt_trace_process(b->trace, index);
    if (p->defs_cut && add_problem(b, p->defs_cut, p->defs_state == TT_STREAM_CORRUPT) != 0) return -1;
    /* +1: the "<undefined>" placeholder region. */
    if (TT_RESERVE(b->merged, b->merged_cap, p->region_count + 1) != 0) return -1;
    for (size_t i = 0; i <= p->region_count; i++) b->merged[i] = NONE;
    for (size_t s = 0; s < p->thread_count; s++)
        if (p->threads[s].present && build_thread(b, index, s) != 0) return -1;
    return 0;
}

int tt_profile_build(const tt_trace *t, tt_profile **out, tt_error *err)
{
    *out = NULL;
    tt_profile *prof = calloc(1, sizeof *prof);
    if (!prof) return tt_fail(err, "out of memory");
    prof->trace = t;
    builder b = {.trace = t, .prof = prof};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < tt_trace_problem_count(t); i++) {
        int corrupt;
        const char *line = tt_trace_problem(t, i, &corrupt);
        rc = add_problem(&b, line, corrupt);
    }
    for (size_t i = 0; rc == 0 && i < tt_trace_process_count(t); i++) rc = build_process(&b, i);

    free(b.names.slots);
    free(b.merged);
    free(b.paths.slots);
    free(b.last_child);
    free(b.frames);
    free(b.active);
    free(b.thread_excl);
    if (rc != 0) {
        tt_profile_free(prof);
        return tt_fail(err, "out of memory");
    }
    *out = prof;
    return 0;
}

void tt_profile_free(tt_profile *p)
{
    if (!p) return;
    for (size_t i = 0; i < p->thread_count; i++) free(p->threads[i].nodes);
    free(p->threads);
    free(p->regions);
    for (size_t i = 0; i < p->problem_count; i++) free(p->problems[i]);
    free(p->problems);
    free(p);
}

/* ---- text ---- */

typedef struct strbuf {
    char *s;
    size_t len, cap;
    int failed;
} strbuf;

static int sb_reserve(strbuf *b, size_t more)
{
    if (b->failed) return -1;
    if (TT_RESERVE(b->s, b->cap, b->len + more + 1) != 0) b->failed = 1;
    return b->failed ? -1 : 0;
}

static void sb_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(strbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || sb_reserve(b, (size_t)n) != 0) return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* Display width of UTF-8 text: its code points (wide characters are rare
 * enough in names not to warrant a width table). */
static size_t text_width(const char *s)
{
    size_t w = 0;
    for (; *s; s++) w += ((uint8_t)*s & 0xc0) != 0x80;
    return w;
}

/* Appends a name padded to `width` columns. Control characters (a thread
 * may be named anything) become '?' so that a row stays one line. */
static void sb_cell(strbuf *b, const char *s, size_t width)
{
    size_t len = strlen(s), w = text_width(s);
    if (sb_reserve(b, len + (w < width ? width - w : 0)) != 0) return;
    for (size_t i = 0; i < len; i++) {
        uint8_t ch = (uint8_t)s[i];
        b->s[b->len++] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
    }
    for (; w < width; w++) b->s[b->len++] = ' ';
    b->s[b->len] = '\0';
}

/* How times are shown: seconds, or milliseconds when the whole trace is short. */
typedef struct time_unit {
    const char *name;
    double ns;
} time_unit;

static double in_unit(const time_unit *u, uint64_t ns) { return (double)ns / u->ns; }

static double percent(uint64_t part, uint64_t total) { return total ? 100.0 * (double)part / (double)total : 0.0; }

static size_t digits(uint64_t v)
{
    size_t n = 1;
    while (v >= 10) v /= 10, n++;
    return n;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* "file.py:12", or "-" when unknown. */
static void location(const tt_profile_region *r, char *buf, size_t size)
{
    if (!*r->file)
        snprintf(buf, size, "-");
    else if (r->line)
        snprintf(buf, size, "%s:%" PRIu32, base_name(r->file), r->line);
    else
        snprintf(buf, size, "%s", base_name(r->file));
}

/* qsort comparators take no context in C11: the keys are sorted by pointer. */
static int compare_key(uint64_t x, uint64_t y, const char *nx, const char *ny)
{
    if (x != y) return x > y ? -1 : 1;
    return strcmp(nx, ny);
}

static int by_exclusive(const void *a, const void *b)
{
    const tt_profile_region *x = *(const tt_profile_region *const *)a, *y = *(const tt_profile_region *const *)b;
    return compare_key(x->exclusive_ns, y->exclusive_ns, x->name, y->name);
}

static int by_inclusive(const void *a, const void *b)
{
    const tt_profile_region *x = *(const tt_profile_region *const *)a, *y = *(const tt_profile_region *const *)b;
    return compare_key(x->inclusive_ns, y->inclusive_ns, x->name, y->name);
}

static void render_regions(strbuf *b, const tt_profile *p, const time_unit *u, const tt_profile_region **order,
                           size_t top, int inclusive)
{
    for (size_t i = 0; i < p->region_count; i++) order[i] = &p->regions[i];
    qsort(order, p->region_count, sizeof *order, inclusive ? by_inclusive : by_exclusive);
    size_t rows = p->region_count < top ? p->region_count : top;

    size_t visits_w = 6, name_w = 6;
    for (size_t i = 0; i < rows; i++) {
        if (digits(order[i]->visits) > visits_w) visits_w = digits(order[i]->visits);
        if (text_width(order[i]->name) > name_w) name_w = text_width(order[i]->name);
    }
    /* Past this a long name breaks the alignment of its own row only. */
    if (name_w > 60) name_w = 60;

    const char *first = inclusive ? "incl" : "excl", *second = inclusive ? "excl" : "incl";
    char h1[16], h2[16], h3[16];
    snprintf(h1, sizeof h1, "%s %s", first, u->name);
    snprintf(h2, sizeof h2, "%s %%", first);
    snprintf(h3, sizeof h3, "%s %s", second, u->name);
    sb_printf(b, "\nTop regions by %s time\n  %8s  %7s  %8s  %*s  ", inclusive ? "inclusive" : "exclusive", h1, h2,
              h3, (int)visits_w, "visits");
    sb_cell(b, "region", name_w);
    sb_printf(b, "  location\n");
    for (size_t i = 0; i < rows; i++) {
        const tt_profile_region *r = order[i];
        uint64_t key = inclusive ? r->inclusive_ns : r->exclusive_ns;
        uint64_t other = inclusive ? r->exclusive_ns : r->inclusive_ns;
        char loc[512];
        location(r, loc, sizeof loc);
        sb_printf(b, "  %8.3f  %6.1f%%  %8.3f  %*" PRIu64 "  ", in_unit(u, key), percent(key, p->total_ns),
                  in_unit(u, other), (int)visits_w, r->visits);
        sb_cell(b, r->name, name_w);
        sb_printf(b, "  ");
        sb_cell(b, loc, 0);
        sb_printf(b, "\n");
    }
}

typedef struct thread_row {
    size_t index;
    uint64_t span;
} thread_row;

/* Busiest first; ties in trace order. */
static int by_span(const void *a, const void *b)
{
    const thread_row *x = a, *y = b;
    if (x->span != y->span) return x->span > y->span ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

static int by_index(const void *a, const void *b)
{
    const thread_row *x = a, *y = b;
    return (x->index > y->index) - (x->index < y->index);
}

/* The threads in trace order; when there are more than `top`, the `top`
 * with the longest spans. */
static void render_threads(strbuf *b, const tt_profile *p, const time_unit *u, thread_row *order, size_t top)
{
    for (size_t i = 0; i < p->thread_count; i++)
        order[i] = (thread_row){i, p->threads[i].end_ns - p->threads[i].begin_ns};
    size_t rows = p->thread_count;
    if (rows > top) {
        qsort(order, rows, sizeof *order, by_span);
        rows = top;
        qsort(order, rows, sizeof *order, by_index);
    }

    size_t pid_w = 7, name_w = 6, events_w = 6;
    for (size_t i = 0; i < rows; i++) {
        const tt_profile_thread *th = &p->threads[order[i].index];
        const tt_process *proc = tt_trace_process(p->trace, th->process);
        const char *name = proc->threads[th->stream].name;
        if (digits(proc->pid) > pid_w) pid_w = digits(proc->pid);
        if (text_width(name) > name_w) name_w = text_width(name);
        if (digits(th->events) > events_w) events_w = digits(th->events);
    }
    if (name_w > 40) name_w = 40;

    char span[16];
    snprintf(span, sizeof span, "span %s", u->name);
    sb_printf(b, "\nThreads\n  %-*s  ", (int)pid_w, "process");
    sb_cell(b, "thread", name_w);
    sb_printf(b, "  %*s  %8s  top region (excl)\n", (int)events_w, "events", span);
    for (size_t i = 0; i < rows; i++) {
        const tt_profile_thread *th = &p->threads[order[i].index];
        const tt_process *proc = tt_trace_process(p->trace, th->process);
        sb_printf(b, "  %-*" PRIu64 "  ", (int)pid_w, proc->pid);
        sb_cell(b, proc->threads[th->stream].name, name_w);
        sb_printf(b, "  %*" PRIu64 "  %8.3f  ", (int)events_w, th->events, in_unit(u, order[i].span));
        sb_cell(b, th->top_region == SIZE_MAX ? "-" : p->regions[th->top_region].name, 0);
        sb_printf(b, "\n");
    }
    if (rows < p->thread_count) sb_printf(b, "  (%zu more threads not shown)\n", p->thread_count - rows);
}

/* 1 when the process's parent is measured too. */
static int has_parent_in_trace(const tt_trace *t, const tt_process *proc)
{
    for (size_t i = 0; i < tt_trace_process_count(t); i++)
        if (tt_trace_process(t, i)->pid == proc->ppid && tt_trace_process(t, i) != proc) return 1;
    return 0;
}

char *tt_profile_render_text(const tt_profile *p, size_t top)
{
    if (top == 0) top = 25;
    strbuf b = {0};
    size_t nproc = tt_trace_process_count(p->trace);
    time_unit u = p->total_ns >= 100000000 ? (time_unit){"s", 1e9} : (time_unit){"ms", 1e6};

    sb_printf(&b, "tracetop summary \xe2\x80\x94 %zu process%s, %zu thread%s, %" PRIu64 " events, %.3f %s measured\n",
              nproc, nproc == 1 ? "" : "es", p->thread_count, p->thread_count == 1 ? "" : "s", p->events,
              in_unit(&u, p->total_ns), u.name);
    for (size_t i = 0; i < nproc; i++) {
        const tt_process *proc = tt_trace_process(p->trace, i);
        sb_printf(&b, "process %" PRIu64 " \"", proc->pid);
        sb_cell(&b, proc->name, 0);
        sb_printf(&b, "\" (");
        if (has_parent_in_trace(p->trace, proc)) sb_printf(&b, "child of %" PRIu64 ", ", proc->ppid);
        sb_printf(&b, "%s)\n", proc->ended ? "ended normally" : "did not end normally");
    }

    const tt_profile_region **regions = malloc((p->region_count ? p->region_count : 1) * sizeof *regions);
    thread_row *threads = malloc((p->thread_count ? p->thread_count : 1) * sizeof *threads);
    if (regions && threads) {
        render_regions(&b, p, &u, regions, top, 0);
        render_regions(&b, p, &u, regions, top, 1);
        render_threads(&b, p, &u, threads, top);
    }
    free(regions);
    free(threads);
    if (!regions || !threads || b.failed) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

/* export_collapsed.c -- collapsed stacks, the input of flamegraph.pl and
 * one of speedscope's: a line per call path, its frames joined by ';' from
 * the outermost, then a space and the path's exclusive time in ns:
 *
 *     __main__:main;__main__:fib;__main__:fib 123456
 *
 * Written from the call-path profile, a line for each path of each thread
 * with time of its own; a tool reading the file adds up equal paths.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "converters.h"
#include "grow.h"
#include "out.h"

typedef struct collapsed {
    tt_out out;
    const tt_profile_thread *th;
    const tt_process *p;
    char *path;   /* the frames of the open nodes, ';'-joined */
    size_t *ends; /* by depth: where the path ended before that node */
    size_t len, cap, depth, ends_cap;
} collapsed;

/* Appends a frame; ';' and line breaks would break the format. */
static int push(collapsed *c, const char *name)
{
    size_t n = strlen(name);
    if (TT_RESERVE(c->path, c->cap, c->len + n + 2) != 0 || TT_RESERVE(c->ends, c->ends_cap, c->depth + 1) != 0)
        return -1;
    c->ends[c->depth++] = c->len;
    if (c->len) c->path[c->len++] = ';';
    for (size_t i = 0; i < n; i++) {
        char ch = name[i];
        c->path[c->len++] = ch == ';' ? ':' : ch == '\n' || ch == '\r' ? ' ' : ch;
    }
    return 0;
}

static int enter(void *ctx, uint32_t node)
{
    collapsed *c = ctx;
    const tt_profile_node *n = &c->th->nodes[node];
    if (push(c, c->p->regions[n->region].name) != 0) return -1;
    if (n->exclusive_ns) {
        tt_out_write(&c->out, c->path, c->len);
        tt_out_printf(&c->out, " %" PRIu64 "\n", n->exclusive_ns);
    }
    return 0;
}

static void leave(void *ctx, uint32_t node)
{
    collapsed *c = ctx;
    (void)node;
    c->len = c->ends[--c->depth];
}

int tt_export_collapsed(const tt_trace *t, const char *path, tt_export_result *r, tt_error *err)
{
    tt_profile *prof;
    if (tt_export_profile(t, &prof, r, err) != 0) return -1;
    collapsed c = {0};
    int rc = tt_out_open(&c.out, path, err);
    for (size_t i = 0; rc == 0 && i < prof->thread_count; i++) {
        c.th = &prof->threads[i];
        c.p = tt_trace_process(t, c.th->process);
        c.len = c.depth = 0;
        if (tt_export_walk(c.th, enter, leave, &c) != 0) {
            tt_out_discard(&c.out);
            rc = tt_fail(err, "out of memory");
        }
    }
    free(c.path);
    free(c.ends);
    tt_profile_free(prof);
    if (rc != 0) return rc;
    r->bytes = tt_out_size(&c.out);
    return tt_out_close(&c.out, err);
}

/* export_chrome.c -- Trace Event JSON (chrome://tracing, Perfetto's JSON
 * importer): one complete ("X") event per call, with the parameters set
 * inside it as its args; counters as "C" events, marks and the recording
 * switches as instant ("i") events, and "M" events naming processes and
 * threads. pid is the process id, tid the OS thread id. Objects counted
 * (--objects) are a counter per type of a process, "objects: TYPE" with
 * the objects alive as its "alive" series, at each batch time
 * (objects_series.h), with tid 0: counters belong to their process.
 *
 * An X event is written when its call returns: the stack of open calls
 * holds each one's start and where its args begin in a buffer shared by
 * the stack, so memory grows with the depth of a stream, not its length.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "converters.h"
#include "grow.h"
#include "objects_series.h"
#include "out.h"
#include "registry.h"
#include "tasklanes.h"

typedef struct frame {
    uint64_t start;
    size_t args; /* offset of its args in the args buffer */
    int resumed; /* the part of a call after a gap in the measurement (reader.h) */
} frame;

typedef struct chrome {
    tt_out out;
    int first; /* no event written yet: no comma before the next */
    frame *stack;
    size_t depth, stack_cap;
    char *args; /* `"name":value` pairs, comma-separated, of the open calls */
    size_t args_len, args_cap;
    tt_objects_series objects; /* of the process being written */
    int failed;                /* out of memory */
} chrome;

/* Starts an event: `{"ph":"X","pid":1,"tid":2,"ts":3.000` (no closing brace). */
static void begin_event(chrome *c, const char *ph, uint64_t pid, uint64_t tid, uint64_t ts)
{
    tt_out_str(&c->out, c->first ? "\n" : ",\n");
    c->first = 0;
    tt_out_printf(&c->out, "{\"ph\":\"%s\",\"pid\":%" PRIu64 ",\"tid\":%" PRIu64 ",\"ts\":", ph, pid, tid);
    tt_out_micros(&c->out, ts);
}

static void name_field(chrome *c, const char *name)
{
    tt_out_str(&c->out, ",\"name\":");
    tt_out_json_string(&c->out, name);
}

static void metadata(chrome *c, const char *what, uint64_t pid, uint64_t tid, const char *name)
{
    begin_event(c, "M", pid, tid, 0);
    tt_out_printf(&c->out, ",\"name\":\"%s\",\"args\":{\"name\":", what);
    tt_out_json_string(&c->out, name);
    tt_out_str(&c->out, "}}");
}

static void args_append(void *ctx, const char *bytes, size_t len)
{
    chrome *c = ctx;
    if (TT_RESERVE(c->args, c->args_cap, c->args_len + len) != 0) {
        c->failed = 1;
        return;
    }
    memcpy(c->args + c->args_len, bytes, len);
    c->args_len += len;
}

/* A parameter: in the args of the innermost open call, or an instant event
 * of its own when no call is open. */
static void parameter(chrome *c, const tt_process *p, uint64_t tid, const tt_event *ev)
{
    char value[64];
    int n = 0;
    if (ev->kind == TT_EV_PARAM_INT) n = snprintf(value, sizeof value, "%" PRId64, ev->int_value);
    if (ev->kind == TT_EV_PARAM_UINT) n = snprintf(value, sizeof value, "%" PRIu64, ev->uint_value);
    const char *name = p->strings[ev->name];
    if (c->depth == 0) {
        begin_event(c, "i", p->pid, tid, ev->time);
        tt_out_str(&c->out, ",\"s\":\"t\",\"name\":\"parameter\",\"args\":{");
        tt_out_json_string(&c->out, name);
        tt_out_byte(&c->out, ':');
        if (ev->kind == TT_EV_PARAM_STRING)
            tt_out_json_string_n(&c->out, ev->str, ev->str_len);
        else
            tt_out_write(&c->out, value, (size_t)n);
        tt_out_str(&c->out, "}}");
        return;
    }
    if (c->args_len > c->stack[c->depth - 1].args) args_append(c, ",", 1);
    tt_json_string(name, strlen(name), args_append, c);
    args_append(c, ":", 1);
    if (ev->kind == TT_EV_PARAM_STRING)
        tt_json_string(ev->str, ev->str_len, args_append, c);
    else
        args_append(c, value, (size_t)n);
}

/* A garbage collection's result: in the args of its span, the innermost
 * open one (format.h: GC). */
static void collection(chrome *c, const tt_event *ev)
{
    if (c->depth == 0) return;
    char text[96];
    int n = snprintf(text, sizeof text, "\"collected\":%" PRIu64 ",\"uncollectable\":%" PRIu64, ev->collected,
                     ev->uncollectable);
    if (c->args_len > c->stack[c->depth - 1].args) args_append(c, ",", 1);
    args_append(c, text, (size_t)n);
}

static void stream(chrome *c, const tt_process *p, size_t s, tt_cursor *cur)
{
    uint64_t tid = tt_export_tid(p, s);
    tt_event ev;
    c->depth = 0;
    c->args_len = 0;
    while (!c->failed && tt_cursor_next(cur, &ev)) {
        switch (ev.kind) {
        case TT_EV_ENTER:
            if (TT_RESERVE(c->stack, c->stack_cap, c->depth + 1) != 0) {
                c->failed = 1;
                break;
            }
            c->stack[c->depth++] = (frame){ev.time, c->args_len, ev.resumed};
            break;
        case TT_EV_LEAVE: {
            frame *f = &c->stack[--c->depth];
            const tt_region *r = &p->regions[ev.region];
            begin_event(c, "X", p->pid, tid, f->start);
            tt_out_str(&c->out, ",\"dur\":");
            tt_out_micros(&c->out, ev.time - f->start);
            const char *kind = tt_region_kind_name(r->kind);
            tt_out_printf(&c->out, ",\"cat\":\"%s\"", kind ? kind : "undefined");
            name_field(c, r->name);
            if (c->args_len > f->args || f->resumed) {
                tt_out_str(&c->out, ",\"args\":{");
                if (f->resumed) tt_out_str(&c->out, c->args_len > f->args ? "\"resumed\":true," : "\"resumed\":true");
                tt_out_write(&c->out, c->args + f->args, c->args_len - f->args);
                tt_out_byte(&c->out, '}');
                c->args_len = f->args;
            }
            tt_out_byte(&c->out, '}');
            break;
        }
        case TT_EV_PARAM_INT:
        case TT_EV_PARAM_UINT:
        case TT_EV_PARAM_STRING:
            parameter(c, p, tid, &ev);
            break;
        case TT_EV_GC:
            collection(c, &ev);
            break;
        case TT_EV_COUNTER:
            begin_event(c, "C", p->pid, tid, ev.time);
            name_field(c, p->strings[ev.name]);
            tt_out_str(&c->out, ",\"args\":{");
            tt_out_json_string(&c->out, p->strings[ev.name]);
            tt_out_byte(&c->out, ':');
            tt_out_json_double(&c->out, ev.double_value);
            tt_out_str(&c->out, "}}");
            break;
        case TT_EV_OBJECTS:
            if (tt_objects_series_add(&c->objects, &ev) != 0) c->failed = 1;
            break;
        case TT_EV_MARK:
            begin_event(c, "i", p->pid, tid, ev.time);
            tt_out_str(&c->out, ",\"s\":\"t\",\"cat\":\"mark\"");
            name_field(c, p->strings[ev.name]);
            tt_out_byte(&c->out, '}');
            break;
        case TT_EV_RECORDING_OFF:
        case TT_EV_RECORDING_ON:
            begin_event(c, "i", p->pid, tid, ev.time);
            tt_out_printf(&c->out, ",\"s\":\"t\",\"cat\":\"tracetop\",\"name\":\"measurement %s\"}",
                          ev.kind == TT_EV_RECORDING_ON ? "on" : "off");
            break;
        default: /* STREAM_END */
            break;
        }
    }
}

/* The objects of process p over time, from the series of its streams just
 * written: a counter per type. */
static void objects(chrome *c, const tt_process *p)
{
    tt_objects_series *s = &c->objects;
    if (tt_objects_series_finish(s) != 0) {
        c->failed = 1;
        return;
    }
    char name[TT_STRING_MAX + 32];
    for (size_t i = 0; i < s->count; i++) {
        snprintf(name, sizeof name, "objects: %s", p->strings[s->points[i].type]);
        begin_event(c, "C", p->pid, 0, s->points[i].time);
        tt_out_str(&c->out, ",\"cat\":\"objects\"");
        name_field(c, name);
        tt_out_printf(&c->out, ",\"args\":{\"alive\":%" PRIu64 "}}", tt_objects_alive(&s->points[i]));
    }
}

/* The asyncio tasks of process `index` (tasklanes.h): a track each, "task
 * NAME", beside the threads; its steps X events named by their coroutine,
 * the time between two an X event "suspended". */
#define TASK_TID (UINT64_C(1) << 32) /* + the task id: above every thread id */

static void task_tracks(chrome *c, const tt_tasks *tasks, size_t index, const tt_process *p)
{
    for (size_t i = 0; tasks && i < tasks->lane_count; i++) {
        const tt_task_lane *l = &tasks->lanes[i];
        if (l->process != index) continue;
        uint64_t tid = TASK_TID + l->task;
        size_t len = strlen(tt_task_lane_name(tasks, l));
        char *name = malloc(len + 6);
        if (!name) {
            c->failed = 1;
            return;
        }
        memcpy(name, "task ", 5);
        memcpy(name + 5, tt_task_lane_name(tasks, l), len + 1);
        metadata(c, "thread_name", p->pid, tid, name);
        free(name);
        for (size_t k = 0; k < l->step_count; k++) {
            const tt_task_step *step = &l->steps[k];
            if (k) {
                begin_event(c, "X", p->pid, tid, l->steps[k - 1].end);
                tt_out_str(&c->out, ",\"dur\":");
                tt_out_micros(&c->out, step->begin - l->steps[k - 1].end);
                tt_out_str(&c->out, ",\"cat\":\"await\",\"name\":\"suspended\"}");
            }
            begin_event(c, "X", p->pid, tid, step->begin);
            tt_out_str(&c->out, ",\"dur\":");
            tt_out_micros(&c->out, step->end - step->begin);
            tt_out_str(&c->out, ",\"cat\":\"asyncio\"");
            name_field(c, p->regions[step->region < p->region_count ? step->region : p->region_count].name);
            tt_out_byte(&c->out, '}');
        }
    }
}

int tt_export_chrome(const tt_trace *t, const char *path, tt_export_result *r, tt_error *err)
{
    chrome c = {.first = 1};
    if (tt_export_trace_problems(t, r) != 0) return tt_fail(err, "out of memory");
    tt_tasks *tasks = NULL;
    if (tt_trace_has_tasks(t) && tt_tasks_build(t, &tasks, err) != 0) return -1;
    if (tt_out_open(&c.out, path, err) != 0) {
        tt_tasks_free(tasks);
        return -1;
    }
    tt_out_str(&c.out, "{\"traceEvents\":[");
    int rc = 0;
    for (size_t i = 0; rc == 0 && !c.failed && i < tt_trace_process_count(t); i++) {
        const tt_process *p = tt_trace_process(t, i);
        metadata(&c, "process_name", p->pid, 0, p->name);
        tt_objects_series_reset(&c.objects);
        for (size_t s = 0; rc == 0 && !c.failed && s < p->thread_count; s++) {
            if (!p->threads[s].present) continue;
            metadata(&c, "thread_name", p->pid, tt_export_tid(p, s), p->threads[s].name);
            tt_cursor *cur;
            if ((rc = tt_cursor_open(t, p, s, &cur, err)) != 0) break;
            stream(&c, p, s, cur);
            if (tt_export_stream_done(cur, r) != 0) c.failed = 1;
            tt_cursor_close(cur);
        }
        if (rc == 0 && !c.failed) objects(&c, p);
        if (rc == 0) task_tracks(&c, tasks, i, p);
    }
    tt_tasks_free(tasks);
    tt_out_str(&c.out, "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"exporter\":\"tracetop\"}}\n");
    free(c.stack);
    free(c.args);
    tt_objects_series_free(&c.objects);
    if (rc == 0 && c.failed) rc = tt_fail(err, "out of memory");
    if (rc != 0) {
        tt_out_discard(&c.out);
        return rc;
    }
    r->bytes = tt_out_size(&c.out);
    return tt_out_close(&c.out, err);
}

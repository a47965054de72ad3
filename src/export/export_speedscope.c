/* export_speedscope.c -- speedscope's file format: one evented profile per
 * thread ("O" open and "C" close events of frames, in nanoseconds), over
 * one table of frames shared by all (speedscope.app/file-format-schema.json).
 *
 * The frames are every region of every process, known from the definitions
 * before any event is read: frame = the process's first frame + region id.
 * A profile is written while its stream is read; its start and end values
 * follow its events, known by then (JSON does not order an object's keys).
 */
#include <inttypes.h>
#include <stdlib.h>

#include "converters.h"
#include "registry.h"
#include "out.h"

static void frames(tt_out *o, const tt_trace *t)
{
    int first = 1;
    for (size_t i = 0; i < tt_trace_process_count(t); i++) {
        const tt_process *p = tt_trace_process(t, i);
        for (size_t id = 0; id <= p->region_count; id++) { /* with the "<undefined>" placeholder */
            const tt_region *r = &p->regions[id];
            tt_out_str(o, first ? "\n{\"name\":" : ",\n{\"name\":");
            first = 0;
            tt_out_json_string(o, r->name);
            if (*r->file) {
                tt_out_str(o, ",\"file\":");
                tt_out_json_string(o, r->file);
                if (r->line) tt_out_printf(o, ",\"line\":%" PRIu32, r->line);
            }
            tt_out_byte(o, '}');
        }
    }
}

/* One profile; 1 when written, 0 when the stream has no call to show. */
static int profile(tt_out *o, const tt_process *p, size_t s, uint64_t first_frame, tt_cursor *c, int first)
{
    tt_event ev;
    uint64_t start = 0, end = 0;
    int any = 0;
    while (tt_cursor_next(c, &ev)) {
        if (ev.kind != TT_EV_ENTER && ev.kind != TT_EV_LEAVE) continue;
        if (!any) {
            tt_out_str(o, first ? "\n{\"type\":\"evented\",\"name\":" : ",\n{\"type\":\"evented\",\"name\":");
            /* "4242 MainThread": speedscope lists the profiles by name. */
            char name[TT_STRING_MAX + 32];
            snprintf(name, sizeof name, "%" PRIu64 " %s", p->pid, p->threads[s].name);
            tt_out_json_string(o, name);
            tt_out_str(o, ",\"unit\":\"nanoseconds\",\"events\":[");
            start = ev.time;
        }
        tt_out_printf(o, "%s{\"type\":\"%c\",\"frame\":%" PRIu64 ",\"at\":%" PRIu64 "}", any ? "," : "",
                      ev.kind == TT_EV_ENTER ? 'O' : 'C', first_frame + ev.region, ev.time);
        any = 1;
        end = ev.time;
    }
    if (any) tt_out_printf(o, "],\"startValue\":%" PRIu64 ",\"endValue\":%" PRIu64 "}", start, end);
    return any;
}

int tt_export_speedscope(const tt_trace *t, const char *path, tt_export_result *r, tt_error *err)
{
    tt_out o;
    if (tt_export_trace_problems(t, r) != 0) return tt_fail(err, "out of memory");
    if (tt_out_open(&o, path, err) != 0) return -1;
    tt_out_str(&o, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"exporter\":\"tracetop\","
                   "\"name\":");
    tt_out_json_string(&o, tt_trace_process(t, 0)->name);
    tt_out_str(&o, ",\"activeProfileIndex\":0,\"shared\":{\"frames\":[");
    frames(&o, t);
    tt_out_str(&o, "]},\"profiles\":[");
    uint64_t first_frame = 0;
    int written = 0, rc = 0;
    for (size_t i = 0; rc == 0 && i < tt_trace_process_count(t); i++) {
        const tt_process *p = tt_trace_process(t, i);
        for (size_t s = 0; rc == 0 && s < p->thread_count; s++) {
            tt_cursor *c;
            if (!p->threads[s].present) continue;
            if ((rc = tt_cursor_open(t, p, s, &c, err)) != 0) break;
            written += profile(&o, p, s, first_frame, c, written == 0);
            if (tt_export_stream_done(c, r) != 0) rc = tt_fail(err, "out of memory");
            tt_cursor_close(c);
        }
        first_frame += p->region_count + 1;
    }
    tt_out_str(&o, "]}\n");
    if (rc != 0) {
        tt_out_discard(&o);
        return rc;
    }
    r->bytes = tt_out_size(&o);
    return tt_out_close(&o, err);
}

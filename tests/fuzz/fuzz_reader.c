/* fuzz_reader.c -- the reader (reader.h) and the record decoders behind it
 * (records.h, format.h) on a fuzzed trace: every event of every stream, and
 * what the reader says was cut or damaged. */
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tt_trace *t;
    tt_error err;
    if (tt_trace_open(fuzz_experiment(data, size), &t, &err) != 0) return 0;

    for (size_t i = 0; i < tt_trace_problem_count(t); i++) fuzz_sink += strlen(tt_trace_problem(t, i, NULL));
    for (size_t i = 0; i < tt_trace_process_count(t); i++) {
        const tt_process *p = tt_trace_process(t, i);
        for (size_t r = 0; r <= p->region_count; r++) fuzz_sink += strlen(p->regions[r].name) + strlen(p->regions[r].file);
        for (size_t s = 0; s <= p->string_count; s++) fuzz_sink += strlen(p->strings[s]);
        for (size_t s = 0; s < p->thread_count; s++) {
            fuzz_sink += strlen(p->threads[s].name);
            if (!p->threads[s].present) continue;
            tt_cursor *c;
            if (tt_cursor_open(t, p, s, &c, &err) != 0) continue;
            tt_event ev;
            while (tt_cursor_next(c, &ev)) {
                if (ev.kind == TT_EV_ENTER || ev.kind == TT_EV_LEAVE) fuzz_sink += strlen(p->regions[ev.region].name);
                if (ev.kind == TT_EV_PARAM_STRING && ev.str_len) fuzz_sink += (uint8_t)ev.str[ev.str_len - 1];
            }
            if (tt_cursor_problem(c)) fuzz_sink += strlen(tt_cursor_problem(c));
            tt_cursor_close(c);
        }
    }
    tt_trace_close(t);
    return 0;
}

/* fuzz_reader.c -- the reader (reader.h) and the record decoders behind it
 * (records.h, format.h) on a fuzzed trace: every event of every stream (calls
 * in bulk and one at a time), and
 * what the reader says was cut or damaged; then the MPI communication
 * matched from it (mpi_view.h) and its queries. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "mpi_view.h"
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
        for (size_t r = 0; r <= p->region_count; r++)
            fuzz_sink += strlen(p->regions[r].name) + strlen(p->regions[r].file);
        for (size_t s = 0; s <= p->string_count; s++) fuzz_sink += strlen(p->strings[s]);
        for (size_t s = 0; s < p->thread_count; s++) {
            fuzz_sink += strlen(p->threads[s].name);
            if (!p->threads[s].present) continue;
            tt_cursor *c;
            if (tt_cursor_open(t, p, s, &c, &err) != 0) continue;
            /* Calls in bulk where the cursor gives them so, as the profile reads. */
            tt_event ev;
            tt_call calls[5];
            for (size_t round = 0;; round++) {
                size_t n = tt_cursor_next_calls(c, calls, 1 + round % 5);
                for (size_t k = 0; k < n; k++) fuzz_sink += strlen(p->regions[calls[k].region].name);
                if (n) continue;
                if (!tt_cursor_next(c, &ev)) break;
                if (ev.kind == TT_EV_ENTER || ev.kind == TT_EV_LEAVE) fuzz_sink += strlen(p->regions[ev.region].name);
                if (ev.kind == TT_EV_PARAM_STRING && ev.str_len) fuzz_sink += (uint8_t)ev.str[ev.str_len - 1];
            }
            if (tt_cursor_problem(c)) fuzz_sink += strlen(tt_cursor_problem(c));
            tt_cursor_close(c);
            /* The call tree behind the records (TREE chunks), as the profile reads it. */
            tt_stream_tree tree;
            if (tt_stream_tree_read(t, p, s, &tree, &err) == 1) {
                for (size_t k = 0; k < tree.node_count; k++)
                    fuzz_sink += strlen(p->regions[tree.nodes[k].region].name) + tree.nodes[k].visits +
                                 (tree.nodes[k].parent == UINT32_MAX ? 0 : tree.nodes[tree.nodes[k].parent].region);
                tt_stream_tree_free(&tree);
            }
        }
    }
    tt_mpi_view *v;
    if (tt_mpi_view_build(t, &v, &err) == 0) {
        uint32_t some[8];
        fuzz_sink += tt_mpi_view_lines(v, 0, UINT64_MAX, some, 8) +
                     tt_mpi_view_collectives_in(v, 0, UINT64_MAX, some, 8);
        tt_mpi_view_pair *pairs;
        long n = tt_mpi_view_matrix(v, 0, UINT64_MAX, &pairs);
        if (n > 0)
            fuzz_sink += tt_mpi_view_pair_messages(v, pairs[0].sender, pairs[0].receiver, 0, UINT64_MAX, 1, some, 8);
        if (n >= 0) free(pairs);
        tt_mpi_view_comm_stats *stats = malloc((v->comms.count + 1) * sizeof *stats);
        if (stats) tt_mpi_view_comm_stats_in(v, 0, UINT64_MAX, stats);
        free(stats);
        tt_mpi_view_free(v);
    }
    tt_trace_close(t);
    return 0;
}

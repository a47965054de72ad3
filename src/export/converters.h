/* converters.h -- what the converters of export.h share: one function per
 * format (export_<format>.c), and the bookkeeping of what the reader found
 * cut or damaged.
 */
#ifndef TRACETOP_CONVERTERS_H
#define TRACETOP_CONVERTERS_H

#include "export.h"
#include "profile.h"

typedef int tt_converter(const tt_trace *t, const char *path, tt_export_result *r, tt_error *err);

tt_converter tt_export_otf2, tt_export_cubex, tt_export_perfetto, tt_export_chrome, tt_export_speedscope,
    tt_export_pstats, tt_export_collapsed;

/* Adds a problem line; -1 when memory runs out. */
int tt_export_problem(tt_export_result *r, const char *line, int corrupt);

/* Adds the trace's own problems (processes left out, cut definitions). */
int tt_export_trace_problems(const tt_trace *t, tt_export_result *r);

/* Counts a stream read to its end and adds its problem, if any. */
int tt_export_stream_done(tt_cursor *c, tt_export_result *r);

/* For converters of the call-path profile: builds it, and takes its
 * problems and event count into r. */
int tt_export_profile(const tt_trace *t, tt_profile **prof, tt_export_result *r, tt_error *err);

/* For converters of the profile: per process (by index), its region ids
 * mapped to the profile's regions, merged by name (UINT32_MAX for a region
 * never entered). *maps is malloc'd, freed with tt_export_free_region_maps. */
int tt_export_region_maps(const tt_profile *prof, uint32_t ***maps);
void tt_export_free_region_maps(const tt_profile *prof, uint32_t **maps);

/* Walks a thread's call tree depth first, in the order of first calls:
 * enter(ctx, node) before a node's children, leave(ctx, node) after them.
 * Stops when enter returns non-zero, and returns that. */
int tt_export_walk(const tt_profile_thread *th, int (*enter)(void *ctx, uint32_t node),
                   void (*leave)(void *ctx, uint32_t node), void *ctx);

/* The processes in the order the system trees of OTF2 and CUBE list them:
 * the ranks of MPI processes in rank order first, then the others in trace
 * order. A malloc'd array of process indices; NULL when out of memory. */
size_t *tt_export_process_order(const tt_trace *t);

/* The value of attribute `key` of p (a PROCESS attribute), or NULL. */
const char *tt_export_attribute(const tt_process *p, const char *key);

/* The host p ran on, as its "host" attribute says ("" where not said): the
 * node of the system trees. */
const char *tt_export_host(const tt_process *p);

/* The epoch of the trace's time axis on the real-time clock, in ns since 1970. */
uint64_t tt_export_epoch_realtime(const tt_trace *t);

/* The thread id to show for stream s of p: the OS thread id, or the stream
 * number when the definitions lack it. */
uint64_t tt_export_tid(const tt_process *p, size_t s);

#endif

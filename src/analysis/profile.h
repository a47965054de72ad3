/* profile.h -- the call-path profile, computed from a trace through the one
 * reader, and its text rendering (`tracetop summary`, profile.txt).
 *
 * Contract:
 *  - tt_profile_build reads every stream of every process once, in bounded
 *    memory (the size of the call tree, not of the trace).
 *  - For each thread it builds the call-path tree: per node the region,
 *    visits, inclusive and exclusive time. A node's inclusive time is the
 *    sum of its calls' durations in the clock's ticks, converted to ns once
 *    (so it may differ by up to a ns per call from a sum of per-call ns);
 *    its exclusive time is that minus its children's (a process with asyncio
 *    tasks the same: its tasks' times come from the same read, or from the
 *    writer's tree, whose steps' nodes are merged back into their paths). Per region (by name, merged over
 *    threads and processes) it gives visits, exclusive time and inclusive
 *    time counted once per outermost activation (recursion is not double
 *    counted).
 *  - Per process it gives its threads, events, span and top region; and for
 *    MPI, the point-to-point messages by sender and receiver world rank (as
 *    sent: MPI_SEND, MPI_ISEND) and the collectives by operation, so that a
 *    communication matrix needs no second pass.
 *  - With objects counted (--objects), the objects created and destroyed
 *    per creating region and type.
 *  - Per thread, the CPU time and GIL samples its last THREAD_USAGE record
 *    gives (sampler.h).
 *  - Garbage collections are regions like calls (so a call's exclusive time
 *    leaves out the collections that interrupted it); their GC records are
 *    also summed per generation: collections, total and longest pause (in
 *    ticks per thread, converted once).
 *  - It covers every process of the trace, or one (tt_profile_build_process).
 *  - What the reader reported as cut or corrupt is collected, so the caller
 *    can say it once.
 */
#ifndef TRACETOP_PROFILE_H
#define TRACETOP_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "reader.h"

/* A call path. Children are chained from first_child through next_sibling
 * in the order they were first called; node 0 is the first root and the
 * other roots follow it through next_sibling the same way. */
typedef struct tt_profile_node {
    uint32_t region;      /* process-local region id (may be the "<undefined>" placeholder) */
    uint32_t parent;      /* node index; UINT32_MAX for a root */
    uint32_t first_child; /* node index or UINT32_MAX */
    uint32_t next_sibling;
    uint64_t visits;
    uint64_t inclusive_ns;
    uint64_t exclusive_ns;
} tt_profile_node;

typedef struct tt_profile_thread {
    size_t process; /* index into the trace's processes */
    size_t stream;
    uint64_t begin_ns, end_ns; /* first and last event; both 0 without events */
    uint64_t events;           /* read from the data (tt_cursor_events_read) */
    /* Records decoded to make it: all of them (events) when its records were
     * read; from the call tree its writer kept, those of the chunks that
     * hold records the tree does not count (format.h: TT_CHUNK_COUNTED). */
    uint64_t records_read;
    size_t top_region; /* index into regions: most exclusive time here; SIZE_MAX when none */
    /* From its last THREAD_USAGE record (has_usage: there is one): CPU
     * time used while measured, and GIL samples (samples 0: unknown). */
    int has_usage;
    uint64_t cpu_ns, samples, gil_samples;
    size_t node_count;
    tt_profile_node *nodes; /* call-path tree; roots have parent UINT32_MAX */
} tt_profile_thread;

typedef struct tt_profile_region {
    const char *name;
    const char *file;
    uint32_t line;
    uint8_t kind;
    uint64_t visits;
    uint64_t inclusive_ns;
    uint64_t exclusive_ns;
} tt_profile_region;

typedef struct tt_profile_process {
    size_t process; /* index into the trace's processes */
    size_t threads; /* its threads in the profile */
    uint64_t events;
    uint64_t begin_ns, end_ns; /* its first and last event; both 0 without events */
    size_t top_region;         /* index into regions: most exclusive time in it; SIZE_MAX when none */
} tt_profile_process;

/* The messages one world rank sent another. */
typedef struct tt_profile_messages {
    uint32_t sender, receiver;
    uint64_t count, bytes;
} tt_profile_messages;

/* The calls of one collective operation (enum tt_mpi_collective), over all ranks. */
typedef struct tt_profile_collective {
    uint64_t calls, sent, received;
} tt_profile_collective;

/* The objects of one type created in one region (OBJECTS in format.h),
 * merged by region and type name over threads and processes. */
typedef struct tt_profile_objects {
    uint32_t region; /* index into regions; UINT32_MAX: created outside any recorded region */
    const char *type;
    uint64_t size; /* bytes of one object's fixed part */
    uint64_t created, destroyed;
} tt_profile_objects;

#define TT_PROFILE_COLLECTIVES (TT_MPI_REDUCE_SCATTER_BLOCK + 1)

/* The garbage collections of one generation (GC records), over all threads. */
typedef struct tt_profile_gc {
    uint64_t collections, total_ns, longest_ns, collected, uncollectable;
} tt_profile_gc;

#define TT_PROFILE_GC_GENERATIONS 3

typedef struct tt_profile {
    const tt_trace *trace;
    size_t thread_count;
    tt_profile_thread *threads;
    size_t region_count;
    tt_profile_region *regions; /* merged by name over all threads; only regions entered */
    uint64_t total_ns;          /* sum of the threads' spans */
    uint64_t events;
    size_t process_count;
    tt_profile_process *processes; /* those read, in trace order */
    size_t message_count;
    tt_profile_messages *messages; /* by sender, then receiver */
    tt_profile_collective collectives[TT_PROFILE_COLLECTIVES];
    size_t object_count;
    tt_profile_objects *objects;                 /* by (region, type), in order of first sight */
    tt_profile_gc gc[TT_PROFILE_GC_GENERATIONS]; /* by generation */
    /* One line per stream or process that was cut or damaged (or left out,
     * see tt_trace_problem), in process order. */
    size_t problem_count;
    char **problems;
    int corrupt; /* 1 when any damage (not just a cut) was found */
} tt_profile;

/* Fails only when memory runs out: what cannot be read is a problem line. */
int tt_profile_build(const tt_trace *t, tt_profile **out, tt_error *err);

/* The same for process `process` (an index into the trace's processes)
 * alone; SIZE_MAX for all of them. Problems are those of that process. */
int tt_profile_build_process(const tt_trace *t, size_t process, tt_profile **out, tt_error *err);

/* The same, and the asyncio tasks of the same processes (tasklanes.h) in
 * the same read of each stream, when tasks is not NULL (*tasks then has
 * no lane when there are none). With out NULL, only the tasks: only the
 * processes that have tasks are read. */
typedef struct tt_tasks tt_tasks;
int tt_profile_build_tasks(const tt_trace *t, size_t process, tt_profile **out, tt_tasks **tasks, tt_error *err);
void tt_profile_free(tt_profile *p);

/* Renders the text summary (top regions by exclusive and inclusive time,
 * visits, per thread and process, MPI communication, objects) into a malloc'd
 * string, NULL when memory runs out. `top` limits the rows of each table
 * (0: a default of 25); the problems are not part of it (the caller says
 * them). */
char *tt_profile_render_text(const tt_profile *p, size_t top);

#endif

/* tasklanes.h -- asyncio tasks as lanes: their steps stitched together,
 * their suspended (awaiting) time, and where it went, from a trace through
 * the one reader.
 *
 * Contract:
 *  - The tasks are made in the profile's read of the trace (profile.h:
 *    tt_profile_build_tasks), in the same pass as its call tree: the
 *    summary reads each stream once; a stream whose call tree the writer
 *    kept, with the steps' nodes (format.h: TREE_NODE), gives its tasks'
 *    times from the tree (tt_tasks_reading_tree), the same as its records
 *    give them, its steps' times aside (no lane's steps then: only counts).
 *    The summary's times are summed in ticks and converted once per lane,
 *    per await and per region of a lane (profile.h's definition); the
 *    lanes alone (tt_tasks_build) sum each step's and suspension's ns, as
 *    a viewer draws them (step_ns below). tt_tasks_build reads the streams of
 *    the processes that have tasks (a trace without tasks is not read at
 *    all), in memory proportional to the steps and the call tree, not to
 *    the events.
 *  - A step of a task is the ENTER that follows a TASK_RESUME up to that
 *    region's LEAVE (format.h). A task's lane is its steps in time order;
 *    between two steps it was suspended. Before its first step and after
 *    its last it is not drawn: the trace does not say when it was made or
 *    whether it ended.
 *  - Await time per coroutine: each suspension (from a step's end to the
 *    task's next step) is added to every coroutine the step's last returns
 *    left (COROUTINE regions): the chain that awaited, outermost to where
 *    it suspended. Calls that had simply finished before are not in it.
 *  - Per task, the exclusive time of each region inside its steps gives
 *    the region it spent most in (the per-task profile's first row).
 */
#ifndef TRACETOP_TASKLANES_H
#define TRACETOP_TASKLANES_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "profile.h"
#include "reader.h"
#include "u64map.h"

typedef struct tt_task_step {
    uint64_t begin, end; /* ns since the epoch */
    uint32_t region;     /* the coroutine the loop resumed */
} tt_task_step;

typedef struct tt_task_lane {
    size_t process; /* index into the trace's processes */
    uint32_t task;  /* its id in that process (task_names) */
    size_t stream;  /* the thread of its first step */
    size_t step_count;
    tt_task_step *steps; /* in time order */
    uint64_t running_ns, suspended_ns;
    uint32_t first_region; /* the coroutine of its first step */
    uint32_t top_region;   /* most exclusive time in its steps; UINT32_MAX when none */
    uint64_t top_ns;
    /* while reading: times in ticks (converted once, as a call tree's:
     * profile.h), the end of its last step, the coroutines it left, awaiting */
    uint64_t running_ticks, suspended_ticks, end_ticks;
    uint32_t *chain;
    size_t chain_len, chain_cap, step_cap;
} tt_task_lane;

typedef struct tt_task_await {
    size_t process;
    uint32_t region;
    uint64_t suspended_ns, suspensions;
    uint64_t suspended_ticks; /* while reading */
} tt_task_await;

typedef struct tt_tasks {
    const tt_trace *trace;
    size_t lane_count;
    tt_task_lane *lanes; /* by process, then task id */
    size_t await_count;
    tt_task_await *awaits; /* most suspended first */
} tt_tasks;

/* ---- Made by the profile's read (profile.c) ----
 *
 * A step's exclusive time per region comes from the call tree's inclusive
 * times, not from each event: a segment is a stretch of time in which one
 * step is the innermost open one; the nodes it touches (entered in it, or
 * open where it starts) are stamped with it, and where it ends, each
 * node's inclusive time over the segment goes to its region and comes off
 * its parent's (the segment's root has none in it), for the step's task.
 * The profile's loop tests, per ENTER, whether the node is stamped with
 * tt_tasks_reading_stamp (never, while the next ENTER begins a step), and
 * per LEAVE, whether it ends the innermost step (its depth after is
 * step_depth - 1); the rest is here, out of its way. */
typedef struct tt_tasks_reading {
    tt_tasks *tasks;
    uint32_t pending;    /* the lane whose step the next ENTER begins; UINT32_MAX for none */
    uint32_t segment;    /* the stamp of the segment; 0 while no step is open */
    uint32_t step_depth; /* the depth of the innermost open step's ENTER; UINT32_MAX for none */
    uint32_t *seen;      /* by node: the segment that stamped it (0: none); never UINT32_MAX */
    uint64_t *start;     /* by node: its inclusive time where the segment first touched it */
    uint64_t *excl;      /* by node: its exclusive time in the segment, where the segment ends */
    size_t seen_cap, start_cap, excl_cap;
    uint32_t stamps;   /* the last stamp given */
    uint32_t *touched; /* the segment's nodes, in the order first touched */
    size_t touched_count, touched_cap;
    /* The lanes alone (tt_tasks_build, for a viewer that draws the steps):
     * times summed in ns, each step's and suspension's as drawn; else in
     * ticks, converted once (the summary's, which a writer's tree gives). */
    int step_ns;
    const tt_process *process;
    size_t process_index;
    size_t stream, first;      /* the stream being read; the lane of the process's task 0 */
    struct tt_open_step *open; /* the open steps, innermost last */
    size_t open_count, open_cap;
    uint32_t *chain;
    size_t chain_cap;
    tt_u64map exclusive; /* (lane, region) -> ns */
    tt_u64map awaited;   /* (process, region) -> index into awaits */
    size_t await_cap;
} tt_tasks_reading;

/* What seen[node] is for an ENTER into node that needs no call to
 * tt_tasks_reading_enter: the segment, or UINT32_MAX (no node's) while a
 * step is pending. */
static inline uint32_t tt_tasks_reading_stamp(const tt_tasks_reading *r)
{
    return r->pending != UINT32_MAX ? UINT32_MAX : r->segment;
}

/* Lanes for the tasks of process `process` (SIZE_MAX: all) of t. -1 when memory runs out. */
int tt_tasks_reading_open(tt_tasks_reading *r, const tt_trace *t, size_t process, tt_error *err);
/* Process `index` is read next (processes in trace order), then each of its streams. */
void tt_tasks_reading_process(tt_tasks_reading *r, size_t index);
void tt_tasks_reading_stream(tt_tasks_reading *r, size_t stream);
/* The call tree has node `node` (new: not stamped). -1 when memory runs out. */
int tt_tasks_reading_node(tt_tasks_reading *r, uint32_t node);
/* A TASK_RESUME read. */
void tt_tasks_reading_resume(tt_tasks_reading *r, const tt_event *ev);
/* An ENTER into `node` (the tree's `nodes`, its ENTER counted, inclusive
 * times in ticks), to depth `depth`, at `time` (ns) and `ticks`, when
 * pending is set or the node is not stamped. */
int tt_tasks_reading_enter(tt_tasks_reading *r, const tt_profile_node *nodes, uint32_t node, uint32_t depth,
                           uint64_t time, uint64_t ticks);
/* The LEAVE that ends the innermost step at `time`, the last of `returns`
 * in a row since the last ENTER, into `deepest`; cur is the node open after
 * it, at `depth`. */
int tt_tasks_reading_leave(tt_tasks_reading *r, const tt_profile_node *nodes, uint32_t deepest, uint32_t returns,
                           uint32_t cur, uint32_t depth, uint64_t time, uint64_t ticks);
/* The tasks of the stream being read, from its writer's tree instead. -1
 * when memory runs out. */
int tt_tasks_reading_tree(tt_tasks_reading *r, const tt_stream_tree *tree);
/* The tasks, once every stream was read (NULL after a failure: -1). */
int tt_tasks_reading_close(tt_tasks_reading *r, tt_tasks **out, int failed);

/* 1 when some process of t defined a task. */
int tt_trace_has_tasks(const tt_trace *t);

int tt_tasks_build(const tt_trace *t, tt_tasks **out, tt_error *err);
void tt_tasks_free(tt_tasks *tasks);

/* The name of a lane's task. */
const char *tt_task_lane_name(const tt_tasks *tasks, const tt_task_lane *lane);

/* The steps of `lane` that overlap [begin, end], steps less than `gap` ns
 * apart joined into one: up to `max` pairs written to out (begin, end, ...);
 * returns how many pairs there were (may exceed max). */
size_t tt_task_lane_window(const tt_task_lane *lane, uint64_t begin, uint64_t end, uint64_t gap, uint64_t *out,
                           size_t max);

/* The summary's tasks section ("" when there are none), at most `top` rows
 * per table; NULL when memory runs out. free() it. */
char *tt_tasks_render_text(const tt_tasks *tasks, size_t top);

#endif

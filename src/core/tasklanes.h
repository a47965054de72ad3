/* tasklanes.h -- asyncio tasks as lanes: their steps stitched together,
 * their suspended (awaiting) time, and where it went, from a trace through
 * the one reader.
 *
 * Contract:
 *  - tt_tasks_build reads every stream that has TASK_RESUME records once
 *    (a trace without tasks is not read at all), in memory proportional to
 *    the steps, not to the events.
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
#include "reader.h"

typedef struct tt_task_step {
    uint64_t begin, end; /* ns since the epoch */
    uint32_t region;     /* the coroutine the loop resumed */
} tt_task_step;

typedef struct tt_task_lane {
    size_t process;     /* index into the trace's processes */
    uint32_t task;      /* its id in that process (task_names) */
    size_t stream;      /* the thread of its first step */
    size_t step_count;
    tt_task_step *steps; /* in time order */
    uint64_t running_ns, suspended_ns;
    uint32_t top_region; /* most exclusive time in its steps; UINT32_MAX when none */
    uint64_t top_ns;
    /* while reading: the coroutines its last step left, awaiting */
    uint32_t *chain;
    size_t chain_len, chain_cap, step_cap;
} tt_task_lane;

typedef struct tt_task_await {
    size_t process;
    uint32_t region;
    uint64_t suspended_ns, suspensions;
} tt_task_await;

typedef struct tt_tasks {
    const tt_trace *trace;
    size_t lane_count;
    tt_task_lane *lanes; /* by process, then task id */
    size_t await_count;
    tt_task_await *awaits; /* most suspended first */
} tt_tasks;

/* 1 when some process of t defined a task. */
int tt_trace_has_tasks(const tt_trace *t);

int tt_tasks_build(const tt_trace *t, tt_tasks **out, tt_error *err);
void tt_tasks_free(tt_tasks *tasks);

/* Keeps the lanes and awaits of process `process` (an index into the
 * trace's processes) and drops the others. */
void tt_tasks_keep_process(tt_tasks *tasks, size_t process);

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

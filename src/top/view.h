/* view.h -- the rows `tracetop top` shows: one per function, for all
 * threads merged or for one thread, filtered and sorted.
 *
 * Columns (PRODUCT.md): total (inclusive) time, exclusive ("own") time, %
 * (own time as a share of the time covered: the threads' spans summed, as
 * `tracetop summary` computes its "excl %"), CPU time (agg.h: the threads'
 * sampled CPU time shared out), % in descendants (the share of the
 * function's total time spent in the calls it made), calls, and the
 * function's file and line.
 *
 * Over what time: the window, the last `window` whole seconds of each
 * process's clock and the current one (agg.h: its seconds), so that what
 * runs now leads; or, with window 0, everything since top attached (or was
 * reset). A process that runs has its window end now, measured or not: a
 * process switched off shows nothing after a window; one that ended, at
 * its last event.
 *
 * Calls still running count up to now: their time is added as the rows
 * are built, so a function that has not returned yet (main, a long sleep)
 * shows its time as it grows. A thread that ended, or whose process does
 * not measure, counts up to its last event.
 *
 * Steady rows: a row moves above the one before it only when its sort key
 * leads by more than TT_VIEW_STEADY (a relative margin), so that two
 * functions running neck and neck do not swap places at every refresh.
 * The first build after a change of sort, window, thread or filter sorts
 * exactly.
 */
#ifndef TRACETOP_TOP_VIEW_H
#define TRACETOP_TOP_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "watch.h"

#define TT_VIEW_STEADY 0.03

enum tt_sort { TT_SORT_OWN, TT_SORT_CPU, TT_SORT_TOTAL, TT_SORT_CALLS, TT_SORT_DESCENDANTS, TT_SORT_COUNT };

typedef struct tt_row {
    uint32_t function; /* in the watch's table */
    uint64_t calls;
    double own, total, cpu; /* seconds */
    double own_percent;     /* of the time covered */
    double cpu_percent;     /* of the longest span of a thread covered: 100 is one CPU busy, as `top` says */
    double desc_percent;    /* of its total */
} tt_row;

/* A thread of the watch. */
typedef struct tt_view_thread {
    const tt_watched *process;
    const tt_agg_thread *thread;
} tt_view_thread;

typedef struct tt_view {
    /* What to show; change them through the setters below. */
    enum tt_sort sort;
    unsigned window;  /* seconds before the current one; 0: since top attached (or was reset) */
    long pid;         /* 0: every process; else only this one's threads */
    long stream;      /* -1: every thread of pid; else only this stream of it */
    char filter[128]; /* rows whose function name contains it (any case); "" for all */

    /* The last build. */
    tt_row *rows;
    size_t row_count;
    double seconds;      /* the time covered: the threads' spans, summed */
    double wall;         /* the longest span of a thread covered */
    size_t thread_count; /* threads in view that cover some time */

    /* Between builds. */
    int steady;     /* 0: the next build sorts exactly */
    uint32_t *rank; /* by function: row index in the last build, UINT32_MAX when none */
    size_t rank_cap, row_cap;
    tt_row *acc; /* by function; .function NONE where unused */
    size_t acc_cap;
    uint32_t *touched; /* functions summed in acc */
    size_t touched_count, touched_cap;
} tt_view;

void tt_view_init(tt_view *v); /* all threads, since top attached, by own time */
void tt_view_free(tt_view *v);

void tt_view_set_sort(tt_view *v, enum tt_sort sort);
void tt_view_set_filter(tt_view *v, const char *filter);
/* At most TT_AGG_WINDOW_MAX. */
void tt_view_set_window(tt_view *v, unsigned window);
/* The threads summed, named rather than by index, so that the choice holds
 * while processes and threads come and go: one process (pid, stream -1),
 * one thread of it, or every thread (pid 0). */
void tt_view_set_scope(tt_view *v, long pid, long stream);

/* 1 while the thread runs: seen, not ended, its process running. */
int tt_view_thread_live(const tt_watched *p, const tt_agg_thread *th);

/* `t`: from every thread to the first live thread, from a thread to the
 * next live one (processes in the watch's order, threads by stream), from
 * the last back to every thread. */
void tt_view_next_thread(tt_view *v, const tt_watch *w);

/* The thread of the scope; none (NULL) when the scope is not one thread
 * or the watch no longer has it. */
tt_view_thread tt_view_scope_thread(const tt_view *v, const tt_watch *w);

/* Builds the rows from the watch as it is now. 0, or -1 when memory runs
 * out (the last rows stay). */
int tt_view_build(tt_view *v, const tt_watch *w);

const char *tt_sort_name(enum tt_sort sort);

/* ---- objects (--objects): one row per type, the processes merged by the
 * type's name, most alive first. Rates are per second over the last
 * TT_OBJVIEW_RATE_NS or a little more: over one refresh they would flicker,
 * as a process writes its counts in batches (objects.c). A type gets its
 * first rate one such span after it appears. ---- */

#define TT_OBJVIEW_RATE_NS 1000000000ull

typedef struct tt_objrow {
    char *type;
    uint64_t created, destroyed; /* since top attached or was reset */
    int64_t alive;               /* agg.h: tt_agg_objtype */
    double created_rate, destroyed_rate;
    uint64_t base_created, base_destroyed; /* the totals when the rates were last taken */
    int seen;                              /* in the last build */
} tt_objrow;

typedef struct tt_objview {
    tt_objrow *rows;
    size_t row_count, row_cap;
    uint64_t rate_ns; /* CLOCK_MONOTONIC when the rates were last taken; 0 before the first build */
    int counting;     /* a watched process counts objects */
} tt_objview;

void tt_objview_free(tt_objview *o);

/* Builds the rows from the watch as it is at now_ns. 0, or -1 when memory
 * runs out (the rows are then incomplete until a build succeeds). */
int tt_objview_build(tt_objview *o, const tt_watch *w, uint64_t now_ns);

#endif

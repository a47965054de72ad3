/* watch.h -- the live processes `tracetop top` watches: finding them,
 * attaching, reading what they send into their aggregations (agg.h),
 * asking them to switch measurement.
 *
 * A watch follows the processes given by pid, or every live process of the
 * user, picking up new ones at each scan. A process stays in the watch
 * after it ends, with its last counts; one that died without ending (a
 * crash, SIGKILL) is marked gone, and its channel is removed by the next
 * scan (live.h: tt_live_list).
 */
#ifndef TRACETOP_TOP_WATCH_H
#define TRACETOP_TOP_WATCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agg.h"
#include "error.h"
#include "live.h"

typedef struct tt_watched {
    /* The process's channel; NULL once the process ended (or died, or its
     * channel is no longer read) and all it sent was read, so that its
     * shared memory is given back. */
    tt_live_view *view;
    tt_agg_process agg;
    pid_t pid;
    char name[256];      /* what runs */
    int gone;            /* died without ending its measurement */
    const char *problem; /* why it is no longer read (damaged channel or data); NULL when fine */
    /* As the channel last said. */
    tt_live_state state;
    int measuring;
    uint64_t dropped;      /* bytes of events it could not hand over */
    uint64_t dropped_base; /* `dropped` when counting (re)started */
    uint64_t ticket;       /* a measurement request not answered yet; 0 when none */
} tt_watched;

typedef struct tt_watch {
    pid_t *only; /* the processes to watch; none: every live process of this user */
    size_t only_count;
    tt_functions functions;
    tt_watched **procs;
    size_t count, cap;
    size_t removed;                /* stale channels removed by scans */
    char notice[sizeof(tt_error)]; /* the last thing the user should know, "" when none */
} tt_watch;

/* Watches the `count` processes of `only` (copied), or every live process
 * of the user when count is 0. -1 when out of memory. */
int tt_watch_init(tt_watch *w, const pid_t *only, size_t count);
void tt_watch_free(tt_watch *w);

/* Attaches to live processes not watched yet (and removes stale
 * channels); notes which watched processes died. Fails only when the
 * channels cannot be listed or memory runs out. */
int tt_watch_scan(tt_watch *w, tt_error *err);

/* Reads what the watched processes sent: definitions, then slices, at most
 * about `budget` bytes of slices per process. Returns the bytes read. */
size_t tt_watch_consume(tt_watch *w, size_t budget);

/* Counts start again from now (agg.h: tt_agg_reset). */
void tt_watch_reset(tt_watch *w);

/* Asks every running process to switch measurement on or off; the answers
 * come in through tt_watch_consume. */
void tt_watch_request(tt_watch *w, int on);

/* Processes still to answer a request. */
size_t tt_watch_pending(const tt_watch *w);

/* 1 while the process runs and sends (not ended, gone or broken). */
int tt_watched_running(const tt_watched *p);

/* In words: "measuring", "not measuring", "ended", "gone" or "not read". */
const char *tt_watched_state(const tt_watched *p);

/* The events the channel could not hand over since counting started: an
 * estimate, from the bytes lost and the bytes per event read. */
uint64_t tt_watched_dropped_events(const tt_watched *p);

/* Now, in the process's ticks: its clock is this machine's (clock.h). */
uint64_t tt_watched_now(const tt_watched *p);

#endif

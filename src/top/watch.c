/* watch.c -- the processes top watches (see watch.h). */
#include "watch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "format.h"
#include "grow.h"

int tt_watch_init(tt_watch *w, const pid_t *only, size_t count)
{
    memset(w, 0, sizeof *w);
    if (!count) return 0;
    if (!(w->only = malloc(count * sizeof *only))) return -1;
    memcpy(w->only, only, count * sizeof *only);
    w->only_count = count;
    return 0;
}

/* 1 when the watch is to follow process `pid`. */
static int wanted(const tt_watch *w, pid_t pid)
{
    if (!w->only_count) return 1;
    for (size_t i = 0; i < w->only_count; i++)
        if (w->only[i] == pid) return 1;
    return 0;
}

void tt_watch_free(tt_watch *w)
{
    for (size_t i = 0; i < w->count; i++) {
        tt_live_view_close(w->procs[i]->view);
        tt_agg_free(&w->procs[i]->agg);
        free(w->procs[i]);
    }
    free(w->procs);
    free(w->only);
    tt_functions_free(&w->functions);
    memset(w, 0, sizeof *w);
}

/* The watched process whose channel is the one now named for `pid`. */
static tt_watched *find(const tt_watch *w, pid_t pid)
{
    for (size_t i = 0; i < w->count; i++)
        if (w->procs[i]->pid == pid && w->procs[i]->view && tt_live_current(w->procs[i]->view)) return w->procs[i];
    return NULL;
}

/* Notes what the channel says. */
static void look(tt_watched *p)
{
    p->state = tt_live_process_state(p->view);
    p->measuring = tt_live_measuring(p->view);
    p->dropped = tt_live_dropped_bytes(p->view);
}

/* Gives the channel back once it has nothing more to say. */
static void retire(tt_watched *p)
{
    tt_live_view_close(p->view);
    p->view = NULL;
    p->measuring = 0;
    p->ticket = 0;
}

/* Watches process `pid`: 0, or -1 when it cannot be attached (noted). */
static int add(tt_watch *w, pid_t pid)
{
    tt_error err;
    tt_live_view *view;
    if (tt_live_open(pid, &view, &err) < 0) {
        snprintf(w->notice, sizeof w->notice, "%s", err.message);
        return -1;
    }
    if (tt_live_process_state(view) != TT_LIVE_RUNNING) {
        tt_live_view_close(view);
        return -1;
    }
    tt_live_attach(view);
    tt_watched *p = calloc(1, sizeof *p);
    if (!p || TT_RESERVE(w->procs, w->cap, w->count + 1) < 0) {
        free(p);
        tt_live_view_close(view);
        snprintf(w->notice, sizeof w->notice, "out of memory");
        return -1;
    }
    p->view = view;
    p->pid = pid;
    snprintf(p->name, sizeof p->name, "%s", tt_live_name(view));
    tt_agg_init(&p->agg, &w->functions);
    look(p);
    p->dropped_base = p->dropped;
    w->procs[w->count++] = p;
    return 0;
}

int tt_watch_scan(tt_watch *w, tt_error *err)
{
    pid_t *pids;
    size_t count, removed;
    if (tt_live_list(&pids, &count, &removed, err) < 0) return -1;
    w->removed += removed;
    for (size_t i = 0; i < count; i++)
        if (wanted(w, pids[i]) && !find(w, pids[i])) add(w, pids[i]);
    free(pids);
    for (size_t i = 0; i < w->count; i++) {
        tt_watched *p = w->procs[i];
        /* The state read now, not at the last look: a process that ended
         * its measurement and exited since is not gone. */
        if (p->view && !p->gone && tt_live_process_state(p->view) == TT_LIVE_RUNNING && !tt_live_alive(p->view))
            p->gone = 1;
    }
    return 0;
}

int tt_watched_running(const tt_watched *p)
{
    return p->view && !p->gone && !p->problem && !p->agg.ended && p->state == TT_LIVE_RUNNING;
}

static void consume_one(tt_watched *p, size_t budget, size_t *read)
{
    const char *why = NULL;
    size_t len;
    look(p);
    const uint8_t *log = tt_live_defs_log(p->view, &len);
    if (!log) why = "the live channel says it holds more definitions than it does";
    if (!log || tt_agg_defs(&p->agg, log, len, &why) < 0) {
        p->problem = why;
        retire(p);
        return;
    }
    tt_live_beat(p->view);
    tt_live_slice s;
    size_t taken = 0;
    int rc = 0;
    while (taken < budget && (rc = tt_live_next(p->view, &s, &why)) == 1) {
        /* What was published before the slice may name new ids. */
        if (tt_live_defs_log(p->view, &len) && len > p->agg.id_bound) p->agg.id_bound = len;
        if (tt_agg_slice(&p->agg, &s, &why) < 0) {
            p->problem = why;
            break;
        }
        taken += s.len;
    }
    if (rc < 0) p->problem = why;
    p->dropped = tt_live_dropped_bytes(p->view); /* with the overruns just met: the last counts are whole */
    if (p->ticket && tt_live_answered(p->view, p->ticket)) p->ticket = 0;
    if (p->state == TT_LIVE_BROKEN && !p->problem)
        p->problem = "the live channel stopped: the program defined more than it can hold";
    *read += taken;
    /* Over once the channel says so (or its process died), and all read. */
    if (p->problem || ((p->state != TT_LIVE_RUNNING || p->gone) && rc == 0 && taken < budget)) retire(p);
}

size_t tt_watch_consume(tt_watch *w, size_t budget)
{
    size_t read = 0;
    for (size_t i = 0; i < w->count; i++)
        if (w->procs[i]->view) consume_one(w->procs[i], budget, &read);
    return read;
}

void tt_watch_reset(tt_watch *w)
{
    for (size_t i = 0; i < w->count; i++) {
        tt_watched *p = w->procs[i];
        tt_agg_reset(&p->agg);
        p->dropped_base = p->dropped;
    }
}

void tt_watch_request(tt_watch *w, int on)
{
    for (size_t i = 0; i < w->count; i++)
        if (tt_watched_running(w->procs[i])) w->procs[i]->ticket = tt_live_request(w->procs[i]->view, on);
}

size_t tt_watch_pending(const tt_watch *w)
{
    size_t n = 0;
    for (size_t i = 0; i < w->count; i++) n += w->procs[i]->ticket && tt_watched_running(w->procs[i]);
    return n;
}

const char *tt_watched_state(const tt_watched *p)
{
    if (p->problem) return "not read";
    if (p->gone) return "gone";
    if (!tt_watched_running(p)) return "ended";
    return p->measuring ? "measuring" : "not measuring";
}

uint64_t tt_watched_dropped_events(const tt_watched *p)
{
    uint64_t bytes = p->dropped - p->dropped_base;
    if (!bytes) return 0;
    /* Before any event was read, guess three bytes an event (an ENTER or
     * LEAVE with short fields). */
    double per_event = p->agg.events ? (double)p->agg.bytes / (double)p->agg.events : 3.0;
    uint64_t events = (uint64_t)((double)bytes / per_event + 0.5);
    return events ? events : 1;
}

uint64_t tt_watched_now(const tt_watched *p)
{
#if defined(__x86_64__)
    if (p->agg.clock == TT_CLOCK_TSC) return __rdtsc();
#endif
    return tt_monotonic_ns();
}

/* fastpath.h -- the tt_fast_* paths: an event recorded with no call.
 *
 * Nearly every event is a call of a function whose region is known and
 * recorded, or a return, on a thread whose stream is current. The hooks
 * (profilehook.c, monitoring.c) record those with no call (so saving no
 * register for one) when the clock is the TSC and the chunk and the tree
 * have room; for every other event, and these when they cannot, they call
 * their _slow or _general function, which does it all again from the
 * start. tt_fast_enter, tt_fast_enter_c and tt_fast_leave are inlined into
 * every hook that takes them (always_inline: there are several, and a call
 * would cost the registers saved that the paths exist to spare).
 *
 * Whether a thread may take them at all is one test of its chunk's room
 * (tt_fast_stream), made possible by epochs. tt_measurement.fast_epoch is
 * the active session's epoch while every condition of the paths holds:
 * measuring, calls recorded, the clock the TSC, tracetop's the first of
 * the code objects' extra slots (pyregions.h: tt_code_entry_first) and no
 * sys.setprofile of the program waiting (ownprofile.c); else 0, which no
 * session's epoch is. tt_fast_update recomputes it after any of them
 * changes (with the GIL held); tt_fast_close, from the writer thread,
 * stores 0 at once.
 *
 * A thread takes the paths into the stream in its tt_tls_fast, which is its
 * stream only while the stream's epoch is fast_epoch ("open"), and
 * tt_no_stream otherwise, whose chunk never has room. A thread opens its
 * paths on an event its hook's _slow or _general function takes
 * (tt_thread_stream, tt_fast_opened); every change of fast_epoch closes
 * them for every thread of the session.
 */
#ifndef TRACETOP_FASTPATH_H
#define TRACETOP_FASTPATH_H

#include "ext.h"

#include "measurement.h"
#include "pyregions.h"
#include "regionfilter.h"
#include "tasks.h"

#pragma GCC visibility push(hidden)

/* Recomputes tt_measurement.fast_epoch from the state it depends on, and
 * closes every thread's paths when it changed. With the GIL held. */
void tt_fast_update(void);
/* From the writer thread: stores 0 in fast_epoch and closes the paths of
 * every thread of the active session (those it cannot reach without
 * waiting, the next tt_fast_update). */
void tt_fast_close(void);
/* With the GIL held, before the session changes: stores 0 in fast_epoch
 * and closes the paths of every thread of the session recorded until now. */
void tt_fast_close_session(void);
/* One thread more (1) or fewer (-1) with a sys.setprofile waiting
 * (ownprofile.c): none may take the paths meanwhile. */
void tt_fast_pending_setter(int change);

extern __thread _Atomic(tt_stream *) tt_tls_fast __attribute__((tls_model("initial-exec")));
/* Opens the calling thread's paths into s, its stream, if they may be. */
void tt_fast_open(tt_stream *s);

/* s, the calling thread's current stream, its paths opened if they may be:
 * for the hooks' _slow and _general functions, as they find the stream. */
static inline tt_stream *tt_fast_opened(tt_stream *s)
{
    if (tt_unlikely(atomic_load_explicit(&tt_tls_fast, memory_order_relaxed) != s)) tt_fast_open(s);
    return s;
}

/* The calling thread's stream when the event can be recorded so, with
 * where its record goes (the chunk, and the offset in it); NULL otherwise.
 * The time is read as the record is made (tt_fast_now): after the branches
 * on the event, whose arguments it would otherwise displace. */
static inline tt_stream *tt_fast_stream(tt_chunk **chunk, uint32_t *used)
{
    tt_stream *s = atomic_load_explicit(&tt_tls_fast, memory_order_relaxed);
    if (tt_likely(tt_record_room(s, chunk, used))) return s;
    return NULL;
}

/* The clock, which is the TSC wherever a thread's paths are open (fast_epoch). */
static inline uint64_t tt_fast_now(void)
{
#if defined(__x86_64__)
    return __rdtsc();
#else
    return tt_clock_now();
#endif
}

/* The region of a coroutine's entry (TT_CODE_COROUTINE) that a coroutine
 * resumes, awaited inside a task's step: a plain call, recorded as one;
 * UINT64_MAX, which no entry is, for any other entry not recorded so. */
static inline uint64_t tt_tasks_awaited(const tt_stream *s, uint64_t entry)
{
    /* The caller is the current node when no call not recorded is open
     * above it (the root's `skipped` is never 0: calltree.h); a step's node
     * is a coroutine's, as every step's region is (tasks.c), so awaiting. */
    const tt_calltree_node *caller = s->tree.cur;
    uint32_t region = caller->region;
    if ((entry >> 32) == 1 && !tt_region_filtered && !caller->skipped &&
        (region >= TT_CALLTREE_STEP || (region < tt_tasks_awaiting_cap && tt_tasks_awaiting[region])))
        return (uint32_t)entry;
    return UINT64_MAX;
}

/* A delta of the paths below from this one up is a clock that went back
 * (their `now` less the last record's time, modulo 2^64): the TSC, which
 * the kernel keeps in step across CPUs where tracetop reads it (clock.c),
 * may still be a few ticks apart. tt_stream_dt finds it. */
#define TT_FAST_DT_BACK (UINT64_MAX >> 1)

/* What one of the paths below did with an event. */
enum tt_fast {
    TT_FAST_GENERAL, /* nothing: the hook's _general function is to take it */
    TT_FAST_DONE,    /* recorded */
    TT_FAST_NOW,     /* nothing, and nothing is to be looked up but the node:
                      * tt_stream_enter_now or tt_stream_leave_now records it */
};

/* A call of the region `entry` names (pyregions.h: tt_code_entry), *region
 * set for TT_FAST_NOW. TT_FAST_GENERAL for an entry that is not a plain
 * region's (none, a coroutine's resumed by no coroutine, filtered; one
 * resumed by a coroutine is a plain call: tt_tasks_awaited); TT_FAST_NOW
 * for a call whose node the call tree does not find at once (calltree.h),
 * or whose delta the short and medium forms do not fit (a long one, rare,
 * or a clock that went back). Nothing is changed before that is known, and
 * nothing is called here: the hooks hand such an event on with a jump, and
 * save no register on any path. The call tree, which is the stack of
 * recorded calls (stream.h), has room: tt_fast_stream found it
 * (fast_used_limit), so there is no test of it here, and nothing else is
 * pushed. `filtering`, a constant where the caller knows that no filter is
 * in force (tt_region_filter_in_force), spares the call the test of
 * tt_region_filtered. One test finds every entry but a plain region's: a
 * call tree's regions are below TT_CALLTREE_STEP, a bound the test takes as
 * an immediate operand, and every other entry is above it (TT_STACK_SKIP,
 * TT_STACK_OWN, UINT64_MAX, a coroutine's flag). The time is the TSC just
 * read: the forms' bounds are the only tests of its delta. */
static inline __attribute__((always_inline)) enum tt_fast tt_fast_enter(tt_stream *s, tt_chunk *chunk, uint32_t used,
                                                                        uint64_t entry, int filtering, uint32_t *region)
{
    if (tt_unlikely(entry >= TT_CALLTREE_STEP || (filtering && tt_region_filtered))) {
        if ((entry = tt_tasks_awaited(s, entry)) == UINT64_MAX) return TT_FAST_GENERAL;
        *region = (uint32_t)entry;
        return TT_FAST_NOW;
    }
    *region = (uint32_t)entry;
    tt_calltree_node *node = tt_calltree_last_child(&s->tree);
    if (tt_unlikely(node->region != *region) && !(node = tt_calltree_next_child(&s->tree, node, *region)))
        return TT_FAST_NOW;
    uint64_t now = tt_fast_now(), dt = now - s->last_ticks;
    if (tt_likely(dt < TT_EV_SHORT_DT_LIMIT)) {
        s->last_ticks = now;
        tt_calltree_enter_node(&s->tree, node, now);
        tt_stream_enter_short(s, chunk, used, dt, *region);
        return TT_FAST_DONE;
    }
    if (tt_likely(dt < TT_EV_ENTER_MEDIUM_DT_LIMIT)) {
        s->last_ticks = now;
        tt_calltree_enter_node(&s->tree, node, now);
        tt_stream_enter_medium(s, chunk, used, dt, *region);
        return TT_FAST_DONE;
    }
    return TT_FAST_NOW;
}

/* A call of the C function func (tt_cfunction_region), while C calls are
 * recorded (tt_measurement.record_c_calls: the caller's test), as
 * tt_fast_enter; TT_FAST_GENERAL also when its region is not in the cache. */
static inline __attribute__((always_inline)) enum tt_fast
tt_fast_enter_c(tt_stream *s, tt_chunk *chunk, uint32_t used, PyObject *func, int filtering, uint32_t *region)
{
    PyMethodDef *def = tt_method_def_exact(func);
    const tt_cfunction_cached *cached = def ? tt_cfunction_cached_entry(def) : NULL;
    return cached ? tt_fast_enter(s, chunk, used, cached->region, filtering, region) : TT_FAST_GENERAL;
}

/* A return, as tt_fast_enter: TT_FAST_GENERAL when the innermost call is
 * not a recorded one (calls not recorded are open above the current node,
 * or none is open: the root's `skipped` is never 0, calltree.h),
 * TT_FAST_NOW when its delta is a clock that went back. A return's long
 * form is recorded here, which keeps the hooks' registers as they are: a
 * return after a long C call (a sort, a file's read) takes it. */
static inline __attribute__((always_inline)) enum tt_fast tt_fast_leave(tt_stream *s, tt_chunk *chunk, uint32_t used)
{
    tt_calltree_node *node = s->tree.cur;
    if (tt_unlikely(node->skipped)) return TT_FAST_GENERAL;
    uint64_t now = tt_fast_now(), dt = now - s->last_ticks;
    if (tt_likely(dt < TT_EV_SHORT_DT_LIMIT)) {
        s->last_ticks = now;
        tt_calltree_leave(&s->tree, node, now);
        tt_stream_leave_short(s, chunk, used, dt);
        return TT_FAST_DONE;
    }
    if (tt_likely(dt < TT_EV_MEDIUM_DT_LIMIT)) {
        s->last_ticks = now;
        tt_calltree_leave(&s->tree, node, now);
        tt_stream_leave_medium(s, chunk, used, dt);
        return TT_FAST_DONE;
    }
    if (tt_likely(dt < TT_FAST_DT_BACK)) {
        s->last_ticks = now;
        tt_calltree_leave(&s->tree, node, now);
        tt_stream_leave_long(s, chunk, used, dt);
        return TT_FAST_DONE;
    }
    return TT_FAST_NOW;
}

#pragma GCC visibility pop

#endif

/* ext.h -- what the parts of the CPython extension `tracetop._tracetop`
 * share. module.c owns the module; each other file adds its functions or
 * types through one tt_ext_add_* call made from the module's init.
 *
 * Everything here runs with the GIL held unless it says otherwise; the GIL
 * is what serialises the registry and stream creation.
 */
#ifndef TRACETOP_EXT_H
#define TRACETOP_EXT_H

#include "pyshared.h"

#include <frameobject.h>

#include "clock.h"
#include "error.h"
#include "ptrmap.h"
#include "registry.h"
#include "session.h"
#include "stream.h"

/* Everything declared from here on is the extension's own (meson builds it
 * with hidden visibility): its variables are then read without a detour
 * through the global offset table, as the hooks do on every event. */
#pragma GCC visibility push(hidden)

int tt_ext_add_hooks(PyObject *module);  /* hooks.c: start, stop, instrumenter */
int tt_ext_add_api(PyObject *module);    /* api.c: regions, parameters, counters */
int tt_ext_add_inline(PyObject *module); /* inline.c: the CPU and memory sampler (Jupyter) */
int tt_ext_add_fork(PyObject *module);   /* fork.c: measuring on in a forked child */
int tt_ext_add_terminate(PyObject *module); /* terminate.c: SIGTERM completes the trace */
int tt_ext_add_mpi(PyObject *module);    /* mpi.c: MPI calls recorded */
int tt_ext_add_attach(PyObject *module); /* attach.c: the end of an attached measurement */
int tt_ext_add_objects(PyObject *module); /* objects.c: objects counted */

/* Counting objects (objects.c) in the active session: start is a no-op
 * when counting already or not measuring, -1 with TraceError where this
 * Python cannot count them; stop records what was counted when the
 * calling thread has a stream (else it is recorded later); end, as the
 * session stops, records everything and forgets it. */
int tt_objects_start(void);
void tt_objects_stop(void);
void tt_objects_end(void);
/* In a forked child: what the parent counted and had not recorded yet is
 * the parent's to record. */
void tt_objects_forked(void);
int tt_objects_counting(void);
/* An object CPython made only because tracetop measures (the arguments of
 * tracetop's gc and sys.monitoring callbacks): counted neither as made nor,
 * later, as destroyed. */
void tt_objects_disown(PyObject *op);
/* Between own_begin and own_end the calling thread runs tracetop's own
 * code for the program (naming a function at its first call, a thread at
 * its first event): what it makes is not counted. own_begin returns what
 * own_end takes back. */
int tt_objects_own_begin(void);
void tt_objects_own_end(int was);
int tt_ext_add_gc(PyObject *module);     /* gc.c: garbage collections recorded */
int tt_ext_add_threadwatch(PyObject *module); /* threadwatch.c: threading, imported when the program does */
int tt_ext_add_task_recording(PyObject *module); /* tasks.c: tasks_unavailable */

/* Garbage collections are recorded from tt_gc_start (-1 with an exception
 * when gc.callbacks cannot take ours) to tt_gc_stop: while calls are. */
int tt_gc_start(void);
void tt_gc_stop(void);

/* In a forked child (terminate.c): SIGTERM's default action back. */
void tt_terminate_forked(void);
/* Around a fork (terminate.c): the watcher thread ended (1: there was
 * one), and started again. */
int tt_terminate_pause(void);
void tt_terminate_resume(void);

/* ---- the running measurement (hooks.c) ---- */

/* The session being recorded, NULL when none: every entry point checks it
 * first, so outside a measurement each is a no-op. Set by tt_set_active. */
extern tt_session *tt_active;
void tt_set_active(tt_session *session);

/* The active session's epoch while the hooks may record an event without a
 * call (below, tt_fast_stream): measuring, calls recorded, the clock the
 * TSC, tracetop's the first of the code objects' extra slots (below,
 * tt_code_entry_first) and no sys.setprofile of the program waiting
 * (ownprofile.c); else 0, which no session's epoch is. tt_fast_update
 * recomputes it after any of them changes (with the GIL held); switching
 * calls off from the writer thread stores 0 at once (tt_fast_close).
 *
 * A thread takes those paths into the stream in its tt_tls_fast, which is
 * its stream only while the stream's epoch is tt_fast_epoch ("open"), and
 * tt_no_stream otherwise, whose chunk never has room: so the paths' one
 * test of the chunk's room stands for all of the above on every event. A
 * thread opens them for itself on an event that takes the general way
 * (tt_thread_stream); every change of tt_fast_epoch closes them for every
 * thread of the session. */
extern _Atomic uint64_t tt_fast_epoch;
void tt_fast_update(void);
/* From the writer thread: stores 0 in tt_fast_epoch and closes the paths
 * of every thread of the active session (those it cannot reach without
 * waiting, the next tt_fast_update). */
void tt_fast_close(void);
extern __thread _Atomic(tt_stream *) tt_tls_fast __attribute__((tls_model("initial-exec")));
void tt_fast_open(tt_stream *s);

/* s, the calling thread's current stream, its paths opened if they may be:
 * for the hooks' general ways, as they find the stream. */
static inline tt_stream *tt_fast_opened(tt_stream *s)
{
    if (tt_unlikely(atomic_load_explicit(&tt_tls_fast, memory_order_relaxed) != s)) tt_fast_open(s);
    return s;
}

/* Takes the hooks away from every thread, as when a measurement stops. */
void tt_remove_hooks(void);
/* In a forked child measuring on: the parent's notes of its threads (park.c)
 * dropped; the child's noted afresh while its hook is away. */
void tt_hooks_forked(void);

/* The calling thread is tracetop's own: nothing it does is recorded. */
void tt_own_thread(void);
/* For a thread of tracetop's own (a Python one, never the writer) that has
 * to record something of the whole process: a new stream named "tracetop",
 * not the thread's (its calls stay unrecorded), closed with the session.
 * NULL for any other thread, without a session, or out of memory. */
tt_stream *tt_own_thread_stream(void);

/* ---- calls running when tracetop attached (attach.c) ---- */

/* Notes the Python calls every other thread is in, for a measurement that
 * starts now (tt_active set, the hook just put on every thread, the GIL
 * held since). -1 with an exception. */
int tt_attach_capture(void);
/* The calls noted for the calling thread, whose ident is `ident`
 * (PyThread_get_thread_ident) and whose outermost frame is the one noted,
 * once: 1 with *out set (valid until tt_attach_forget), 0 when none. */
int tt_attach_open_calls(unsigned long ident, tt_open_calls *out);
void tt_attach_forget(void);
/* Wakes the attached measurement's attach_wait: from the writer thread. */
void tt_attach_request_detach(void);

/* key, value, key, value ... of a dict of str for tt_session_config,
 * borrowed from the dict's strings; PyMem_Free it. NULL with an exception. */
const char **tt_attribute_array(PyObject *attributes, size_t *count);

/* A session's wait for the writer (budget used up) lets other threads run. */
void tt_blocking_begin(void);
void tt_blocking_end(void);

/* The user's switch (enable_recording / disable_recording). */
extern int tt_recording;

/* What the hooks record: calls at all (recording on and the instrumenter
 * enabled), and calls of C functions (not --no-c-calls). */
extern int tt_record_calls;
extern int tt_record_c_calls;

/* Strings and regions of this process; they outlive sessions. */
extern tt_registry tt_definitions;

/* The calling thread's stream, the last one made for it; tt_no_stream
 * before its first: a stream of no session, whose epoch no session's is,
 * so that the hooks' one test of the epoch also finds a thread without one. */
extern tt_stream tt_no_stream;
extern __thread tt_stream *tt_tls_stream __attribute__((tls_model("initial-exec")));
tt_stream *tt_thread_stream_slow(void);

/* The calling thread's stream in the active session (tt_active is set),
 * created on its first event and resynchronised after the measurement was
 * off; NULL when out of memory. Epochs are unique over sessions: a stream
 * of the active session's epoch belongs to it. */
static inline tt_stream *tt_thread_stream(void)
{
    tt_stream *s = tt_tls_stream;
    if (tt_likely(s->epoch == atomic_load_explicit(&tt_active->epoch, memory_order_relaxed))) return tt_fast_opened(s);
    return tt_thread_stream_slow();
}

/* The calling thread's stream when it has one already, else NULL: for what
 * a thread may do before its first call (a garbage collection, objects made
 * in threading's bootstrap), when threading does not know the thread by its
 * name yet. A stream is made at a thread's first call, named then. */
static inline tt_stream *tt_thread_stream_if_made(void)
{
    tt_stream *s = tt_tls_stream;
    return tt_active && s->session == tt_active ? tt_thread_stream() : NULL;
}

/* ---- regions of Python and C functions (pyregions.c) ---- */

int tt_pyregions_init(PyObject *module);

/* Code objects whose file starts with one of these are tracetop's own and
 * never recorded. Replaces the previous list. */
int tt_pyregions_exclude(PyObject *paths);

/* The entry of a code object that is starting to run (the current
 * frame's): its region in the low 32 bits (TT_STACK_SKIP when it is not
 * recorded), TT_CODE_COROUTINE set when it is a coroutine's code (tasks.c).
 * Cached in the code object as entry + 1, so only the first call pays. */
#define TT_CODE_COROUTINE (UINT64_C(1) << 32)
uint64_t tt_code_entry_slow(PyObject *code);
extern Py_ssize_t tt_code_extra_index;

/* CPython's _PyCodeObjectExtra (internal, the same from 3.11 to 3.13): the
 * slots behind a code object's co_extra. Read inline, a call's region costs
 * a few loads instead of two calls into the interpreter. */
typedef struct tt_code_extra {
    Py_ssize_t ce_size;
    void *ce_extras[1];
} tt_code_extra;

/* The code object's entry when it is known already, else UINT64_MAX, which
 * no entry is (tt_fast_enter declines it as it does any that is not a
 * recorded region's). */
static inline uint64_t tt_code_entry_known(PyObject *code)
{
    const tt_code_extra *e = (const tt_code_extra *)((PyCodeObject *)code)->co_extra;
    if (tt_likely(e != NULL && tt_code_extra_index < e->ce_size))
        return (uint64_t)((uintptr_t)e->ce_extras[tt_code_extra_index] - 1); /* cached as entry + 1; 0: none */
    return UINT64_MAX;
}

/* The same for the hooks' paths without a call, which run only where
 * tracetop's slot is the first (tt_fast_update): a code object with extras
 * has that slot, as CPython sizes them for every index handed out before
 * (_PyCode_SetExtra, 3.11 to 3.13), so there is nothing to test but that. */
static inline uint64_t tt_code_entry_first(PyObject *code)
{
    const tt_code_extra *e = (const tt_code_extra *)((PyCodeObject *)code)->co_extra;
    if (tt_likely(e != NULL)) return (uint64_t)((uintptr_t)e->ce_extras[0] - 1);
    return UINT64_MAX;
}

/* 1 with *entry set when the code object's entry is known already. */
static inline int tt_code_entry_cached(PyObject *code, uint64_t *entry)
{
    *entry = tt_code_entry_known(code);
    return *entry != UINT64_MAX;
}

static inline uint64_t tt_code_entry(PyObject *code)
{
    uint64_t entry;
    return tt_code_entry_cached(code, &entry) ? entry : tt_code_entry_slow(code);
}

static inline uint32_t tt_code_region(PyObject *code) { return (uint32_t)tt_code_entry(code); }

/* 1 with *region set when the code object's region is known already. */
static inline int tt_code_region_cached(PyObject *code, uint32_t *region)
{
    uint64_t entry;
    if (!tt_code_entry_cached(code, &entry)) return 0;
    *region = (uint32_t)entry;
    return 1;
}

/* The region of the code a frame runs, any thread's frame: its module is
 * named from the frame's globals, not from the current frame's. */
uint32_t tt_frame_region(PyFrameObject *frame);

/* The region of a C function called from Python: a builtin function or
 * bound method (PyCFunctionObject) or, from sys.monitoring, a method
 * descriptor; TT_STACK_OWN for tracetop's own functions, TT_STACK_SKIP for
 * other callables. Known by the PyMethodDef, whichever way it is called:
 * tt_cfunction_regions has them all, and a cache in front of it the ones
 * called lately, found with no load but the entry's (a map's probe loads
 * the map's fields, and multiplies). */
extern tt_ptrmap tt_cfunction_regions;
uint32_t tt_cfunction_region_slow(PyObject *func, PyMethodDef *def);

/* The cache: 2 ways a set, the one filled last first, so that two
 * functions called in turn that fall in one set are both found. A set is
 * chosen by the PyMethodDef's address over its size: the methods of one
 * table, one after the other in memory, take sets one after the other. */
typedef struct tt_cfunction_cached {
    const PyMethodDef *def; /* NULL: empty */
    uint32_t region;
} tt_cfunction_cached;

#define TT_CFUNCTION_CACHE_SETS 512

extern tt_cfunction_cached tt_cfunction_cache[TT_CFUNCTION_CACHE_SETS][2];

static inline tt_cfunction_cached *tt_cfunction_cache_set(const PyMethodDef *def)
{
    return tt_cfunction_cache[(uintptr_t)def / sizeof *def % TT_CFUNCTION_CACHE_SETS];
}

/* The cached entry of def, or NULL. */
static inline const tt_cfunction_cached *tt_cfunction_cached_entry(const PyMethodDef *def)
{
    const tt_cfunction_cached *set = tt_cfunction_cache_set(def);
    if (tt_likely(set[0].def == def)) return &set[0];
    return set[1].def == def ? &set[1] : NULL;
}

/* tt_method_def for the two exact types that nearly all are, without a
 * call: NULL for any other. Neither type's object is ever without its
 * PyMethodDef (CPython makes them from one), which the compiler is told:
 * the hook tests the type alone. */
static inline PyMethodDef *tt_method_def_exact(PyObject *func)
{
    PyMethodDef *def;
    if (tt_likely(Py_IS_TYPE(func, &PyCFunction_Type)))
        def = ((PyCFunctionObject *)func)->m_ml;
    else if (Py_IS_TYPE(func, &PyMethodDescr_Type))
        def = ((PyMethodDescrObject *)func)->d_method;
    else
        return NULL;
    if (!def) __builtin_unreachable();
    return def;
}

static inline PyMethodDef *tt_method_def(PyObject *func)
{
    PyMethodDef *def = tt_method_def_exact(func);
    if (tt_likely(def != NULL)) return def;
    return PyCFunction_Check(func) ? ((PyCFunctionObject *)func)->m_ml : NULL;
}

static inline uint32_t tt_cfunction_region(PyObject *func)
{
    PyMethodDef *def = tt_method_def(func);
    const tt_cfunction_cached *cached = def ? tt_cfunction_cached_entry(def) : NULL;
    return tt_likely(cached != NULL) ? cached->region : tt_cfunction_region_slow(func, def);
}

/* Marks the methods of one of tracetop's own types as TT_STACK_OWN. */
int tt_pyregions_own_methods(PyMethodDef *methods);

/* ---- the filter in force, `--filter FILE` (regionfilter.c) ---- */

/* By region id: 1 when the filter excludes the region. NULL when no filter
 * is in force, so that without one a call pays a test of this pointer. */
extern uint8_t *tt_region_filtered;

/* Loads the filter file at path (NULL: none) for the next session; -1 with
 * TraceError saying where the file is wrong. */
int tt_region_filter_set(const char *path);
void tt_region_filter_clear(void);

/* To be called with each region defined: decides its flag. Returns the
 * region, or TT_STACK_SKIP when its flag could not be stored. */
uint32_t tt_region_filter_defined(uint32_t region);

/* Whether a filter is in force: from the start of a session that has one
 * to its end. tt_region_filtered may be NULL meanwhile (no region defined
 * yet), so that only this says whether a region defined later may be. */
int tt_region_filter_in_force(void);

/* 1 when `region` (a region id, TT_STACK_SKIP or TT_STACK_OWN) is filtered out. */
static inline int tt_region_is_filtered(uint32_t region)
{
    return tt_unlikely(tt_region_filtered != NULL) && region < TT_STACK_OWN && tt_region_filtered[region];
}

/* A call seen by a hook: recorded, or pushed as not recorded. */
static inline void tt_hook_enter(tt_stream *s, uint32_t region)
{
    if (tt_likely(region < TT_STACK_OWN)) {
        if (tt_likely(!tt_region_is_filtered(region)))
            tt_stream_enter(s, tt_clock_now(), region);
        else
            tt_stream_skip(s, TT_STACK_SKIP);
    } else {
        tt_stream_skip(s, region);
    }
}

/* ---- the program's own profile function (ownprofile.c) ---- */

/* Set while a sys.setprofile call of the program waits for tracetop's next
 * event on this thread, its C_RETURN; tt_own_profile_apply then makes the
 * setting (0, or -1 with the setter's exception). */
extern __thread PyObject *tt_pending_setter __attribute__((tls_model("initial-exec")));
int tt_own_profile_apply(void);
/* One thread more (1) or fewer (-1) with a setting waiting: none may take
 * the hooks' paths without a call meanwhile (tt_fast_epoch). */
void tt_fast_pending_setter(int change);

/* sys.setprofile stood in for while the hook is in place; unwrap puts it
 * back. */
int tt_own_profile_wrap(void);
void tt_own_profile_unwrap(void);
/* Whether the C_RETURN of the C call running now reaches tracetop's hook. */
int tt_hook_sees_c_return(void);

/* ---- the hooks' paths without a call ----
 *
 * Nearly every event is a call of a function whose region is known and
 * recorded, or a return, on a thread whose stream is current. The hooks
 * (hooks.c, monitoring.c) record those with no call (so saving no register
 * for one) when the clock is the TSC and the chunk and the tree have room;
 * for every other event, and these when they cannot, they take the general
 * way, which does it all again from the start. The paths are inlined into
 * every hook that takes them (always_inline: there are several, and a call
 * would cost the registers saved that the paths exist to spare). */

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

/* The clock, which is the TSC wherever a thread's paths are open (tt_fast_epoch). */
static inline uint64_t tt_fast_now(void)
{
#if defined(__x86_64__)
    return __rdtsc();
#else
    return tt_clock_now();
#endif
}

/* By region id, 1 for the code of a coroutine or an async generator
 * (tasks.c), tt_tasks_awaiting_cap of them. */
extern uint8_t *tt_tasks_awaiting;
extern uint32_t tt_tasks_awaiting_cap;

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
    TT_FAST_GENERAL, /* nothing: the general way is to take it */
    TT_FAST_DONE,    /* recorded */
    TT_FAST_NOW,     /* nothing, and nothing is to be looked up but the node:
                      * tt_stream_enter_now or tt_stream_leave_now records it */
};

/* A call of the region `entry` names (ext.h: tt_code_entry), *region set
 * for TT_FAST_NOW. TT_FAST_GENERAL for an entry that is not a plain
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
                                                                        uint64_t entry, int filtering,
                                                                        uint32_t *region)
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
 * recorded (tt_record_c_calls: the caller's test), as tt_fast_enter;
 * TT_FAST_GENERAL also when its region is not in the cache. */
static inline __attribute__((always_inline)) enum tt_fast tt_fast_enter_c(tt_stream *s, tt_chunk *chunk,
                                                                          uint32_t used, PyObject *func,
                                                                          int filtering, uint32_t *region)
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

/* ---- asyncio tasks (tasks.c) ---- */

/* Marks `region` as the code of a coroutine, or an async generator, whose
 * resumes by another one are not a task's steps; 0, or -1 out of memory. */
int tt_tasks_mark_coroutine(uint32_t region);
/* A coroutine's code (entry has TT_CODE_COROUTINE) is about to be entered
 * in stream s: when no coroutine resumes it (the innermost open call is
 * none) and asyncio runs a task now, records TASK_RESUME and returns the
 * task's id, whose step the caller then enters (tt_stream_enter_step);
 * else TT_NO_ID. Only ever called for coroutines: plain calls pay the test
 * of the bit. */
uint32_t tt_task_resume(tt_stream *s, uint32_t region);
/* Forgets the tasks of the previous session (ids are per session) and
 * defines in `session` the coroutines known so far. */
void tt_tasks_reset(tt_session *session);

/* The threading module if the program has imported it (new reference),
 * else NULL, without an exception either way (threadwatch.c). */
PyObject *tt_imported_threading(void);

/* The program has just imported threading (threadwatch.c): the threads it
 * starts are measured as if it had been there when the hook was put in
 * place. May leave an exception set. */
void tt_hooks_threading_imported(void);

/* ---- sys.monitoring (monitoring.c; Python 3.12 and later) ---- */

#if PY_VERSION_HEX >= 0x030C0000
int tt_monitoring_start(void);
void tt_monitoring_stop(void);
/* The program has imported threading since tt_monitoring_start. */
void tt_monitoring_threading_imported(void);
/* Objects counting went on or off: the callbacks follow (monitoring.c). */
void tt_monitoring_objects_switched(void);
#endif

/* ---- compatibility ---- */

#if PY_VERSION_HEX < 0x030A0000
static inline PyObject *tt_new_ref(PyObject *o)
{
    Py_XINCREF(o);
    return o;
}
#define Py_NewRef(o) tt_new_ref((PyObject *)(o))
#define Py_XNewRef(o) tt_new_ref((PyObject *)(o))
#endif

#pragma GCC visibility pop

#endif

/* park.c -- measuring on with the hook away: each thread's open calls kept.
 *
 * Switched off (the instrumenter, recording, `tracetop ctl off`), the hook
 * leaves every thread, so that the program runs as fast as without
 * tracetop; user regions are still recorded. Switched on, it comes back.
 * Meanwhile the threads call and return unseen, so the stack of each
 * stream no longer says which of its calls are still running. Closing them
 * all (as cProfile's disable does) would end `with tracetop.region(...)`
 * and the function around `with tracetop.instrumenter.disable():` at the
 * switch; instead:
 *
 * - tt_park, as the hook leaves (GIL held, every thread stopped where it
 *   gave the GIL up), notes for each stream the frames of its thread
 *   (innermost first) and, for each stack entry, the frame it is, or for a
 *   C call, user region or GC the frame that made it (with that frame's
 *   instruction, which tells a C call still running from one that ended).
 * - tt_unpark, as the hook comes back, compares each thread's frames with
 *   those noted: the frames they still share from the outermost in are the
 *   same calls (same frame object, same code). Entries of frames that
 *   returned meanwhile, and everything above the lowest of them, are to be
 *   closed (at this moment: they ended some time while off); frames entered
 *   meanwhile get a TT_STACK_SKIP each, beneath what the thread pushed
 *   while off, so that their returns are dropped, not matched. The plan is
 *   carried out by the thread itself at its next record (tt_park_resync),
 *   since only a stream's thread writes to it.
 * - When the measurement itself was off (recording off, `tracetop ctl
 *   off`), not the instrumenter alone, that time was not measured at all:
 *   the calls that returned meanwhile close where it went off, and the
 *   stream marks the gap (tt_stream_gap), which the calls still open leave
 *   out. With the instrumenter off alone, the time is measured, and stays
 *   with the calls open around it, as Score-P's instrumenter switch does.
 *
 * A thread that has not recorded since the last switch on when the hook
 * leaves again (blocked in a C call) has its plan carried out then, by the
 * switching thread: it is not running, and the few records that closes
 * fit in its chunk; where they do not, its calls are closed at the next
 * switch on instead.
 *
 * A frame object freed while off and another made at the same address for
 * the same code at the same depth is taken for the first: its entry then
 * closes at the second one's return. A C call of another thread that ended
 * while off, its caller waiting for the GIL at the same instruction since,
 * is taken as running: its entry closes at that frame's next return.
 */
#include "park.h"

#include <stdlib.h>

#include "fastpath.h"
#include "measurement.h"
#include "pyregions.h"
#include "regionfilter.h"
#include "threadstream.h"

#define NO_FRAME UINT32_MAX

/* One thread's frames, innermost first. */
typedef struct frames {
    const void **frame, **code;
    int *lasti;
    uint32_t count;
} frames;

/* A stream is known by its address and its number: one whose thread ended
 * meanwhile is freed (session.h), and a new one may take its address. */
typedef struct parked {
    tt_stream *stream;
    uint32_t index;
    frames at_park;
    uint32_t depth;  /* the stack entries noted */
    uint32_t *entry; /* their values, to tell them from entries pushed while off */
    uint32_t *owner; /* the frame (index in at_park) each entry is or was made by; NO_FRAME */
    int *lasti;      /* for a C call, its caller's instruction at the park; -1 otherwise */
} parked;

typedef struct plan {
    tt_stream *stream;
    uint32_t index;
    uint32_t close_from; /* entries from here up are closed */
    uint32_t insert_at;  /* then the skips go here */
    uint32_t skips;
} plan;

static parked *parks;
static uint32_t park_count;
static plan *plans;
static uint32_t plan_count;
static uint64_t plan_time;
static uint64_t plan_off_since; /* the measurement off since then up to plan_time; 0: it was on */

static void frames_free(frames *f)
{
    free(f->frame);
    free(f->code);
    free(f->lasti);
    *f = (frames){0};
}

/* The frames of tstate, innermost first; -1 when out of memory. Only
 * addresses are kept, to compare: a frame is never used through them. */
static int frames_of(PyThreadState *tstate, frames *out)
{
    *out = (frames){0};
    uint32_t cap = 0;
    PyFrameObject *f = PyThreadState_GetFrame(tstate);
    while (f) {
        if (out->count == cap) {
            cap = cap ? cap * 2 : 32;
            const void **frame = realloc(out->frame, cap * sizeof *frame);
            if (frame) out->frame = frame;
            const void **code = realloc(out->code, cap * sizeof *code);
            if (code) out->code = code;
            int *lasti = realloc(out->lasti, cap * sizeof *lasti);
            if (lasti) out->lasti = lasti;
            if (!frame || !code || !lasti) {
                Py_DECREF(f);
                frames_free(out);
                return -1;
            }
        }
        PyCodeObject *code = PyFrame_GetCode(f);
        out->frame[out->count] = f;
        out->code[out->count] = code;
        out->lasti[out->count] = PyFrame_GetLasti(f);
        out->count++;
        Py_DECREF(code); /* the frame keeps it */
        PyFrameObject *back = PyFrame_GetBack(f);
        Py_DECREF(f);
        f = back;
    }
    return 0;
}

/* Whether a stack entry is frame i's call: its code's region, or
 * TT_STACK_SKIP (a filtered call, tracetop's own code) when that region
 * says so. Not for code no hook has seen. */
static int entry_is_frame(uint32_t entry, const frames *f, uint32_t i)
{
    uint32_t region;
    if (!tt_code_region_cached((PyObject *)f->code[i], &region)) return 0;
    if (entry == TT_STACK_SKIP) return region == TT_STACK_SKIP || tt_region_is_filtered(region);
    return entry == region;
}

/* Every thread of the interpreter with its frames, gathered before the
 * streams are locked: making frame objects may collect garbage, whose
 * finalizers may record. */
typedef struct thread_frames {
    PyThreadState *tstate;
    frames f;
} thread_frames;

static void threads_free(thread_frames *t, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++) frames_free(&t[i].f);
    free(t);
}

static thread_frames *threads_gather(uint32_t *count)
{
    PyInterpreterState *interp = PyThreadState_GetInterpreter(PyThreadState_Get());
    uint32_t n = 0;
    for (PyThreadState *t = PyInterpreterState_ThreadHead(interp); t; t = PyThreadState_Next(t)) n++;
    thread_frames *out = calloc(n ? n : 1, sizeof *out);
    if (!out) return NULL;
    *count = 0;
    for (PyThreadState *t = PyInterpreterState_ThreadHead(interp); t && *count < n; t = PyThreadState_Next(t)) {
        out[*count].tstate = t;
        if (frames_of(t, &out[*count].f) < 0) {
            threads_free(out, *count);
            return NULL;
        }
        ++*count;
    }
    return out;
}

static int is_python_region(uint32_t entry)
{
    return entry == TT_STACK_SKIP ||
           (entry < tt_definitions.region_count && tt_definitions.regions[entry].kind == TT_REGION_PYTHON);
}

static int is_c_call(uint32_t entry)
{
    return entry == TT_STACK_OWN ||
           (entry < tt_definitions.region_count && tt_definitions.regions[entry].kind == TT_REGION_C);
}

/* The stream of tstate in the active session, or NULL. Streams lock held. */
static tt_stream *stream_of(const PyThreadState *tstate)
{
    for (tt_stream *s = tt_measurement.session->streams; s; s = s->next)
        if (atomic_load_explicit(&s->chunk, memory_order_relaxed) &&
            atomic_load_explicit(&s->gil_key, memory_order_relaxed) == (const void *)tstate)
            return s;
    return NULL;
}

/* Notes a stream's entries against its thread's frames, which it takes. */
static int park_one(parked *p, tt_stream *s, frames *taken)
{
    *p = (parked){.stream = s, .index = s->index, .at_park = *taken};
    *taken = (frames){0};
    p->entry = tt_stream_entries(s, &p->depth);
    uint32_t n = p->depth ? p->depth : 1;
    p->owner = malloc(n * sizeof *p->owner);
    p->lasti = malloc(n * sizeof *p->lasti);
    if (!p->entry || !p->owner || !p->lasti) return -1;
    const frames *f = &p->at_park;
    uint32_t next = 0; /* the innermost frame not yet matched to an entry */
    for (uint32_t i = p->depth; i-- > 0;) {
        uint32_t e = p->entry[i];
        p->lasti[i] = -1;
        if (is_python_region(e)) {
            /* Frames without an entry (filtered under sys.monitoring) are
             * passed over; a TT_STACK_SKIP matches the next frame or none. */
            uint32_t j = next;
            while (j < f->count && !entry_is_frame(e, f, j) && e != TT_STACK_SKIP) j++;
            if (j < f->count && entry_is_frame(e, f, j)) {
                p->owner[i] = j;
                next = j + 1;
                continue;
            }
        }
        p->owner[i] = next < f->count ? next : NO_FRAME;
        if (is_c_call(e) && next < f->count) p->lasti[i] = f->lasti[next];
    }
    return 0;
}

static void parks_free(void)
{
    for (uint32_t i = 0; i < park_count; i++) {
        frames_free(&parks[i].at_park);
        free(parks[i].entry);
        free(parks[i].owner);
        free(parks[i].lasti);
    }
    free(parks);
    parks = NULL;
    park_count = 0;
}

void tt_park_forget(void)
{
    parks_free();
    free(plans);
    plans = NULL;
    plan_count = 0;
}

/* Carries out a plan: what returned closed at plan_time (where the
 * measurement went off, when it did), the gap marked, skips inserted, and
 * the user regions among what was closed entered again above them: a user
 * region does not end with the call it was begun in (stream.h).
 * Another thread's stream only when what it writes fits in its chunk, so
 * that no chunk is handed on (which may wait, letting the GIL go): 0 when
 * it was not done. */
static int apply_plan(tt_stream *s, const plan *p, int own_stream)
{
    uint32_t depth;
    uint32_t *entries = tt_stream_entries(s, &depth);
    if (!entries) return 0;
    uint32_t records = plan_off_since ? 2 : 0, close_from = p->close_from < depth ? p->close_from : depth;
    for (uint32_t i = close_from; i < depth; i++) {
        int carried = i + 1 < depth && entries[i + 1] == TT_STACK_REGION; /* its LEAVE, and its ENTER_AGAIN */
        records += (entries[i] < TT_STACK_REGION) * (1u + (uint32_t)carried);
    }
    if (records && !own_stream) {
        tt_chunk *c = atomic_load_explicit(&s->chunk, memory_order_relaxed);
        uint32_t used = atomic_load_explicit(&c->used, memory_order_relaxed);
        if (used + (uint64_t)records * TT_RECORD_MAX_FIXED + TT_RECORD_MAX_FIXED > TT_CHUNK_PAYLOAD_SIZE) {
            free(entries);
            return 0;
        }
    }
    uint64_t closed_at = plan_off_since ? plan_off_since : plan_time;
    uint32_t open = depth;
    for (; open > close_from; open--) tt_stream_leave(s, closed_at);
    if (plan_off_since) tt_stream_gap(s, plan_off_since, plan_time);
    tt_stream_insert_skips(s, p->insert_at < open ? p->insert_at : open, p->skips);
    for (uint32_t i = close_from; i + 1 < depth; i++) {
        if (entries[i + 1] != TT_STACK_REGION) continue;
        if (entries[i] < TT_STACK_REGION)
            tt_stream_enter_again(s, plan_time, entries[i]);
        else
            tt_stream_skip(s, entries[i]);
        tt_stream_skip(s, TT_STACK_REGION);
    }
    free(entries);
    s->epoch = atomic_load_explicit(&tt_measurement.session->epoch, memory_order_acquire);
    return 1;
}

static const plan *plan_of(const tt_stream *s)
{
    for (uint32_t i = 0; i < plan_count; i++)
        if (plans[i].stream == s && plans[i].index == s->index) return &plans[i];
    return NULL;
}

/* Whether a stream has not caught up with the last switch on. */
static int behind(const tt_stream *s)
{
    return s->epoch != atomic_load_explicit(&tt_measurement.session->epoch, memory_order_acquire);
}

void tt_park(void)
{
    parks_free();
    /* The switch's own C call, on top of the caller's stack, sees no
     * return now that the hook is gone. */
    tt_stream *mine = tt_tls_stream;
    if (mine->session == tt_measurement.session && tt_stream_top(mine) == TT_STACK_OWN) tt_stream_unskip(mine);
    /* Without memory, the switch on closes what is open, as at a measurement's end. */
    uint32_t threads = 0;
    thread_frames *t = threads_gather(&threads);
    parks = t ? calloc(threads ? threads : 1, sizeof *parks) : NULL;
    if (parks) {
        tt_session_lock_streams();
        for (uint32_t i = 0; i < threads; i++) {
            tt_stream *s = stream_of(t[i].tstate);
            if (!s) continue;
            const plan *pending = behind(s) ? plan_of(s) : NULL;
            if (pending && !apply_plan(s, pending, 0)) continue;
            if (park_one(&parks[park_count++], s, &t[i].f) < 0) {
                tt_session_unlock_streams();
                parks_free();
                break;
            }
        }
        if (parks) tt_session_unlock_streams();
    }
    if (t) threads_free(t, threads);
    free(plans);
    plans = NULL;
    plan_count = 0;
}

static const parked *parked_stream(const tt_stream *s)
{
    for (uint32_t i = 0; i < park_count; i++)
        if (parks[i].stream == s && parks[i].index == s->index) return &parks[i];
    return NULL;
}

/* Whether a frame entered while off pops an entry as it returns: not a
 * filtered one under sys.monitoring, whose returns are not seen. */
static int gets_entry(const frames *now, uint32_t i, int filtered_have_entries)
{
    uint32_t region;
    if (filtered_have_entries || !tt_code_region_cached((PyObject *)now->code[i], &region)) return 1;
    return !tt_region_is_filtered(region);
}

static void plan_one(plan *out, tt_stream *s, const frames *frames_now, int filtered_have_entries)
{
    const frames now = *frames_now;
    const parked *p = parked_stream(s);
    static const parked none;
    if (!p) p = &none;
    const frames *then = &p->at_park;
    /* The frames both share, counted from the outermost in. */
    uint32_t shared = 0;
    while (shared < then->count && shared < now.count &&
           then->frame[then->count - 1 - shared] == now.frame[now.count - 1 - shared] &&
           then->code[then->count - 1 - shared] == now.code[now.count - 1 - shared])
        shared++;
    /* Entries noted at the park still in place (none popped meanwhile). */
    uint32_t depth = 0;
    uint32_t *entries = tt_stream_entries(s, &depth);
    uint32_t kept = 0;
    while (entries && kept < p->depth && kept < depth && entries[kept] == p->entry[kept]) kept++;
    free(entries);
    uint32_t close_from = kept;
    for (uint32_t i = 0; i < kept; i++) {
        uint32_t owner = p->owner[i];
        if (owner == NO_FRAME) continue;
        int returned = owner < then->count - shared;
        /* The same frame at another instruction: its C call ended. */
        int ended = !returned && p->lasti[i] >= 0 && now.lasti[now.count - then->count + owner] != p->lasti[i];
        if (returned || ended) {
            close_from = i;
            break;
        }
    }
    uint32_t skips = 0;
    for (uint32_t i = 0; i < now.count - shared; i++) skips += (uint32_t)gets_entry(&now, i, filtered_have_entries);
    *out = (plan){.stream = s,
                  .index = s->index,
                  .close_from = close_from < kept ? close_from : UINT32_MAX,
                  .insert_at = close_from < kept ? close_from : kept,
                  .skips = skips};
}

int tt_unpark(uint64_t now, uint64_t off_since, int filtered_have_entries)
{
    free(plans);
    plans = NULL;
    plan_count = 0;
    uint32_t threads = 0;
    thread_frames *t = threads_gather(&threads);
    plans = t ? calloc(threads ? threads : 1, sizeof *plans) : NULL;
    if (plans) {
        tt_session_lock_streams();
        for (uint32_t i = 0; i < threads; i++) {
            tt_stream *s = stream_of(t[i].tstate);
            if (s) plan_one(&plans[plan_count++], s, &t[i].f, filtered_have_entries);
        }
        tt_session_unlock_streams();
    }
    if (t) threads_free(t, threads);
    parks_free();
    plan_time = now;
    plan_off_since = off_since < now ? off_since : 0;
    /* Each stream carries out its plan at its thread's next record; one
     * without (its thread gone, or no memory) closes everything then, where
     * the measurement went off when it did. */
    tt_session_suspend(tt_measurement.session, plan_off_since ? plan_off_since : now);
    tt_fast_update(); /* the new epoch */
    return plans ? 0 : -1;
}

void tt_park_resync(tt_stream *s)
{
    const plan *p = plan_of(s);
    if (!p || !apply_plan(s, p, 1)) tt_session_resync(s);
}

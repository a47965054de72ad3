/* agg.h -- what `tracetop top` computes from one live process: per thread
 * and function, calls, exclusive, inclusive and CPU time, as the events
 * arrive, since top attached and second by second.
 *
 * The measured process only hands its chunks over (live.h); all of this
 * runs in top's own process. Definitions come from the channel's log and
 * events from its slices, both decoded with records.h, the one decoder.
 *
 * Per thread the open calls are a stack; ENTER pushes, LEAVE pops. The
 * time between two events of a thread is exclusive time of the call on top
 * of its stack, kept in its frame until the call returns, a second ends or
 * a CPU sample is taken, then added to its function's counts; inclusive
 * time is counted once per outermost activation (a recursive function is
 * not counted twice), as it passes: at each LEAVE and at each second's end
 * for the calls still open. A LEAVE with nothing open closes a call
 * entered before top saw the thread: it is dropped.
 *
 * Seconds: a thread's counts are kept for its current second (of the
 * process's clock, whole seconds of ticks, the same for every thread), and
 * each second that ends is kept, as the functions it touched, in a ring of
 * the last TT_AGG_WINDOW_MAX: the view sums the seconds it wants (the last
 * N: what runs now) without a pass over every function.
 *
 * CPU time: the process's writer reads each thread's CPU clock about every
 * 0.1 s, and looks every 5 ms which thread holds the GIL (THREAD_USAGE
 * definitions, format.h). The CPU time a thread used between two samples
 * is shared among the functions that ran in it by the time each held the
 * GIL there, which a function that waits (sleep, lock.acquire, poll, I/O)
 * does not: Python functions, user regions and collections hold it all
 * their own time, as they run the interpreter or the collector; the rest
 * of the time the thread held it goes to C and MPI functions, in
 * proportion to their own time. Without GIL samples (a Python that cannot
 * tell, or none taken in the span) the CPU time itself goes to the code
 * first, up to its own time, the rest to C and MPI functions. Time the
 * system gave the thread no CPU lowers every function's share alike. A
 * sample may arrive before the events it covers: it waits (a few are
 * kept; older ones merge) until the thread's events reach its time.
 *
 * A gap in the measurement (format.h: RECORDING_OFF to RECORDING_ON) is
 * no call's time: neither exclusive nor inclusive time passes in it.
 *
 * A thread's slices continue one another (same chunk, next offset; or the
 * next chunk after the last slice of one). When the channel lost a chunk
 * (live.h), the thread starts over at the next chunk, whose time is known
 * (its base_ticks): the calls it had open are closed at the last time seen
 * and counted as a resync.
 *
 * Times stay in the process's ticks; the PROCESS definition gives the rate.
 * Functions are named by the process's REGION definitions and gathered in
 * a tt_functions table shared by every process that top watches, so the
 * same function in two processes is one row.
 */
#ifndef TRACETOP_TOP_AGG_H
#define TRACETOP_TOP_AGG_H

#include <stddef.h>
#include <stdint.h>

#include "format.h"
#include "live.h"

/* ---- functions: name, file and line, the same in every process ---- */

typedef struct tt_function {
    char *name;
    char *file;
    uint32_t line;
} tt_function;

typedef struct tt_functions {
    tt_function *items;
    size_t count, cap;
    uint32_t *slots; /* open addressing: index + 1, 0 empty */
    size_t mask;
} tt_functions;

void tt_functions_free(tt_functions *t);

/* The index of the function, added when new; UINT32_MAX when out of memory. */
uint32_t tt_functions_intern(tt_functions *t, const char *name, const char *file, uint32_t line);

/* ---- what the live viewer keeps besides the counts ---- */

/* Calls that returned, long enough to be seen on a timeline, and the
 * samples of counters and numeric parameters, kept until the viewer takes
 * them (tt_agg_sink_clear). Bounded: what does not fit is counted, not
 * kept. `tracetop top` has none. Object counts (--objects) are not kept
 * here: every process counts them (tt_agg_objtype), for top and the page. */
typedef struct tt_agg_span {
    uint32_t pid, stream, function, depth; /* depth: 0 outermost */
    uint64_t begin, end;                   /* ticks of its process */
} tt_agg_span;

typedef struct tt_agg_sample {
    uint32_t pid, stream;
    uint32_t name; /* the string id of its process */
    uint64_t ticks;
    double value;
} tt_agg_sample;

typedef struct tt_agg_sink {
    uint64_t min_ticks; /* shorter calls are not kept (at least 1) */
    size_t limit;       /* spans and samples kept at most, each */
    tt_agg_span *spans;
    size_t span_count, span_cap;
    tt_agg_sample *samples;
    size_t sample_count, sample_cap;
    uint64_t spans_lost, samples_lost;
} tt_agg_sink;

void tt_agg_sink_clear(tt_agg_sink *k);
void tt_agg_sink_free(tt_agg_sink *k);

/* ---- one process ---- */

/* The most seconds a view can sum besides the current one. */
#define TT_AGG_WINDOW_MAX 60
/* A time no event reaches: what is counted up to it counts no more. */
#define TT_AGG_NEVER UINT64_MAX
/* THREAD_USAGE samples kept while the events they cover have not come. */
#define TT_AGG_USAGE_PENDING 8

/* One function's counts in one thread, over some time. */
typedef struct tt_agg_counts {
    uint64_t calls;
    uint64_t exclusive, inclusive; /* ticks */
    uint64_t cpu;                  /* ticks of CPU time, shared out (above) */
} tt_agg_counts;

/* A thread's CPU sample (format.h: THREAD_USAGE): at `ticks`, CPU time,
 * and how often the GIL was looked at and the thread held it, since its
 * stream began. */
typedef struct tt_agg_usage {
    uint64_t ticks, cpu_ns, samples, gil_samples;
} tt_agg_usage;

typedef struct tt_agg_stat {
    tt_agg_counts done;   /* in the seconds that ended since top attached (or the last reset) */
    tt_agg_counts second; /* in the thread's current second */
    uint64_t usage_from;  /* its exclusive ticks (done + second) as the thread's CPU sample span began */
    uint32_t active;      /* open activations */
    /* Marks: the function is on the thread's list of those touched in the
     * current second (CPU sample span) when second_mark (usage_mark) is the
     * thread's generation of it; on both when mark is the thread's epoch. */
    uint32_t second_mark, usage_mark, mark;
} tt_agg_stat;

typedef struct tt_agg_frame {
    uint32_t region;
    uint32_t outer;   /* the outermost activation of its region: counts inclusive time */
    uint64_t enter;   /* ticks */
    uint64_t counted; /* its inclusive time is counted up to here; TT_AGG_NEVER in a gap */
    uint64_t own;     /* exclusive ticks in the current second not yet in its region's counts */
} tt_agg_frame;

/* A second that ended: the counts of the functions it touched. */
typedef struct tt_agg_entry {
    uint32_t region;
    tt_agg_counts counts;
} tt_agg_entry;

typedef struct tt_agg_second {
    uint64_t start; /* ticks */
    tt_agg_entry *entries;
    uint32_t count, cap;
} tt_agg_second;

typedef struct tt_agg_thread {
    uint32_t stream;
    uint32_t name; /* string id; UINT32_MAX until the THREAD definition */
    int seen;      /* a slice of it arrived */
    int ended;     /* STREAM_END */
    /* Where its next slice must start to continue the last one. */
    uint32_t seq, offset;
    uint64_t ticks;       /* time of the last record */
    tt_predictor predict; /* of the chunk being read, as far as read (format.h) */
    uint64_t since;       /* first time seen since attaching or the last reset */
    uint64_t events;
    tt_agg_frame *stack;
    uint32_t depth, stack_cap;
    uint64_t off_at;    /* where a gap began (RECORDING_OFF), 0 outside one */
    uint64_t accrued;   /* exclusive time is counted up to here; TT_AGG_NEVER in a gap */
    tt_agg_stat *stats; /* by region id */
    uint32_t stat_cap;

    /* The current second, [second_start, second_start + ticks_per_second),
     * and the functions it touched; the seconds that ended, newest at
     * ring[(ring_head + TT_AGG_WINDOW_MAX - 1) % TT_AGG_WINDOW_MAX]. */
    uint64_t second_start;
    uint32_t *second_touched;
    size_t second_count, second_cap;
    uint32_t second_generation;
    tt_agg_second *ring; /* TT_AGG_WINDOW_MAX of them, made as the first second ends */
    uint32_t ring_head, ring_count;

    /* CPU samples: the last one taken (usage_known), those waiting for the
     * events up to their time, and the functions run since the last. */
    int usage_known;
    tt_agg_usage usage;
    tt_agg_usage pending[TT_AGG_USAGE_PENDING];
    uint32_t pending_count;
    uint32_t *usage_touched;
    size_t usage_count, usage_cap;
    uint32_t usage_generation;
    uint32_t epoch; /* changes as either list starts again */

    /* The next time at which a second ends or a CPU sample is due: events
     * before it take the fast path. */
    uint64_t boundary;
} tt_agg_thread;

/* A thread's counts of region r since top attached (or the last reset):
 * those of the calls open, up to the end of the last second or CPU sample
 * (the rest is in their frames). */
static inline tt_agg_counts tt_agg_total(const tt_agg_thread *th, uint32_t r)
{
    const tt_agg_stat *st = &th->stats[r];
    return (tt_agg_counts){st->done.calls + st->second.calls, st->done.exclusive + st->second.exclusive,
                           st->done.inclusive + st->second.inclusive, st->done.cpu + st->second.cpu};
}

/* Objects of one type (--objects, format.h: OBJECTS), whatever region
 * made them: counted since top attached (or was reset), and alive, those
 * made since top attached still alive, at least, which a reset keeps: the
 * made less the destroyed, but never below none, as an object made before
 * top attached and destroyed since is one top never saw made (at each
 * record the count is the made less the destroyed, less the lowest that
 * difference has been: a lower bound of those alive). */
typedef struct tt_agg_objtype {
    uint64_t created, destroyed;
    int64_t alive;
} tt_agg_objtype;

typedef struct tt_agg_region {
    uint32_t function; /* in the shared table */
    uint8_t code;      /* a Python function, user region or collection: holds the GIL all its own time */
} tt_agg_region;

typedef struct tt_agg_process {
    tt_functions *functions;
    uint64_t pid;
    uint8_t clock;             /* enum tt_clock_kind */
    uint64_t ticks_per_second; /* 0 until the PROCESS definition */
    int ended;                 /* PROCESS_END */

    size_t defs_read; /* bytes of the definitions log decoded */
    /* Ids (strings, regions, streams) stay below this: the bytes of
     * definitions the channel has published, since each takes at least
     * two and ids are dense. What another process wrote never makes top
     * allocate beyond what the channel holds. */
    uint64_t id_bound;
    char **strings;
    uint32_t string_count, string_cap;
    tt_agg_region *regions;
    uint32_t region_count, region_cap;

    tt_agg_thread **threads; /* by stream; NULL where none */
    uint32_t thread_cap;

    tt_agg_objtype *objtypes; /* by the type's string id; zero where none */
    uint32_t objtype_cap;
    uint64_t objects; /* OBJECTS records decoded: 0 when the process does not count objects */

    tt_agg_sink *sink; /* NULL: counts only */

    uint64_t events;  /* decoded since attaching */
    uint64_t bytes;   /* event bytes decoded */
    uint64_t resyncs; /* times a thread started over after a lost chunk */
} tt_agg_process;

void tt_agg_init(tt_agg_process *p, tt_functions *functions);
void tt_agg_free(tt_agg_process *p);

/* Decodes the definitions log from where the last call stopped to `len`.
 * 0, or -1 with a reason (damaged log, out of memory). */
int tt_agg_defs(tt_agg_process *p, const uint8_t *log, size_t len, const char **why);

/* Decodes one slice. 0, or -1 with a reason (damaged records, an id
 * beyond id_bound, out of memory); a slice that does not continue its
 * thread is skipped. The caller raises id_bound to the size of the log
 * published by the time the slice was (the producer defines first). */
int tt_agg_slice(tt_agg_process *p, const tt_live_slice *s, const char **why);

/* Forgets every count, time and second, as if top had just attached;
 * calls still open count from the time of their thread's last record. */
void tt_agg_reset(tt_agg_process *p);

/* The name of string id `id`, "" when unknown. */
const char *tt_agg_string(const tt_agg_process *p, uint32_t id);

#endif

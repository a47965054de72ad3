/* agg.h -- what `tracetop top` computes from one live process: per thread
 * and function, calls, exclusive and inclusive time, as the events arrive.
 *
 * The measured process only hands its chunks over (live.h); all of this
 * runs in top's own process. Definitions come from the channel's log and
 * events from its slices, both decoded with records.h, the one decoder.
 *
 * Per thread the open calls are a stack; ENTER pushes, LEAVE pops and adds
 * the call's time to its function: exclusive is its time minus that of the
 * calls it made, inclusive is counted once per outermost activation (a
 * recursive function is not counted twice). A LEAVE with nothing open
 * closes a call entered before top saw the thread: it is dropped.
 *
 * A gap in the measurement (format.h: RECORDING_OFF to RECORDING_ON) is
 * no call's time: as it ends, the calls open have their start moved on by
 * its length, so that each counts its measured parts alone.
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

typedef struct tt_agg_stat {
    uint64_t calls;
    uint64_t exclusive, inclusive; /* ticks, of calls that returned */
    uint32_t active;               /* open activations */
} tt_agg_stat;

typedef struct tt_agg_frame {
    uint32_t region;
    uint64_t enter; /* ticks */
    uint64_t child; /* ticks spent in calls it made that returned */
} tt_agg_frame;

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
    tt_agg_stat *stats; /* by region id */
    uint32_t stat_cap;
} tt_agg_thread;

/* Objects of one type (--objects, format.h: OBJECTS), whatever region
 * made them: counted since top attached (or was reset), and alive, the
 * made less the destroyed since top attached, which a reset keeps (an
 * object made before top attached and destroyed after makes it less). */
typedef struct tt_agg_objtype {
    uint64_t created, destroyed;
    int64_t alive;
} tt_agg_objtype;

typedef struct tt_agg_region {
    uint32_t function; /* in the shared table */
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

/* Forgets every count and time, as if top had just attached; calls still
 * open count from the time of their thread's last record. */
void tt_agg_reset(tt_agg_process *p);

/* The name of string id `id`, "" when unknown. */
const char *tt_agg_string(const tt_agg_process *p, uint32_t id);

#endif

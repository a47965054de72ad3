/* reader.h -- THE reader of native traces. Everything that reads a trace
 * (profile and summary, converters, score, the viewer's index, top) reads
 * events through this module, so a format change is made in format.h and
 * here, nowhere else.
 *
 * Contract:
 *  - tt_trace_open loads the definitions of every process of an experiment
 *    (small) and none of its events. Events are read one stream at a time
 *    with a cursor, in bounded memory (one decoded chunk at a time).
 *  - Every stream a cursor yields is well nested: a LEAVE always closes the
 *    innermost open ENTER (the reader fills in its region), and regions still
 *    open where a stream ends are closed there by synthesized LEAVE events at
 *    the stream's last time.
 *  - A gap in the measurement (format.h: RECORDING_OFF to RECORDING_ON, the
 *    measurement switched off) is no call's time: the calls open where it
 *    begins are closed there (synthesized LEAVEs, then RECORDING_OFF), and
 *    those still running where it ends are entered again there (synthesized
 *    ENTERs, `resumed`, then RECORDING_ON), so that every consumer takes
 *    their measured parts alone; the return of one that ended inside the gap
 *    gives no event.
 *  - A trace cut short (crash, SIGKILL, os._exit, full disk) or damaged is
 *    read up to its last intact chunk. Nothing is thrown away silently: the
 *    cursor and the process say what was cut, in one line each. A file is
 *    CUT where its data stops: it ends inside a chunk, it ends without
 *    STREAM_END, or what follows its last intact chunk is what a crashed
 *    writer leaves (stale bytes after a PARTIAL chunk; bad bytes at the very
 *    end, where the writer was writing). Bad bytes followed by intact data,
 *    or by more than one chunk's worth, or a bad chunk that ends exactly
 *    where its file does, are damage: CORRUPT.
 *  - A ring (--keep, format.h): in a process whose definitions say it kept
 *    its events to a size, a stream's file may begin with zeros where its
 *    oldest chunks were dropped; they are skipped, and not damage. A cursor
 *    that starts after dropped chunks enters the calls open there (the
 *    chunk's OPEN record) at its base time, synthesized and resumed (the
 *    calls going on), and gives no event for a LEAVE with nothing open (a
 *    call whose ENTER a stack deeper than OPEN holds was dropped with it);
 *    a stream all of whose records were dropped (its tree alone left) is
 *    complete, without events.
 *    The process says what was dropped (tt_process: keep, dropped_*).
 *  - A stream file that is no regular file, and the missing file of a thread
 *    that a process which ended defined, leave that stream out (present = 0)
 *    with one line per process in tt_trace_problem, counted as damage.
 *  - Times are nanoseconds since the experiment's epoch: the earliest process
 *    start on the real-time clock, so processes share one time axis. Within a
 *    stream they never decrease.
 *  - Every id in an event indexes its process's tables: an id the definitions
 *    do not cover (possible only when a process's definitions are incomplete:
 *    cut, or no PROCESS_END) maps to the placeholder entry at index
 *    region_count / string_count, named "<undefined>". With complete
 *    definitions such an id is damage and ends the stream as corrupt.
 *
 * Layout read: EXPERIMENT/trace/<pid>/defs.tts and <pid>/<n>.tts (format.h).
 * The stream files present define which streams exist (and the THREAD
 * definitions, whose streams' files a process that ended wrote each). A process directory
 * whose definitions lack a PROCESS or CLOCK_SYNC record cannot be placed in
 * time; it is left out and reported by tt_trace_problem.
 */
#ifndef TRACETOP_READER_H
#define TRACETOP_READER_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "filter.h"
#include "format.h"

typedef struct tt_region {
    const char *name; /* "module:qualname", "builtins:len", "user:load" */
    const char *file; /* "" when unknown */
    uint32_t line;    /* first line, 0 when unknown */
    uint8_t kind;     /* enum tt_region_kind */
    uint8_t awaits;   /* 1: a coroutine's or an async generator's code (COROUTINE) */
} tt_region;

/* A thread's use of the CPU and the GIL up to a time (THREAD_USAGE in
 * format.h), cumulative since its stream began. */
typedef struct tt_thread_usage {
    uint64_t time; /* ns since epoch */
    uint64_t cpu_ns, samples, gil_samples;
} tt_thread_usage;

typedef struct tt_thread {
    const char *name;       /* the Python thread name, e.g. "MainThread"; "stream <n>" when undefined */
    uint64_t native_tid;    /* the OS thread id */
    int defined;            /* 0: a stream file without a THREAD definition */
    int present;            /* 0: no events to read: a THREAD definition without a stream file, or one not regular */
    uint64_t open_at_start; /* its first ENTERs that were running before the measurement (format.h) */
    size_t usage_count;     /* its THREAD_USAGE records, in time order */
    tt_thread_usage *usage;
    size_t usage_cap;
} tt_thread;

typedef enum tt_stream_state {
    TT_STREAM_COMPLETE = 0, /* ended with STREAM_END */
    TT_STREAM_CUT = 1,      /* the data stops early: crash, kill, truncation */
    TT_STREAM_CORRUPT = 2,  /* damaged data: bad checksum, bad record, gap */
} tt_stream_state;

typedef struct tt_attribute {
    const char *key;
    const char *value;
} tt_attribute;

/* An MPI communicator as one process knows it (MPI_COMM in format.h). */
typedef struct tt_comm {
    uint8_t kind;    /* enum tt_comm_kind; 0 for the "<undefined>" placeholder */
    uint32_t parent; /* index of the communicator it was made from; UINT32_MAX for none */
    uint64_t seq;    /* the calls that made communicators from the parent before it */
    uint64_t size;
    size_t listed;     /* size, or 0 when its members are not listed */
    uint32_t *members; /* world ranks of its ranks 0 .. listed-1 */
} tt_comm;

typedef struct tt_process {
    uint64_t pid, ppid;
    const char *name;   /* what ran: the script, module or "-c" */
    char *dir;          /* EXPERIMENT/trace/<pid>, or <pid>.<k> for a later session of the pid */
    uint8_t clock_kind; /* enum tt_clock_kind */
    uint64_t ticks_per_second;

    size_t string_count;
    const char **strings; /* by string id; [string_count] is "<undefined>" */
    size_t region_count;
    tt_region *regions; /* by region id; [region_count] is the "<undefined>" placeholder */
    uint8_t *left_out;  /* by region id: 1 for a region tt_trace_keep_regions leaves out; NULL for none */
    size_t thread_count;
    tt_thread *threads; /* by stream number */
    size_t attribute_count;
    tt_attribute *attributes;
    size_t task_count;
    const char **task_names; /* asyncio tasks by id (TASK); [task_count] is "<undefined>" */
    /* The times the measurement was off (MEASUREMENT_OFF), in ticks, as the
     * definitions give them (tt_process_off_ns sums them). */
    size_t gap_count;
    struct tt_gap {
        uint64_t from, to;
    } * gaps;

    /* From PROCESS_END; ended == 0 when the process did not end normally. */
    int ended;
    uint64_t end_time; /* ns since epoch, when ended */
    uint64_t events, waits, wait_ns;

    /* NULL when defs.tts was intact, else one line saying what was cut or
     * damaged; defs_state says which (TT_STREAM_COMPLETE when intact). */
    const char *defs_cut;
    tt_stream_state defs_state;

    /* A ring (--keep, format.h): keep is the size its event files were kept
     * to, in bytes (its "keep" attribute; 0: none); dropped_chunks the chunks
     * of records its streams' files no longer hold, dropped_ns the longest
     * time from the process's start to a stream's first chunk kept, of
     * those that dropped any. */
    uint64_t keep, dropped_chunks, dropped_ns;

    /* MPI, from MPI_RANK: rank mpi_rank of mpi_size in MPI_COMM_WORLD;
     * mpi_size is 0 for a process that did not initialize MPI. */
    uint64_t mpi_rank, mpi_size;
    size_t comm_count;
    tt_comm *comms; /* by id; [comm_count] is the "<undefined>" placeholder */

    /* Clock mapping: ticks -> ns since epoch (set by the reader). */
    uint64_t sync_ticks; /* a reference point ... */
    int64_t sync_time;   /* ... and its time in ns since epoch */
    double ns_per_tick;
    uint64_t start_realtime_ns; /* real time of the first CLOCK_SYNC */
} tt_process;

typedef struct tt_trace tt_trace;

/* Opens EXPERIMENT/trace (the experiment directory is given). Fails when
 * there is no trace there or no process in it has readable definitions. */
int tt_trace_open(const char *experiment_dir, tt_trace **out, tt_error *err);
void tt_trace_close(tt_trace *t);

/* Processes ordered by start time, then pid. */
size_t tt_trace_process_count(const tt_trace *t);
const tt_process *tt_trace_process(const tt_trace *t, size_t index);

/* Keeps the streams of the threads named `name` (or whose native thread id
 * `name` is, in decimal) and leaves every other stream out, as if it had no
 * file (present = 0), for whatever reads t afterwards (`convert --thread`).
 * Returns the number of streams kept; when none is, nothing changes. */
size_t tt_trace_keep_thread(tt_trace *t, const char *name);

/* Told, as the cursors of a trace read on, the bytes of its stream files
 * they have read in all (after each chunk), for a command that shows how it
 * goes. The cursors opened after tt_trace_set_progress count in `bytes`. */
typedef struct tt_read_progress {
    void (*read)(void *ctx, uint64_t bytes);
    void *ctx;
    uint64_t bytes;
} tt_read_progress;
void tt_trace_set_progress(tt_trace *t, tt_read_progress *progress);

/* Keeps the events of [from, to] (ns since the epoch) and leaves the others
 * out, for the cursors opened afterwards (`convert --from/--to`): a call
 * that overlaps an edge is cut there (an ENTER at `from`, a LEAVE at `to`,
 * both synthesized), so that what a cursor reads stays well nested. */
void tt_trace_keep_range(tt_trace *t, uint64_t from, uint64_t to);

/* For the end of the run that has just written the trace (its profile.txt):
 * the call trees (tt_stream_tree_read) are reached over the chunks of
 * records by their headers alone, without reading their payloads or
 * checking their checksums: the tree holds all that profile.txt takes of
 * a stream, and is checked itself. A cut shows in the headers (a stream
 * without its tree is read back, which says what was cut); damage inside a
 * chunk of records is for whoever reads the records to find (the reader
 * says what and where: `tracetop summary`, convert, the viewer). */
void tt_trace_trust_records(tt_trace *t);

/* Leaves out the calls of the regions that filter f excludes (its name and
 * file rules, filter.h), for the cursors opened afterwards (`convert
 * --filter`): their ENTERs and LEAVEs are not given, the calls they made
 * stay, one level up, as a measurement with the filter would have recorded
 * them; depths count only the regions kept. Returns the number of regions
 * left out, or -1 when memory runs out. */
long tt_trace_keep_regions(tt_trace *t, const tt_filter *f, tt_error *err);

/* 1 while every event recorded is for the cursors to read: no thread, range
 * or region kept alone or left out (tt_trace_keep_*). */
int tt_trace_whole(const tt_trace *t);

/* Process directories left out because they cannot be read, one line each;
 * *corrupt (when not NULL) is set to 1 for damage, 0 for a cut. */
size_t tt_trace_problem_count(const tt_trace *t);
const char *tt_trace_problem(const tt_trace *t, size_t index, int *corrupt);

/* ns since the epoch for ticks of process p. */
uint64_t tt_process_time(const tt_process *p, uint64_t ticks);

/* The ns of [from, to] (ns since the epoch) when the measurement of p was
 * off (its gaps): no time of its threads was measured then. */
uint64_t tt_process_off_ns(const tt_process *p, uint64_t from, uint64_t to);

/* ns for a duration of `ticks` of process p's clock, rounded half up (the
 * same scale as tt_process_time): what a sum of ticks is converted with
 * once, so that a profile's times do not depend on how many events were
 * summed (profile.h). */
uint64_t tt_process_duration(const tt_process *p, uint64_t ticks);

/* 1 when the trace keeps a range (tt_trace_keep_range): its cursors' events
 * carry ns in place of ticks (the edges they make have no ticks). */
int tt_trace_keeps_range(const tt_trace *t);

/* The world rank of rank `rank` of communicator `comm` of process p, or
 * UINT64_MAX when the trace does not tell. */
uint64_t tt_comm_world_rank(const tt_process *p, uint32_t comm, uint64_t rank);

typedef struct tt_event {
    uint8_t kind;        /* enum tt_event_tag */
    uint64_t time;       /* ns since epoch */
    uint64_t ticks;      /* the process's clock at the event (never decreasing; see tt_trace_keeps_range) */
    uint32_t region;     /* ENTER and LEAVE: the region entered or left */
    uint32_t name;       /* PARAM_*, COUNTER, MARK: a string id */
    uint32_t depth;      /* open regions after this event */
    int synthesized;     /* 1: a LEAVE the reader added to close a region left open, or an ENTER or LEAVE
                            at the edge of the range kept (tt_trace_keep_range) or of a gap (below) */
    int resumed;         /* 1: an ENTER at a gap's end, of a call open across it, or an ENTER_AGAIN: the
                            same call or region going on, not a new one (not a visit) */
    int64_t int_value;   /* PARAM_INT */
    uint64_t uint_value; /* PARAM_UINT */
    double double_value; /* COUNTER */
    const char *str;     /* PARAM_STRING: bytes valid until the next call */
    size_t str_len;
    /* MPI_* (format.h). peer: the receiver of a send, the sender of a
     * receive, as a rank in comm; comm: an index into the process's comms;
     * root: a rank in comm, UINT32_MAX for none. */
    uint32_t peer, tag, comm, root;
    uint64_t bytes, request, sent, received;
    uint8_t op;
    /* OBJECTS (format.h): region is the creating region, UINT32_MAX for
     * none; name the type (a string id); bytes the size of one object. */
    uint64_t created, destroyed;
    /* GC: the collection that the innermost open region (of kind
     * TT_REGION_GC) is; duration_ns from its start to this record. */
    uint8_t generation;
    uint64_t collected, uncollectable, duration_ns;
    uint64_t duration_ticks;
    /* TASK_RESUME: the task (an index into task_names) whose step the next
     * ENTER, of its outermost coroutine, begins and its LEAVE ends. */
    uint32_t task;
} tt_event;

typedef struct tt_cursor tt_cursor;

/* Opens the events of stream `stream` (0 .. thread_count-1, present) of
 * process p. Fails only when the file cannot be opened or memory runs out;
 * damage in it is reported by the cursor. */
int tt_cursor_open(const tt_trace *t, const tt_process *p, size_t stream, tt_cursor **out, tt_error *err);

/* Reads the next event: 1 with *ev set, 0 at the end of the stream. Damage
 * does not fail the read: the stream ends there and tt_cursor_state says so.
 * The events end with: the synthesized LEAVEs of regions still open, then
 * STREAM_END when the stream has one. */
int tt_cursor_next(tt_cursor *c, tt_event *ev);

/* An ENTER or a LEAVE read from the data, as tt_cursor_next_calls gives it:
 * the fields of tt_event that such an event has (synthesized: 0). */
typedef struct tt_call {
    uint64_t time;   /* ns since epoch */
    uint64_t ticks;  /* the process's clock at the event */
    uint32_t region; /* the region entered or left */
    uint32_t depth;  /* open regions after it */
    uint8_t kind;    /* TT_EV_ENTER or TT_EV_LEAVE */
} tt_call;

/* The next events in bulk, for readers that go through every call (the
 * profile, the tasks): up to `max` of them into out, as long as they are
 * ENTER and LEAVE events read from the data. Returns how many; 0 when the
 * next event is of another kind or needs care (damage, a chunk's end, a
 * synthesized LEAVE, the end): read that one with tt_cursor_next, then go
 * on with either. Both give the same events, in the same order; this one
 * without a call per event. A cursor of a trace that keeps a range or
 * leaves regions out gives 0 here: everything comes from tt_cursor_next. */
size_t tt_cursor_next_calls(tt_cursor *c, tt_call *out, size_t max);

/* Where a stream's chunk of records starts, as a cursor reading through it
 * found it: what another cursor needs to start reading there
 * (tt_cursor_seek) and give the same events from there on, besides the
 * chunk itself (format.h: a chunk decodes on its own). */
typedef struct tt_chunk_start {
    uint64_t offset;      /* of the chunk in the stream's file */
    uint64_t time, ticks; /* of the event before it (0: none): times never go back */
    uint32_t seq;         /* its sequence number in the file */
    uint32_t depth;       /* regions open at its start */
    uint32_t crc;         /* its checksum: whether it is still the chunk that was read */
} tt_chunk_start;

/* The chunk that the last event tt_cursor_next gave was read from (an event
 * read from the data: not a synthesized one). */
const tt_chunk_start *tt_cursor_chunk(const tt_cursor *c);

/* Places c, opened and nothing read yet, at a chunk another cursor found
 * (tt_cursor_chunk), so that it reads on from there as that one did. The
 * regions open there are not known to it: their LEAVEs name the
 * placeholder region (region_count). 0, or -1 when c has read already or
 * memory runs out; a chunk that is no longer there is reported by the
 * cursor as damage or a cut, as any. */
int tt_cursor_seek(tt_cursor *c, const tt_chunk_start *at);

/* When the stream began (ns since the epoch): where its first chunks were
 * dropped (a ring), as its first chunk kept says (format.h: OPEN), once
 * tt_cursor_next gave its first event; else 0: its first event's time. */
uint64_t tt_cursor_began(const tt_cursor *c);

/* Valid once tt_cursor_next returned 0. */
tt_stream_state tt_cursor_state(const tt_cursor *c);
/* NULL when complete, else one line: what was cut and where, e.g.
 * `process 4242 thread "worker-1" (stream 3): cut after 17 chunks at byte
 * 1114112 (truncated chunk)`. */
const char *tt_cursor_problem(const tt_cursor *c);
/* Events read from the data so far (synthesized LEAVEs not counted). */
uint64_t tt_cursor_events_read(const tt_cursor *c);

/* Bytes of records read from the data so far (decoded payloads; headers not
 * counted): across one tt_cursor_next, the size of the event's record, 0 for
 * a synthesized one. For `tracetop score`. */
uint64_t tt_cursor_record_bytes(const tt_cursor *c);

/* The payload bytes of the chunks of records read so far, as stored on disk
 * and decoded: a writer compresses some chunks of events (writer.c), whose
 * records then take stored / raw of their bytes on disk. For `tracetop
 * score`, of a cursor read from the start. */
void tt_cursor_payload_bytes(const tt_cursor *c, uint64_t *stored, uint64_t *raw);

void tt_cursor_close(tt_cursor *c);

/* The call tree a writer put behind a stream's records (TREE chunks,
 * format.h): nodes in the order its TREE_NODES blocks give them, less the root,
 * so node k here is the format's k + 1; parent UINT32_MAX for an outermost
 * call. Regions as a cursor maps them (the "<undefined>" placeholder for an
 * id incomplete definitions do not cover). */
typedef struct tt_tree_node {
    uint32_t parent, region;
    uint64_t visits, inclusive_ticks;
    /* asyncio (format.h): the task whose step's node it is (UINT32_MAX: none) */
    uint32_t task;
    uint64_t suspended_ticks, awaited_ticks, suspensions;
} tt_tree_node;

typedef struct tt_tree_gc {
    uint64_t collections, ticks, longest, collected, uncollectable;
} tt_tree_gc;

typedef struct tt_stream_tree {
    size_t node_count;
    tt_tree_node *nodes;
    uint64_t events, end_ticks, reads; /* TREE's fields (format.h) */
    int steps;                         /* some node is a step's (task not UINT32_MAX) */
    tt_tree_gc gc[3];
    uint64_t bytes; /* its TREE chunks on disk, headers included */
    /* Its chunks of records flagged TT_CHUNK_COUNTED (format.h), in order
     * (time, ticks, depth: 0), the records they hold, and of those the ones
     * a profile counts (tt_ev_counted): all `reads` are there when it is
     * reads. */
    size_t counted_chunks;
    tt_chunk_start *counted_at;
    uint64_t counted_chunk_records, counted_records;
} tt_stream_tree;

/* Reads the tree of stream `stream` of process p of trace t, going over its
 * chunks of records without decoding them (checked: in sequence, within the
 * file, the file's end right after the tree; their checksums too unless
 * tt_trace_trust_records): 1 with
 * *out set (tt_stream_tree_free it), 0 when the stream has no whole tree
 * (cut, an older writer's, damaged; read its records then), -1 when memory
 * runs out. */
int tt_stream_tree_read(const tt_trace *t, const tt_process *p, size_t stream, tt_stream_tree *out, tt_error *err);

/* The bytes of the records of a stream's file made in [from, until) (ns
 * since the epoch), as decoded (its chunks' raw_size, TREE chunks not
 * counted), from the chunk headers alone: what the records are, whether the
 * writer compressed them or not. A chunk spans from its base time to the
 * next one's (the last one to the thread's last usage sample or the
 * process's end) and counts in the share of that span the range holds. 0
 * for a stream without a readable file. */
uint64_t tt_stream_record_bytes(const tt_process *p, size_t stream, uint64_t from, uint64_t until);
void tt_stream_tree_free(tt_stream_tree *tree);

/* Gives `each` the records a profile counts beyond the tree (tt_ev_counted)
 * of stream `stream` of p, read from the chunks its tree found flagged
 * (tree->counted_at) alone, in order, each as the event a cursor gives for
 * it without its time (time, ticks and depth 0). 0 when all were
 * given; 1 when a chunk is no longer what the tree read found (changed
 * since), with the problem in one line in err, the records before it
 * given; -1 when memory runs out or `each` fails (its err). */
int tt_stream_counted_read(const tt_process *p, size_t stream, const tt_stream_tree *tree,
                           int (*each)(void *ctx, const tt_event *ev, tt_error *err), void *ctx, tt_error *err);

#endif

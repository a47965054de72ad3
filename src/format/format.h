/* format.h -- the native trace format: the one place it is defined.
 *
 * An experiment's trace/ directory holds one folder per measured process,
 * named by its pid:
 *
 *     trace/<pid>/defs.tts      definitions: process, clock, strings, regions, threads
 *     trace/<pid>/<n>.tts       the events of thread stream n (n = 0, 1, 2, ...)
 *
 * Every .tts file is a 16-byte file header followed by chunks. A chunk is
 * self-delimiting and checksummed, so a reader can always tell how far a
 * file is intact: a trace cut short by a crash is read up to its last
 * complete chunk and the reader says what was cut.
 *
 * File header (16 bytes):
 *     char magic[8] = "TRACETOP"; u32 version; u32 kind (TT_FILE_DEFS/TT_FILE_EVENTS)
 *
 * Chunk header (32 bytes, little-endian), then stored_size payload bytes:
 *     u32 magic          TT_CHUNK_MAGIC
 *     u32 seq            0, 1, 2, ... within the file; a gap means a lost chunk
 *     u64 base_ticks     events: the time the first record's delta counts from
 *     u32 stored_size    payload bytes as stored
 *     u32 raw_size       payload bytes once decoded
 *     u8  codec          TT_CODEC_NONE or TT_CODEC_ZSTD: a writer compresses the chunks it
 *                        chooses (tracetop's: definitions and trees always, events where
 *                        they pay back what else the trace holds, writer.c), so what
 *                        the records of a chunk are is raw_size, not stored_size
 *     u8  flags          TT_CHUNK_PARTIAL: a prefix of a chunk still being filled;
 *                        TT_CHUNK_TREE: a stream's call tree (below), not events;
 *                        TT_CHUNK_TREE_COLUMNS: with TREE, its nodes in columns;
 *                        TT_CHUNK_COUNTED: records a profile counts beyond the
 *                        stream's tree (below)
 *     u16 reserved       0
 *     u32 crc            checksum: the low 32 bits of XXH3-64(header bytes [0, 28))
 *                        xor XXH3-64(stored payload)
 *
 * A payload is a sequence of records, each a tag byte and its fields. Integers
 * are unsigned LEB128 varints ("v"), signed ones zigzag-encoded first ("z");
 * doubles are 8 bytes little-endian ("f64"); strings are v length + UTF-8 bytes.
 *
 * Event records (in thread streams); every one starts with v dt, the ticks
 * since the previous record (or since base_ticks for a chunk's first record):
 *     ENTER          dt, v region
 *     LEAVE          dt                     closes the innermost open region
 *     PARAM_INT      dt, v name, z value    name: a string id
 *     PARAM_UINT     dt, v name, v value
 *     PARAM_STRING   dt, v name, string value
 *     COUNTER        dt, v name, f64 value
 *     MARK           dt, v name
 *     RECORDING_OFF  dt                     the measurement went off (a gap begins) ...
 *     RECORDING_ON   dt                     ... and on again (it ends)
 *     STREAM_END     dt                     the thread ended; the stream is complete
 *     ENTER_AGAIN    dt, v region       as ENTER, of a region that goes on: the part after
 *                    the LEAVE just before it (the same time), not a new visit (below)
 *     OBJECTS        dt, v region + 1 (0: none), v type, v size, v created, v destroyed
 *                    objects counted since this place's previous OBJECTS record
 *                    (see below)
 *     OPEN           dt, v since, v count, count x v region
 *                    in a ring kept by --keep (below), no event: the stream
 *                    began `since` ticks before the chunk's base_ticks, and
 *                    the recorded calls open where the chunk begins are
 *                    these, innermost first; the outermost of a stack deeper
 *                    than a quarter chunk holds are left out
 *     ENTER_SHORT    tag 32 + dt / 256, u8 dt % 256, v region     (dt < 2048)
 *     LEAVE_SHORT    tag 40 + dt / 256, u8 dt % 256                (dt < 2048)
 *     ENTER_PREDICTED tag 56 + dt / 256, u8 dt % 256                (dt < 1536)
 *                    the region is the one the stream's predictor names (below)
 *     LEAVE_MEDIUM   tag 62 + dt / 65536, u16 dt % 65536            (dt < 131072)
 *     ENTER_MEDIUM   tag 48 + dt / 65536, u16 dt % 65536, v region  (dt < 262144)
 *     ENTER_PREDICTED_MEDIUM tag 52 + dt / 65536, u16 dt % 65536    (dt < 262144)
 * The short forms are ENTER and LEAVE whose dt is small, as nearly every
 * call's is: the tag carries dt's high bits, so a return takes 2 bytes and
 * a call 3 (a region below 128), or 2 when predicted. The medium forms are
 * those whose dt is longer (a call after a few microseconds of work): a
 * writer encodes them with as few instructions as the short ones, where the
 * long forms' varint costs a loop. Readers yield them as ENTER and LEAVE.
 *
 * The predictor guesses the region of the next ENTER from the region of the
 * last ENTER and the LEAVEs since it: calls come in the same order again
 * and again (a loop's body, a generator's pipeline), and which call follows
 * a return to the same place is nearly always the same. It is TT_PREDICT_SLOTS
 * regions, all 0 (and last = leaves = 0) at the start of every chunk, so a
 * chunk decodes on its own; after each ENTER record of any form (region r),
 * slot[(last ^ leaves << 5) % TT_PREDICT_SLOTS] = r, then last = r and
 * leaves = 0; after each LEAVE record of any form, leaves += 1. An
 * ENTER_PREDICTED's region is that slot's before the update (tt_predict_slot).
 * A writer writes one when the slot holds the region (and dt fits).
 * A writer guarantees well nesting: every LEAVE closes an ENTER of the same
 * stream, and a complete stream has closed every region before STREAM_END.
 *
 * A user region's begin and end are where the program says, whatever calls
 * they cross: a call that returns while a user region begun inside it is
 * still open, or that is open where a user region begun outside it ends, is
 * split there (the calls and regions above that point LEAVE, and those that
 * go on ENTER_AGAIN, at the same time), so that the stream stays well
 * nested and each region's time is its own: a region begun in start() and
 * ended in stop() holds what ran between them, start() and stop() only
 * themselves. Readers give ENTER_AGAIN as an ENTER that is no new visit.
 *
 * A gap: the time from RECORDING_OFF to the next RECORDING_ON, when the
 * measurement was off (recording off, `tracetop ctl off`; the process's
 * MEASUREMENT_OFF says when, for all its threads), is no call's: the calls
 * open at RECORDING_OFF are measured up to it and from RECORDING_ON on, as
 * if left there and entered again (the reader gives them so), and those
 * whose LEAVE comes inside the gap ended somewhere in it. tracetop's writer
 * puts both records of a gap in one chunk, with no record between them, and
 * the calls that ended inside it LEAVE just before its RECORDING_OFF (the
 * call tree's inclusive ticks, below, leave the gap out the same way).
 * The instrumenter switched off alone makes no gap: its time is measured,
 * with the calls open around it.
 *
 * MPI events, inside the region of the MPI call that makes them (peer: a
 * rank in the communicator; comm: an MPI_COMM definition; bytes: of the
 * message; request: a number the process gives a nonblocking operation):
 *     MPI_SEND             dt, v receiver, v tag, v comm, v bytes
 *     MPI_RECV             dt, v sender, v tag, v comm, v bytes
 *     MPI_ISEND            dt, v receiver, v tag, v comm, v bytes, v request
 *     MPI_ISEND_COMPLETE   dt, v request
 *     MPI_IRECV_REQUEST    dt, v request
 *     MPI_IRECV            dt, v sender, v tag, v comm, v bytes, v request
 *     MPI_COLLECTIVE_BEGIN dt
 *     MPI_COLLECTIVE_END   dt, u8 op (TT_MPI_*), v comm, v root + 1 (0: none), v sent, v received
 *
 * Garbage collection: a collection is a region of kind
 * TT_REGION_GC, entered where the collector started, in the thread that ran
 * it, so that it nests inside the call it interrupted and that call's
 * exclusive time leaves it out; its result is one record inside it, just
 * before its LEAVE (duration: the ticks since the region's ENTER):
 *     GC             dt, u8 generation, v collected, v uncollectable, v duration
 *
 * asyncio tasks: a task runs in steps, each one resume of its
 * outermost coroutine by the event loop; between two steps it is suspended
 * (awaiting). The hook records, just before the ENTER of a coroutine that
 * is not resumed by another coroutine (its caller is not one), which task
 * asyncio says is running (a TASK definition):
 *     TASK_RESUME    dt, v task
 * The step is that ENTER's region, until its LEAVE. A coroutine outside any
 * task (driven by hand, or by another framework) has no TASK_RESUME.
 *
 * Definition records (in defs.tts); ids are dense from 0, per process, and a
 * definition always precedes any record that refers to it:
 *     STRING      v id, string
 *     REGION      v id, v name, v file, v line, u8 kind (TT_REGION_*)
 *     THREAD      v stream, v name, v native_tid   (again later = renamed)
 *     PROCESS     v pid, v ppid, v name, u8 clock (TT_CLOCK_*), v ticks_per_second
 *     CLOCK_SYNC  v ticks, v monotonic_ns, v realtime_ns
 *     ATTRIBUTE   v key, v value           (strings: command line, versions ...; "ended", as the
 *                 process stops: how it ended, in MANIFEST.md's words, e.g. "killed by SIGTERM")
 *     PROCESS_END v ticks, v events, v waits, v wait_ns
 *     MPI_RANK    v rank, v size           this process is rank `rank` of MPI_COMM_WORLD
 *     MPI_COMM    v id, u8 kind (TT_COMM_*), v parent + 1 (0: none), v seq, v size,
 *                 v listed, listed x v world rank
 *     TASK        v task, v name           an asyncio task (ids dense from 0 per session of the
 *                 process), named by its Task.get_name() at its first step
 *     TASK_NAMED  v task, string name    the same, its name in place of a string id: no table
 *                 of names is kept for tasks, whose names are seldom another's (the writer's
 *                 memory stays the same however many tasks a program makes); tracetop writes
 *                 this form, readers read both
 *     COROUTINE   v region                 the region is a coroutine's or an async generator's
 *                 code: when a step ends, the regions of this kind its last returns leave are
 *                 the coroutines that await (the other returns were calls finished before)
 *     OPEN_AT_START v stream, v count      the first `count` ENTER records of the stream are calls
 *                 that were already running when the measurement began (tracetop attach): they
 *                 stand at the measurement's start, their true start is unknown
 *     MEASUREMENT_OFF v from, v to         the measurement of the process was off from ticks
 *                 `from` to `to` (recording off, `tracetop ctl off`): no time of its threads
 *                 was measured then (below: RECORDING_OFF)
 * A process whose defs lack PROCESS_END did not end normally.
 *
 * The call tree of a stream: a writer may put, behind a stream's
 * last chunk of records (the one with STREAM_END), TREE chunks (chunk flag
 * TT_CHUNK_TREE; seq numbers go on), whose payload is no events but the
 * stream's call-path tree as the writer kept it while recording
 * (calltree.h), so that a profile needs no read of the calls:
 *     TREE        v nodes, v events, v end_ticks, v reads,
 *                 3 x (v collections, v ticks, v longest, v collected, v uncollectable)
 *     TREE_NODES  v count, count x v (n - parent), count x v (region << 1 | more),
 *                 count x v visits, count x v inclusive_ticks,
 *                 then for each of those nodes with `more`, in order:
 *                 v task + 1, v suspended_ticks, v awaited_ticks, v suspensions
 * TREE comes first, then TREE_NODES blocks, each the next `count` nodes,
 * numbered 1, 2, ... in order (0 is the root: no region, parent of the
 * outermost calls), field by field: a column of each field, which zstd
 * takes to less than node by node would (generators: 79,873 bytes of rows,
 * 66,000 compressed; 59,438 in columns, 33,306 compressed). A block lies in
 * one chunk. A node's parent is numbered below it: n - parent, its number
 * less its parent's, is 1 or more, nearly always a byte. Every TREE chunk
 * has the flag TT_CHUNK_TREE_COLUMNS; a TREE chunk without it is an earlier
 * writer's (a TREE_NODE record per node, no asyncio fields), whose stream a
 * reader reads record by record. A node is a call path: visits are its
 * ENTER records, inclusive_ticks the sum of its calls' LEAVE ticks minus
 * ENTER ticks. events: the stream's records (STREAM_END included); end_ticks
 * the time of STREAM_END; reads: how many of its records a profile takes
 * from the records still (OBJECTS, MPI_SEND, MPI_ISEND, MPI_COLLECTIVE_END,
 * asyncio steps the writer could not follow, 1 for all; an earlier writer
 * counted MPI_RECV and MPI_IRECV too); then per generation 0..2 its
 * GC records: how many, their durations' sum and longest (ticks), objects
 * collected and uncollectable. asyncio tasks (a step: tasklanes.h): task + 1
 * is not 0 for the node of a step of that task (TASK_RESUME's), whose path
 * is then its own, apart from the same path's in other tasks or out of
 * steps (a reader merges them for the call-path profile): the node and
 * those beneath it, down to another step's node, are the task's time;
 * suspended_ticks: the task's time between its steps (from a step's end to
 * its next, the next through this node), summed; awaited_ticks and
 * suspensions: the suspensions after steps whose last returns left this
 * node, and their time, summed (a reader counts those of COROUTINE regions
 * as the await time per coroutine).
 * A stream without TREE chunks (a crash, an older writer, a tree the writer
 * gave up) is read record by record; readers of events stop at the first
 * TREE chunk.
 * The records that `reads` counts (tt_ev_counted: OBJECTS, MPI_SEND,
 * MPI_ISEND, MPI_COLLECTIVE_END; the profile's objects and MPI tables)
 * lie in the chunks of records with the flag TT_CHUNK_COUNTED, which a
 * writer sets on every chunk that holds one of them, so that a profile
 * reads those chunks alone beside the tree (a --objects run: a batch every
 * 100 ms, a chunk in tens). A reader that finds fewer such records in the
 * flagged chunks than `reads` (an earlier writer, which flags none; steps
 * the writer could not follow) reads the whole stream. The flag changes
 * no record: a reader that ignores it reads the stream as before.
 *
 * Threads' use of the CPU and the GIL, sampled by tracetop's own
 * writer thread (sampler.h), never by the measured threads:
 *     THREAD_USAGE v stream, v ticks, v cpu_ns, v samples, v gil_samples
 * At `ticks`, the thread of `stream` had used cpu_ns of CPU time since the
 * stream began (its thread CPU clock), and of the `samples` times the writer looked, since
 * the stream began, which thread held the GIL, it was this one gil_samples
 * times. Cumulative, so a reader takes differences between two records;
 * written about every TT_USAGE_PERIOD_MS per open stream (one may be
 * skipped) and once more as the stream closes. samples is 0 throughout
 * when the Python cannot tell who holds the GIL.
 *
 * MPI_COMM ids are per process. A communicator made by a collective call on
 * a parent (dup, split, create) has the parent and the number of such calls
 * made on the parent before it (seq), which all its members agree on, so
 * readers can tell the same communicator across processes; one first seen
 * in use has no parent. Its members are listed as world ranks in rank order,
 * unless there are more than TT_MPI_COMM_LISTED_MAX (listed = 0).
 *
 * Objects (`--objects`): the objects of one type created in one region (the
 * innermost recorded region open in the creating thread; none when nothing
 * was), counted, not sampled. type: a string id, the type's name ("list",
 * "dict", "module:Qualname" for a class); size: the bytes of one object's
 * fixed part (tp_basicsize), the same in every record of the type. A record
 * adds `created` and `destroyed` to the totals of (region, type): an object
 * counts as destroyed against the region that created it, in the stream of
 * the thread that freed it, so the totals are sums over all streams of the
 * process. Records come in batches, each a few per place at most, when
 * enough objects were counted or enough time passed, and when counting stops.
 *
 * A ring (`--keep SIZE`, version 6): a writer that keeps only the most
 * recent SIZE bytes of a process's trace on disk (the blocks of its files,
 * defs.tts included) drops the oldest chunks of records, by base time
 * across the process's event streams, to make room for what it writes
 * next. A chunk is dropped by punching a hole from the end of its file's
 * header up to the first chunk kept, so the file keeps its offsets and its
 * blocks are freed: the bytes there read as zeros. defs.tts and TREE
 * chunks are never dropped (the calls profiled are the whole run's; the
 * records TREE's `reads` counts go with their chunks). Such a process says
 * so in its definitions (ATTRIBUTE "keep": SIZE in bytes, decimal), and
 * only there may an event file hold zeros between its header and its first
 * chunk; the first chunk's seq is how many were dropped. A file whose first
 * chunk left is a TREE chunk had all its records dropped. So that a chunk
 * decodes on its own with its calls, every chunk of records after a
 * stream's first begins, in such a ring, with an OPEN record (dt 0): the
 * calls open then, which a reader that starts at that chunk enters at its
 * base time (as calls already running), and a reader that read the chunk
 * before skips; and when the stream began, which its dropped first chunk
 * said. A LEAVE with nothing open after a stack left out so is the return
 * of a call dropped with it. OPEN is not one of the stream's records that
 * TREE's `events` counts. A writer without --keep writes version 4 files,
 * holes and OPEN records never.
 *
 * Time: a stream's ticks come from the process's clock (TSC or
 * CLOCK_MONOTONIC in ns). CLOCK_SYNC records pair ticks with monotonic and
 * real time, so readers map ticks to a common real-time axis across processes.
 */
#ifndef TRACETOP_FORMAT_H
#define TRACETOP_FORMAT_H

#include <stddef.h>
#include <stdint.h>

/* Version 2 added ENTER_PREDICTED and LEAVE_MEDIUM, version 3 ENTER_MEDIUM
 * and ENTER_PREDICTED_MEDIUM, version 4 the definitions TASK_NAMED and
 * MEASUREMENT_OFF, version 5 ENTER_AGAIN, version 6 the ring (OPEN,
 * dropped chunks: above); readers read every version from 1. A writer
 * writes the lowest version its files need: TT_FORMAT_VERSION_RING with
 * --keep, else TT_FORMAT_VERSION_PLAIN. */
#define TT_FORMAT_VERSION 6u
#define TT_FORMAT_VERSION_RING 6u
#define TT_FORMAT_VERSION_PLAIN 5u
#define TT_FORMAT_VERSION_OLDEST 1u
#define TT_FILE_MAGIC "TRACETOP"
#define TT_FILE_HEADER_SIZE 16u
#define TT_CHUNK_MAGIC 0x4b434854u /* "THCK" */
#define TT_CHUNK_HEADER_SIZE 32u
#define TT_CHUNK_CRC_OFFSET 28u

/* The payload a writer puts in one chunk; a reader accepts up to the max. */
#define TT_CHUNK_PAYLOAD_SIZE (64u * 1024u)
#define TT_CHUNK_PAYLOAD_MAX (16u * 1024u * 1024u)

/* The largest record whose fields are all integers: tag + 3 varints of
 * 10 bytes. Records carrying a string reserve their length on top. */
#define TT_RECORD_MAX_FIXED 32u

enum tt_file_kind { TT_FILE_DEFS = 1, TT_FILE_EVENTS = 2 };
enum tt_codec { TT_CODEC_NONE = 0, TT_CODEC_ZSTD = 1 };
enum { TT_CHUNK_PARTIAL = 1, TT_CHUNK_TREE = 2, TT_CHUNK_TREE_COLUMNS = 4, TT_CHUNK_COUNTED = 8 };

enum tt_event_tag {
    TT_EV_ENTER = 1,
    TT_EV_LEAVE = 2,
    TT_EV_PARAM_INT = 3,
    TT_EV_PARAM_UINT = 4,
    TT_EV_PARAM_STRING = 5,
    TT_EV_COUNTER = 6,
    TT_EV_MARK = 7,
    TT_EV_RECORDING_OFF = 8,
    TT_EV_RECORDING_ON = 9,
    TT_EV_STREAM_END = 10,
    TT_EV_MPI_SEND = 11,
    TT_EV_MPI_RECV = 12,
    TT_EV_MPI_ISEND = 13,
    TT_EV_MPI_ISEND_COMPLETE = 14,
    TT_EV_MPI_IRECV_REQUEST = 15,
    TT_EV_MPI_IRECV = 16,
    TT_EV_MPI_COLLECTIVE_BEGIN = 17,
    TT_EV_MPI_COLLECTIVE_END = 18,
    TT_EV_GC = 19,
    TT_EV_TASK_RESUME = 20,
    TT_EV_ENTER_AGAIN = 21,
    TT_EV_OPEN = 22,
    /* 23..25: reserved */
    TT_EV_OBJECTS = 26,
    TT_EV_ENTER_SHORT = 32,            /* .. 39 */
    TT_EV_LEAVE_SHORT = 40,            /* .. 47 */
    TT_EV_ENTER_MEDIUM = 48,           /* .. 51 */
    TT_EV_ENTER_PREDICTED_MEDIUM = 52, /* .. 55 */
    TT_EV_ENTER_PREDICTED = 56,        /* .. 61 */
    TT_EV_LEAVE_MEDIUM = 62,           /* .. 63 */
};
#define TT_EV_SHORT_FORMS 8u       /* tags of each short form */
#define TT_EV_SHORT_DT_LIMIT 2048u /* dt below it fits a short form */
#define TT_EV_PREDICTED_FORMS 6u
#define TT_EV_PREDICTED_DT_LIMIT (TT_EV_PREDICTED_FORMS * 256u)
#define TT_EV_MEDIUM_FORMS 2u
#define TT_EV_MEDIUM_DT_LIMIT (TT_EV_MEDIUM_FORMS * 65536u)
#define TT_EV_ENTER_MEDIUM_FORMS 4u
#define TT_EV_ENTER_MEDIUM_DT_LIMIT (TT_EV_ENTER_MEDIUM_FORMS * 65536u)
#define TT_EV_LAST (TT_EV_LEAVE_MEDIUM + TT_EV_MEDIUM_FORMS - 1)
/* Tags after the last of the long forms and before the short ones are not
 * defined: readers reject them. From the short forms on, every tag up to
 * TT_EV_LAST is one. */
#define TT_EV_LONG_LAST TT_EV_OBJECTS

/* The records a profile counts that a stream's tree does not hold (TREE's
 * reads, TT_CHUNK_COUNTED). */
static inline int tt_ev_counted(uint8_t tag)
{
    return tag == TT_EV_OBJECTS || tag == TT_EV_MPI_SEND || tag == TT_EV_MPI_ISEND || tag == TT_EV_MPI_COLLECTIVE_END;
}

/* The predictor of ENTER_PREDICTED (see above), the same in writers and
 * readers. */
#define TT_PREDICT_SLOTS 256u
typedef struct tt_predictor {
    uint32_t last;
    uint32_t leaves_shifted; /* leaves << 5, kept so: the slot costs no shift */
    uint32_t slot[TT_PREDICT_SLOTS];
} tt_predictor;

static inline uint32_t *tt_predict_slot(tt_predictor *p)
{
    return &p->slot[(p->last ^ p->leaves_shifted) & (TT_PREDICT_SLOTS - 1)];
}
/* After an ENTER record (its slot already read) and after a LEAVE record. */
static inline void tt_predict_enter(tt_predictor *p, uint32_t *slot, uint32_t region)
{
    *slot = region;
    p->last = region;
    p->leaves_shifted = 0;
}
static inline void tt_predict_leave(tt_predictor *p) { p->leaves_shifted += 1u << 5; }

enum tt_def_tag {
    TT_DEF_STRING = 1,
    TT_DEF_REGION = 2,
    TT_DEF_THREAD = 3,
    TT_DEF_PROCESS = 4,
    TT_DEF_CLOCK_SYNC = 5,
    TT_DEF_ATTRIBUTE = 6,
    TT_DEF_PROCESS_END = 7,
    TT_DEF_MPI_RANK = 8,
    TT_DEF_MPI_COMM = 9,
    TT_DEF_THREAD_USAGE = 10,
    TT_DEF_TASK = 11,
    TT_DEF_COROUTINE = 12,
    TT_DEF_TASK_NAMED = 13,
    TT_DEF_MEASUREMENT_OFF = 14,
    TT_DEF_OPEN_AT_START = 18,
    /* In TREE chunks (above), not in defs.tts. */
    TT_DEF_TREE = 20,
    TT_DEF_TREE_NODE = 21, /* TREE_NODES */
};

enum tt_region_kind {
    TT_REGION_PYTHON = 1, /* a Python function: module:qualname */
    TT_REGION_C = 2,      /* a C function: module:name or Type.name */
    TT_REGION_USER = 3,   /* a user region: user:<name> */
    TT_REGION_MPI = 4,    /* an MPI function: MPI_Send */
    TT_REGION_GC = 5,     /* a garbage collection: gc:collection(gen<N>) */
};
#define TT_REGION_KIND_LAST TT_REGION_GC

/* The name of a region kind, lower case ("python", "c", "user", "mpi",
 * "gc"); NULL for a number outside enum tt_region_kind, which each reader
 * names as it shows it (the reader's "<undefined>" placeholder). */
const char *tt_region_kind_name(unsigned kind);

enum tt_comm_kind { TT_COMM_WORLD = 1, TT_COMM_SELF = 2, TT_COMM_DERIVED = 3 };
#define TT_MPI_COMM_LISTED_MAX 4096u

/* Collective operations, numbered as OTF2_CollectiveOp. */
enum tt_mpi_collective {
    TT_MPI_BARRIER = 0,
    TT_MPI_BCAST = 1,
    TT_MPI_GATHER = 2,
    TT_MPI_GATHERV = 3,
    TT_MPI_SCATTER = 4,
    TT_MPI_SCATTERV = 5,
    TT_MPI_ALLGATHER = 6,
    TT_MPI_ALLGATHERV = 7,
    TT_MPI_ALLTOALL = 8,
    TT_MPI_ALLTOALLV = 9,
    TT_MPI_ALLTOALLW = 10,
    TT_MPI_ALLREDUCE = 11,
    TT_MPI_REDUCE = 12,
    TT_MPI_REDUCE_SCATTER = 13,
    TT_MPI_SCAN = 14,
    TT_MPI_EXSCAN = 15,
    TT_MPI_REDUCE_SCATTER_BLOCK = 16,
};

/* The MPI name of a collective operation, lower case ("allreduce");
 * "unknown" for a number outside enum tt_mpi_collective. */
const char *tt_mpi_collective_name(unsigned op);

enum tt_clock_kind { TT_CLOCK_MONOTONIC = 1, TT_CLOCK_TSC = 2 };

struct tt_chunk_header {
    uint32_t seq;
    uint64_t base_ticks;
    uint32_t stored_size;
    uint32_t raw_size;
    uint8_t codec;
    uint8_t flags;
};

/* Writes a file header of the given kind into out[TT_FILE_HEADER_SIZE]:
 * format `version` (TT_FORMAT_VERSION_PLAIN or _RING). */
void tt_file_header_encode(uint8_t *out, enum tt_file_kind kind, uint32_t version);

/* Checks a file header: 0 and *kind set, or -1 with a reason in *why:
 * TT_FILE_NEWER when a newer tracetop wrote it, in a format newer than
 * this one reads (the file need not be damaged). */
#define TT_FILE_NEWER (-2)
int tt_file_header_decode(const uint8_t *in, size_t len, enum tt_file_kind *kind, const char **why);

/* Writes a chunk header for `payload` into out[TT_CHUNK_HEADER_SIZE],
 * computing the checksum over header and payload. */
void tt_chunk_header_encode(uint8_t *out, const struct tt_chunk_header *h, const uint8_t *payload);

/* The same, given XXH3-64 of the stored payload: the writer hashes a chunk
 * that it puts on disk in parts as the parts arrive. */
void tt_chunk_header_encode_hashed(uint8_t *out, const struct tt_chunk_header *h, uint64_t payload_hash);

/* Parses a chunk header (without checking the payload). 0 on success,
 * -1 with a reason in *why when the bytes are not a chunk header. */
int tt_chunk_header_decode(const uint8_t *in, struct tt_chunk_header *h, const char **why);

/* 1 when the stored checksum of a chunk matches its header and payload. */
int tt_chunk_verify(const uint8_t *header, const uint8_t *payload);

/* Compresses src into dst (capacity dst_cap) when the build has zstd.
 * Returns the compressed size, or 0 when compression is unavailable,
 * failed, or would not make the payload smaller. */
size_t tt_compress(void *ctx, uint8_t *dst, size_t dst_cap, const uint8_t *src, size_t len);
size_t tt_compress_bound(size_t len);
/* A context that compresses at zstd `level` (NULL without zstd); at a
 * negative level (fast), with the literals Huffman-coded still. */
void *tt_compress_ctx_new(int level);
/* The level of trace chunks: the writer thread must keep up with the traced
 * program on one core; higher levels gain little on event streams. */
#define TT_ZSTD_CHUNK_LEVEL 1
/* The level of definition chunks (writer.c), compressed whatever the
 * session's choice: written once, they are worth a better level. */
#define TT_ZSTD_DEFS_LEVEL 3
/* The level of the event chunks the writer compresses to pay back what
 * else a trace holds (writer.c): of zstd's levels the one that saves a byte
 * for the fewest instructions on event records, its literals (which
 * negative levels leave as they are) Huffman-coded as tt_compress_ctx_new
 * does at every negative level: a third of the bytes saved, some 65 to 90
 * instructions a byte saved (bench/README.md). */
#define TT_ZSTD_EVENTS_LEVEL (-10)
void tt_compress_ctx_free(void *ctx);

/* Decodes a stored payload into dst (exactly h->raw_size bytes). 0 on
 * success, -1 with a reason in *why. */
int tt_payload_decode(const struct tt_chunk_header *h, const uint8_t *stored, uint8_t *dst, const char **why);

/* ---- varints: inline, they are on the hot path ---- */

static inline uint8_t *tt_put_varint(uint8_t *p, uint64_t v)
{
    /* Deltas and ids of calls are nearly all below 2^21: up to three bytes
     * without a loop. */
    if (v < 0x80) {
        p[0] = (uint8_t)v;
        return p + 1;
    }
    if (v < 0x4000) {
        p[0] = (uint8_t)(v | 0x80);
        p[1] = (uint8_t)(v >> 7);
        return p + 2;
    }
    if (v < 0x200000) {
        p[0] = (uint8_t)(v | 0x80);
        p[1] = (uint8_t)((v >> 7) | 0x80);
        p[2] = (uint8_t)(v >> 14);
        return p + 3;
    }
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline uint64_t tt_zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t tt_unzigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

/* Reads a varint from [*p, end). Returns 0 and advances *p, or -1 when the
 * bytes run out or the varint is longer than 10 bytes. */
static inline int tt_get_varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    const uint8_t *q = *p;
    for (unsigned shift = 0; shift < 70 && q < end; shift += 7) {
        uint8_t b = *q++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *p = q;
            *out = v;
            return 0;
        }
    }
    return -1;
}

static inline void tt_put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void tt_put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint32_t tt_get_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}
static inline uint64_t tt_get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

#endif

/* attach.c -- the half of `tracetop attach` that runs in the process
 * attached to (tracetop/attach.py loads it there; the attaching command is
 * tracetop/commands/attach.py).
 *
 * Calls already running when the measurement begins: as it starts
 * (start(attached=True)), right after the hook was put on every thread
 * and with the GIL held since (no Python code has run in between, so no
 * thread has moved), the Python frames of every other thread are noted,
 * outermost first. Each thread
 * finds its own when its stream is made, on its first event, and they
 * are entered at the start and defined as OPEN_AT_START (format.h): their
 * returns then close them instead of being dropped, and readers know their
 * start is unknown. C calls in progress need nothing: CPython decides at
 * the call whether to report its return, so they report none. A thread
 * that runs no Python while attached has no stream and no lane.
 *
 * The end: the thread that attached waits in attach_wait, without the GIL,
 * for the first of the duration, a detach request (`tracetop ctl PID
 * detach`, Ctrl-C in the attaching command; they come through the live
 * channel to the writer thread, which only wakes this one) or the end of
 * the attaching command (a pidfd), and then stops the measurement.
 */
#include "attach.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pyregions.h"
#include "regionfilter.h"
#include "threadstream.h"

typedef struct thread_calls {
    unsigned long ident; /* PyThread_get_thread_ident() of the thread */
    PyObject *outermost; /* its outermost frame: a thread that ended and one that got its ident differ there */
    uint32_t depth;
    uint32_t *stack; /* outermost first */
} thread_calls;

static thread_calls *captured;
static size_t captured_count;
static uint64_t captured_at;

static _Atomic int detach_asked;
static _Atomic int detach_fd = -1; /* the write end of attach_wait's pipe, while it waits */

/* The regions of the frames from `frame` outwards, outermost first, in
 * *out (PyMem); consumes the reference to frame. */
static int frame_regions(PyFrameObject *frame, thread_calls *out)
{
    uint32_t cap = 0;
    while (frame) {
        if (out->depth == cap) {
            cap = cap ? cap * 2 : 32;
            uint32_t *grown = PyMem_Realloc(out->stack, cap * sizeof *grown);
            if (!grown) {
                Py_DECREF(frame);
                PyErr_NoMemory();
                return -1;
            }
            out->stack = grown;
        }
        uint32_t region = tt_frame_region(frame);
        out->stack[out->depth++] = tt_region_is_filtered(region) ? TT_STACK_SKIP : region;
        PyFrameObject *back = PyFrame_GetBack(frame);
        if (back)
            Py_DECREF(frame);
        else
            out->outermost = (PyObject *)frame; /* the reference is kept */
        frame = back;
    }
    for (uint32_t i = 0; i < out->depth / 2; i++) {
        uint32_t t = out->stack[i];
        out->stack[i] = out->stack[out->depth - 1 - i];
        out->stack[out->depth - 1 - i] = t;
    }
    return 0;
}

void tt_attach_forget(void)
{
    for (size_t i = 0; i < captured_count; i++) {
        PyMem_Free(captured[i].stack);
        Py_XDECREF(captured[i].outermost);
    }
    PyMem_Free(captured);
    captured = NULL;
    captured_count = 0;
}

int tt_attach_capture(void)
{
    PyThreadState *self = PyThreadState_Get();
    PyInterpreterState *interp = PyThreadState_GetInterpreter(self);
    size_t n = 0;
    for (PyThreadState *t = PyInterpreterState_ThreadHead(interp); t; t = PyThreadState_Next(t)) n++;
    tt_attach_forget();
    captured = PyMem_Calloc(n ? n : 1, sizeof *captured);
    if (!captured) {
        PyErr_NoMemory();
        return -1;
    }
    captured_at = tt_clock_now();
    for (PyThreadState *t = PyInterpreterState_ThreadHead(interp); t; t = PyThreadState_Next(t)) {
        if (t == self) continue; /* tracetop's own: its events are not recorded */
        thread_calls *calls = &captured[captured_count];
        calls->ident = t->thread_id;
        PyFrameObject *frame = PyThreadState_GetFrame(t);
        if (!frame) continue;
        captured_count++;
        if (frame_regions(frame, calls) < 0) return -1;
    }
    return 0;
}

/* The calling thread's outermost frame (borrowed: it lives while it runs). */
static PyObject *outermost_frame(void)
{
    PyFrameObject *frame = PyThreadState_GetFrame(PyThreadState_Get());
    while (frame) {
        PyFrameObject *back = PyFrame_GetBack(frame);
        if (!back) break;
        Py_DECREF(frame);
        frame = back;
    }
    Py_XDECREF(frame);
    return (PyObject *)frame;
}

int tt_attach_open_calls(unsigned long ident, tt_open_calls *out)
{
    for (size_t i = 0; i < captured_count; i++)
        if (captured[i].ident == ident && captured[i].stack && captured[i].outermost == outermost_frame()) {
            *out = (tt_open_calls){.since = captured_at, .stack = captured[i].stack, .depth = captured[i].depth};
            captured[i].ident = 0; /* taken: a later thread with the same ident starts afresh */
            return 1;
        }
    return 0;
}

/* On the writer thread: async-signal-safe, never waits. */
void tt_attach_request_detach(void)
{
    atomic_store(&detach_asked, 1);
    int fd = atomic_load(&detach_fd);
    if (fd >= 0) {
        ssize_t rc = write(fd, "", 1);
        (void)rc; /* a full pipe has been woken already */
    }
}

static int pidfd_of(long pid)
{
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
#else
    (void)pid;
    errno = ENOSYS;
    return -1;
#endif
}

/* attach_wait(attacher, seconds): see the module's doc. */
static PyObject *attach_wait(PyObject *self, PyObject *args)
{
    (void)self;
    long attacher;
    double seconds;
    if (!PyArg_ParseTuple(args, "ld:attach_wait", &attacher, &seconds)) return NULL;
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) != 0) return PyErr_SetFromErrno(PyExc_OSError);
    int pidfd = pidfd_of(attacher);
    const char *reason = NULL;
    atomic_store(&detach_fd, pipefd[1]);
    uint64_t deadline = seconds > 0 ? tt_monotonic_ns() + (uint64_t)(seconds * 1e9) : UINT64_MAX;
    Py_BEGIN_ALLOW_THREADS
    while (!reason) {
        if (atomic_load(&detach_asked)) {
            reason = "detach";
            break;
        }
        uint64_t now = tt_monotonic_ns();
        if (now >= deadline) {
            reason = "duration";
            break;
        }
        /* Without a pidfd (Linux before 5.3) the attacher is looked at
         * every 100 ms: should its pid be reused meanwhile, the end waits
         * for the duration or a detach. */
        uint64_t left_ms = (deadline - now) / 1000000 + 1;
        int timeout = pidfd >= 0 ? (left_ms > 1000 ? 1000 : (int)left_ms) : (left_ms > 100 ? 100 : (int)left_ms);
        struct pollfd fds[2] = {{.fd = pipefd[0], .events = POLLIN}, {.fd = pidfd, .events = POLLIN}};
        int ready = poll(fds, pidfd >= 0 ? 2 : 1, timeout);
        if (ready > 0 && fds[0].revents)
            reason = "detach";
        else if (ready > 0 && fds[1].revents)
            reason = "attacher";
        else if (pidfd < 0 && kill((pid_t)attacher, 0) != 0 && errno == ESRCH)
            reason = "attacher";
    }
    atomic_store(&detach_fd, -1);
    Py_END_ALLOW_THREADS
    close(pipefd[0]);
    close(pipefd[1]);
    if (pidfd >= 0) close(pidfd);
    atomic_store(&detach_asked, 0);
    return PyUnicode_FromString(reason);
}

/* attach_own_thread(): the calling thread is tracetop's: none of its events is recorded. */
static PyObject *attach_own_thread(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    tt_own_thread();
    Py_RETURN_NONE;
}

static PyMethodDef attach_methods[] = {
    {"attach_wait", attach_wait, METH_VARARGS,
     "attach_wait(attacher, seconds)\n--\n\n"
     "In a process tracetop attached to: waits without the GIL until `seconds` have passed (0: no limit),\n"
     "detach is asked (tracetop ctl PID detach) or process `attacher` has ended; returns which:\n"
     "'duration', 'detach' or 'attacher'."},
    {"attach_own_thread", attach_own_thread, METH_NOARGS,
     "The calling thread is tracetop's: nothing it does is recorded."},
    {NULL, NULL, 0, NULL},
};

int tt_ext_add_attach(PyObject *module) { return PyModule_AddFunctions(module, attach_methods); }

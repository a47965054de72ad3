/* lastthread.c -- a forked child whose forking thread was not its parent's
 * main thread ends when its last thread does, as without tracetop.
 *
 * The child's only thread is then its leader (its tid is the pid), but it
 * ends as the thread it was in the parent: by returning to pthread's start
 * routine, never through exit(). Nothing calls exit() or runs atexit: the
 * kernel ends the process, with status 0, when its last thread ends.
 * tracetop's threads (the writer, the SIGTERM watcher) never end by
 * themselves: they would keep such a child alive forever, a zombie leader
 * with its parent in waitpid, and its recording unfinished.
 *
 * So when such a child measures on (end_with_last_thread, from session.py's
 * after-fork hook), its thread's state dict gets a capsule, destroyed as
 * CPython clears the state of the ending thread, with the GIL and while
 * the state still counts among the interpreter's. Its destructor starts a
 * thread of tracetop's, the closer, and waits until the closer has made a
 * thread state of its own: made once the interpreter has none left, a
 * thread state is its first, which Python 3.11 cannot make again in a
 * forked child ("thread state already initialized"). The closer waits
 * until no thread of the program's is left (tt_thread_program_count: the
 * child may have started threads that outlive its first), takes the GIL
 * and calls the session's callback, which stops the measurement: the trace
 * ends complete and tracetop's other threads are joined. The closer then
 * returns, the last thread of the process: the kernel ends it as it would
 * have without tracetop.
 *
 * A child of such a child is one too, whichever thread forks it: the
 * leader's own stack also ends in pthread's start routine.
 */
#include "lastthread.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "thread.h"
#include "threadstream.h"

/* How often the closer looks for the program's threads: it cannot be told
 * when a thread that never ran Python ends. */
#define TT_LAST_THREAD_POLL_MS 5

/* This process's leader ends as a thread (a child forked from another
 * thread than the main one, or from such a child). */
static int leader_is_thread;
/* Noted by the forking thread, for the child. */
static int forking_from_thread;
/* The session's (GIL): stops the measurement. */
static PyObject *callback;

void tt_last_thread_before_fork(void)
{
    forking_from_thread = leader_is_thread || PyThread_get_thread_native_id() != (unsigned long)getpid();
}

void tt_last_thread_forked(void) { leader_is_thread = forking_from_thread; }

typedef struct {
    PyInterpreterState *interp;
    PyThreadState *state; /* the closer's */
    sem_t made;           /* posted once it is */
} closing;

static void *closer(void *arg)
{
    closing *c = arg;
    PyThreadState *state = c->state = PyThreadState_New(c->interp);
    sem_post(&c->made); /* c is gone from here on */
    if (!state) return NULL;
    struct timespec pause = {0, TT_LAST_THREAD_POLL_MS * 1000000L};
    /* Where /proc does not say (-1), the recording is finished at once:
     * better cut than never ended. */
    while (tt_thread_program_count() > 0) nanosleep(&pause, NULL);
    PyEval_RestoreThread(state);
    tt_own_thread(); /* the stop is tracetop's, even where a hook sees every thread (sys.monitoring) */
    if (callback) {
        PyObject *result = PyObject_CallNoArgs(callback);
        if (!result) PyErr_WriteUnraisable(callback);
        Py_XDECREF(result);
    }
    PyThreadState_Clear(state);
    PyThreadState_DeleteCurrent();
    return NULL;
}

/* The capsule's destructor, as CPython clears the thread state of the
 * thread that armed it, or in a child forked later by another thread, as
 * CPython drops the states of the threads fork() did not copy: only the
 * former ends the program's first thread. */
static void leader_ending(PyObject *capsule)
{
    if ((pid_t)(intptr_t)PyCapsule_GetContext(capsule) != getpid()) return;
    closing c = {.interp = PyInterpreterState_Get()};
    if (sem_init(&c.made, 0, 0) != 0) return;
    pthread_attr_t attr;
    pthread_t thread;
    int started = pthread_attr_init(&attr) == 0;
    if (started) {
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        started = tt_thread_create(&thread, &attr, closer, &c) == 0;
        pthread_attr_destroy(&attr);
    }
    /* Without the GIL: PyThreadState_New takes none. */
    if (started)
        while (sem_wait(&c.made) != 0) continue; /* EINTR */
    sem_destroy(&c.made);
}

static PyObject *end_with_last_thread(PyObject *self, PyObject *function)
{
    (void)self;
    if (!PyCallable_Check(function)) return PyErr_Format(PyExc_TypeError, "end_with_last_thread needs a callable");
    if (!leader_is_thread) Py_RETURN_FALSE;
    PyObject *dict = PyThreadState_GetDict(); /* borrowed; NULL only when out of memory */
    if (!dict) return PyErr_NoMemory();
    PyObject *capsule = PyCapsule_New(&callback, "tracetop.last_thread", leader_ending);
    int rc = capsule ? PyCapsule_SetContext(capsule, (void *)(intptr_t)getpid()) : -1;
    if (rc == 0) rc = PyDict_SetItemString(dict, "tracetop.last_thread", capsule);
    Py_XDECREF(capsule);
    if (rc < 0) return NULL;
    Py_XSETREF(callback, Py_NewRef(function));
    Py_RETURN_TRUE;
}

static PyMethodDef last_thread_methods[] = {
    {"end_with_last_thread", end_with_last_thread, METH_O,
     "end_with_last_thread(callback)\n--\n\nIn a child forked from a thread other than the main one, called by its\n"
     "thread: once that thread and every other of the program's have ended, call\n"
     "callback() (with the GIL, in a thread of tracetop's), which is to stop the\n"
     "measurement; the process then ends as it would have. False, and nothing\n"
     "done, where the process ends through exit() (forked from the main thread)."},
    {NULL, NULL, 0, NULL},
};

int tt_ext_add_last_thread(PyObject *module) { return PyModule_AddFunctions(module, last_thread_methods); }

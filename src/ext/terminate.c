/* terminate.c -- a measured process sent SIGTERM completes its trace, then
 * dies by SIGTERM as it would have.
 *
 * SIGTERM is how multiprocessing ends its pool workers, and how mpirun,
 * batch systems and `kill` end processes. Its default action kills at once,
 * which would cut the trace wherever the writer had got to: the last
 * TT_WRITER_PERIOD_MS of events lost, all of them for a worker that lived
 * less. So while a process is measured and SIGTERM has its default action,
 * tracetop catches it. The handler only posts a semaphore (async-signal-
 * safe), and the action is reset to the default as it runs (SA_RESETHAND):
 * a second SIGTERM kills at once. A watcher thread, asleep until then,
 * starts a thread that takes the GIL and calls the session's callback
 * (which stops the measurement as at exit) and then sends SIGTERM again,
 * now with the default action. Should the GIL not come within
 * TT_TERMINATE_GRACE_MS (a thread keeping it in a long C call, an
 * interpreter finishing), the watcher sends it itself: the trace is then
 * cut where the writer got to, as it would be without all this.
 *
 * The program sees nothing of it. signal.getsignal(SIGTERM) still says
 * SIG_DFL, since Python keeps its own table of handlers, filled before this
 * one is set. A handler the program sets replaces this one, and then
 * SIGTERM is the program's business. Children that exec start with the
 * default action again; forked children get it back at once (tt_terminate_
 * forked) and are caught again when they measure on. Around os.fork the
 * watcher thread is ended and started again (tt_terminate_pause/resume),
 * like the writer's, so that the program forks with no thread of ours.
 */
#include "terminate.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "thread.h"
#include "threadstream.h"

#define TT_TERMINATE_GRACE_MS 2000

static PyObject *callback; /* the session's (GIL): stops the measurement */
static int caught;         /* on_sigterm was set as SIGTERM's action */
static int watching;       /* the watcher thread runs in this process */
static int paused;         /* it was ended for a fork, to start again after */
static pthread_t watcher_thread;
static atomic_int quitting; /* the watcher is woken to end (tt_terminate_pause) */
static sem_t signalled;     /* posted by on_sigterm, and to end the watcher */
static sem_t stopping;      /* posted by the stopper once it holds the GIL */

static void on_sigterm(int signo)
{
    (void)signo;
    int saved = errno;
    sem_post(&signalled);
    errno = saved;
}

/* SIGTERM again, now with its default action, to this thread: tracetop's
 * threads block every signal (thread.h), and the program's may block
 * SIGTERM. A thread-directed SIGTERM kills the whole process all the same. */
static void die(void)
{
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    pthread_sigmask(SIG_UNBLOCK, &term, NULL);
    raise(SIGTERM);
    for (;;) pause();
}

static void *stopper(void *unused)
{
    (void)unused;
    PyGILState_Ensure(); /* kept until the end: the program runs no further */
    tt_own_thread();     /* the stop is tracetop's, even where a hook sees every thread (sys.monitoring) */
    sem_post(&stopping);
    if (callback) {
        PyObject *result = PyObject_CallNoArgs(callback);
        if (!result) PyErr_WriteUnraisable(callback);
        Py_XDECREF(result);
    }
    die();
    return NULL;
}

static int start_detached(void *(*body)(void *))
{
    pthread_attr_t attr;
    pthread_t thread;
    if (pthread_attr_init(&attr) != 0) return -1;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = tt_thread_create(&thread, &attr, body, NULL);
    pthread_attr_destroy(&attr);
    return rc == 0 ? 0 : -1;
}

static void *watcher(void *unused)
{
    (void)unused;
    while (sem_wait(&signalled) != 0) continue; /* EINTR */
    /* Woken to end: a SIGTERM that came meanwhile stays posted for the
     * watcher that takes over. */
    if (atomic_load(&quitting)) return NULL;
    if (start_detached(stopper) == 0) {
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += TT_TERMINATE_GRACE_MS / 1000;
        deadline.tv_nsec += (TT_TERMINATE_GRACE_MS % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000L;
        }
        int rc;
        while ((rc = sem_timedwait(&stopping, &deadline)) != 0 && errno == EINTR) continue;
        if (rc == 0) return NULL; /* the stopper ends the process */
    }
    die();
    return NULL;
}

static PyObject *catch_sigterm(PyObject *self, PyObject *function)
{
    (void)self;
    if (!PyCallable_Check(function)) return PyErr_Format(PyExc_TypeError, "catch_sigterm needs a callable");
    /* Python fills its table of handlers from the actions it finds when the
     * signal module starts: it must find the default one, not ours. */
    PyObject *signal_module = PyImport_ImportModule("_signal");
    if (!signal_module) return NULL;
    Py_DECREF(signal_module);
    struct sigaction current;
    if (caught || sigaction(SIGTERM, NULL, &current) != 0 || (current.sa_flags & SA_SIGINFO) ||
        current.sa_handler != SIG_DFL)
        Py_RETURN_FALSE; /* the program's business */
    if (!watching) {
        if (sem_init(&signalled, 0, 0) != 0 || sem_init(&stopping, 0, 0) != 0 ||
            tt_thread_create(&watcher_thread, NULL, watcher, NULL) != 0)
            Py_RETURN_FALSE; /* SIGTERM then cuts the trace, as without tracetop */
        watching = 1;
    }
    struct sigaction action = {.sa_handler = on_sigterm, .sa_flags = SA_RESETHAND | SA_RESTART};
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGTERM, &action, NULL) != 0) Py_RETURN_FALSE;
    Py_XSETREF(callback, Py_NewRef(function));
    caught = 1;
    Py_RETURN_TRUE;
}

/* SIGTERM's default action back, unless the program has set its own since. */
static void release(void)
{
    struct sigaction current;
    if (caught && sigaction(SIGTERM, NULL, &current) == 0 && !(current.sa_flags & SA_SIGINFO) &&
        current.sa_handler == on_sigterm)
        signal(SIGTERM, SIG_DFL);
    caught = 0;
}

/* Ends the watcher thread. A SIGTERM it is handling meanwhile is finished
 * first: the stopper holds the GIL by the time the watcher returns. */
static void end_watcher(void)
{
    atomic_store(&quitting, 1);
    sem_post(&signalled);
    pthread_join(watcher_thread, NULL);
    atomic_store(&quitting, 0);
    watching = 0;
}

static PyObject *release_sigterm(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    release();
    Py_CLEAR(callback);
    paused = 0; /* stopped between a fork and its resume: the watcher stays ended */
    /* No thread of tracetop's is left behind once a measurement stops. */
    if (watching) {
        Py_BEGIN_ALLOW_THREADS /* a stopper may be waiting for the GIL */
        end_watcher();
        Py_END_ALLOW_THREADS
    }
    Py_RETURN_NONE;
}

void tt_terminate_forked(void)
{
    /* No watcher in the child: until it is caught again, SIGTERM must kill.
     * The callback's reference stays with the parent's copy of it: the
     * child may hold no GIL here to drop it. */
    release();
    callback = NULL;
    watching = paused = 0;
}

int tt_terminate_pause(void)
{
    if (!watching) return 0;
    end_watcher();
    paused = 1;
    return 1;
}

void tt_terminate_resume(void)
{
    if (!paused) return;
    paused = 0;
    /* Should it not start, SIGTERM must not be caught with nobody to see it. */
    if (tt_thread_create(&watcher_thread, NULL, watcher, NULL) == 0)
        watching = 1;
    else
        release();
}

static PyMethodDef terminate_methods[] = {
    {"catch_sigterm", catch_sigterm, METH_O,
     "catch_sigterm(callback)\n--\n\nOn SIGTERM, call callback() (with the GIL, in a thread of its own), then\n"
     "die by SIGTERM. False, and nothing done, when SIGTERM does not have its\n"
     "default action (the program handles it) or it cannot be caught."},
    {"release_sigterm", release_sigterm, METH_NOARGS, "SIGTERM's default action back; forget the callback."},
    {NULL, NULL, 0, NULL},
};

int tt_ext_add_terminate(PyObject *module) { return PyModule_AddFunctions(module, terminate_methods); }

/* threadstream.c -- each thread's stream in the active session (see
 * threadstream.h): made and named at the thread's first event, kept in
 * tt_tls_stream, closed by the destructor of stream_key as the thread ends.
 */
#include "threadstream.h"

#include <pthread.h>

#include "attach.h"
#include "objects.h"
#include "park.h"
#include "threadwatch.h"

/* Its chunk is never written: zero, so its `used` is never below the
 * stream's fast_used_limit (0). Untouched, it costs address space only. */
static tt_chunk no_chunk;
tt_stream tt_no_stream = {.chunk = &no_chunk, .epoch = UINT64_MAX};
/* initial-exec: the extension is loaded at import, and this spares every
 * event a call to __tls_get_addr. */
__thread tt_stream *tt_tls_stream __attribute__((tls_model("initial-exec"))) = &tt_no_stream;

static pthread_key_t stream_key;

/* The thread's tt_tls_fast ends with it: no switch may store there. Its
 * stream is the writer's to free from now on (session.h): nothing of the
 * thread points to it any more. */
static void on_thread_exit(void *stream)
{
    tt_stream *s = stream;
    tt_session_lock_streams();
    s->fast_slot = NULL;
    tt_session_unlock_streams();
    atomic_store_explicit(&tt_tls_fast, &tt_no_stream, memory_order_relaxed);
    tt_tls_stream = &tt_no_stream;
    tt_session_thread_ended(s);
}

int tt_thread_streams_init(void)
{
    if (pthread_key_create(&stream_key, on_thread_exit) != 0) {
        PyErr_SetString(PyExc_RuntimeError, "tracetop: cannot create a thread-local key");
        return -1;
    }
    return 0;
}

/* Whether the calling thread is the main one: its thread state is the
 * interpreter's oldest, the last of its list (a new one goes first). */
static int in_main_thread(void)
{
    PyThreadState *oldest = PyThreadState_Get(), *next;
    while ((next = PyThreadState_Next(oldest))) oldest = next;
    return oldest == PyThreadState_Get();
}

/* The Python name of the calling thread, without side effects: looked up in
 * threading's table rather than through current_thread(), which would make
 * a dummy Thread for threads that threading did not start. Those, and the
 * threads started with _thread before the program imports threading, are
 * named by their native id. */
static PyObject *thread_name(void)
{
    PyObject *threading = tt_imported_threading();
    if (!threading && in_main_thread()) return PyUnicode_FromString("MainThread");
    PyObject *name = NULL;
    if (threading) {
        PyObject *table = PyObject_GetAttrString(threading, "_active");
        PyObject *ident = PyLong_FromUnsignedLong(PyThread_get_thread_ident());
        PyObject *thread = table && ident && PyDict_Check(table) ? PyDict_GetItemWithError(table, ident) : NULL;
        if (thread) name = PyObject_GetAttrString(thread, "name");
        Py_XDECREF(ident);
        Py_XDECREF(table);
        Py_DECREF(threading);
        PyErr_Clear();
    }
    if (name && PyUnicode_Check(name)) return name;
    Py_XDECREF(name);
    return PyUnicode_FromFormat("Thread-%lu", PyThread_get_thread_native_id());
}

/* Set on tracetop's own threads (tt_own_thread): the writer thread as it
 * switches the measurement (measurement.c: control), whose Python code is
 * tracetop's, never recorded. */
static __thread int own_thread;

void tt_own_thread(void) { own_thread = 1; }

/* Set while the calling thread's stream is being made: looking its name up
 * may run Python code (a property), whose events are not recorded, when
 * the hook is not already kept out of them (it is inside a hook call). */
static __thread int making_stream;

tt_stream *tt_thread_stream_slow(void)
{
    if (!tt_measurement.session || own_thread || making_stream) return NULL;
    tt_stream *current = tt_tls_stream;
    if (current->session == tt_measurement.session) {
        tt_park_resync(current);
        tt_fast_open(current);
        return current;
    }
    making_stream = 1;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    int own = tt_objects_own_begin();
    PyObject *name = thread_name();
    Py_ssize_t len = 0;
    const char *utf8 = name ? PyUnicode_AsUTF8AndSize(name, &len) : NULL;
    tt_open_calls open;
    int opened = tt_attach_open_calls(PyThread_get_thread_ident(), &open);
    tt_stream *s = tt_session_new_stream_open(tt_measurement.session, PyThread_get_thread_native_id(), utf8 ? utf8 : "",
                                              (size_t)len, opened ? &open : NULL);
    Py_XDECREF(name);
    tt_objects_own_end(own);
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
    making_stream = 0;
    if (!s) return NULL;
    /* What tt_gil_holder returns while this thread holds the GIL. */
    atomic_store_explicit(&s->gil_key, (const void *)PyThreadState_Get(), memory_order_relaxed);
    tt_tls_stream = s;
    pthread_setspecific(stream_key, s);
    tt_fast_open(s);
    return s;
}

tt_stream *tt_own_thread_stream(void)
{
    if (!tt_measurement.session || !own_thread) return NULL;
    static const char name[] = "tracetop";
    return tt_session_new_stream(tt_measurement.session, PyThread_get_thread_native_id(), name, sizeof name - 1);
}

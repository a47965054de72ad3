/* mpi.c -- recording MPI calls: loads libtracetop_mpi.so, the MPI wrappers
 * (src/mpi/), and gives them the hooks that write their records into the
 * calling thread's stream (see src/mpi/tracetop_mpi.h).
 *
 * The wrappers run on whatever thread calls MPI, mostly without the GIL,
 * and a stop may close that thread's stream meanwhile (from another
 * thread, which sets tt_measurement.session to NULL first). So a thread
 * records only while it holds the session's stream lock and finds its
 * stream open and of the running session; the lock is held for a few records at a time,
 * never across an MPI call. Definitions go the same way, as a stop frees
 * the session only after taking that lock.
 */
#include "ext.h"

#include <dlfcn.h>

#include "measurement.h"
#include "mpi_records.h"
#include "threadstream.h"
#include "tracetop_mpi.h"

static void *library; /* the wrappers, loaded once and never unloaded */

static uint32_t region(const char *name)
{
    uint32_t string = tt_registry_string(&tt_definitions, name, strlen(name));
    uint32_t file = tt_registry_string(&tt_definitions, "", 0);
    if (string == TT_NO_ID || file == TT_NO_ID) return TT_STACK_SKIP;
    uint32_t id = tt_registry_named_region(&tt_definitions, string, file, 0, TT_REGION_MPI);
    return id == TT_NO_ID ? TT_STACK_SKIP : id;
}

static int begin(void)
{
    tt_session_lock_streams();
    tt_stream *s = tt_tls_stream;
    tt_session *active = tt_measurement.session;
    if (active && s->session == active && atomic_load_explicit(&s->chunk, memory_order_relaxed)) return 1;
    tt_session_unlock_streams();
    return 0;
}

static void end(void) { tt_session_unlock_streams(); }

static void enter(uint32_t id)
{
    if (id == TT_STACK_SKIP)
        tt_stream_skip(tt_tls_stream, TT_STACK_SKIP);
    else
        tt_stream_enter(tt_tls_stream, tt_clock_now(), id);
}

static void leave(void) { tt_stream_leave(tt_tls_stream, tt_clock_now()); }

static void message(uint8_t tag, uint32_t peer, uint32_t msg_tag, uint32_t comm, uint64_t bytes, uint64_t request)
{
    tt_stream_mpi_message(tt_tls_stream, tt_clock_now(), tag, peer, msg_tag, comm, bytes, request);
}

static void request(uint8_t tag, uint64_t id) { tt_stream_mpi_request(tt_tls_stream, tt_clock_now(), tag, id); }

static void collective_begin(void) { tt_stream_plain(tt_tls_stream, tt_clock_now(), TT_EV_MPI_COLLECTIVE_BEGIN); }

static void collective_end(uint8_t op, uint32_t comm, uint32_t root, uint64_t sent, uint64_t received)
{
    tt_stream_mpi_collective_end(tt_tls_stream, tt_clock_now(), op, comm, root, sent, received);
}

static void define_rank(uint32_t rank, uint32_t size)
{
    tt_session_lock_streams();
    if (tt_measurement.session) tt_session_define_mpi_rank(tt_measurement.session, rank, size);
    tt_session_unlock_streams();
}

static void define_comm(uint32_t id, uint8_t kind, uint32_t parent, uint64_t seq, uint64_t size,
                        const uint32_t *members, size_t listed)
{
    tt_session_lock_streams();
    /* Out of memory, the members go unlisted rather than the communicator
     * undefined: its events refer to it. */
    tt_session *session = tt_measurement.session;
    if (session && tt_session_define_mpi_comm(session, id, kind, parent, seq, size, members, listed) != 0)
        tt_session_define_mpi_comm(session, id, kind, parent, seq, size, NULL, 0);
    tt_session_unlock_streams();
}

static const tt_mpi_hooks hooks = {
    .abi = TT_MPI_ABI_VERSION,
    .region = region,
    .begin = begin,
    .end = end,
    .enter = enter,
    .leave = leave,
    .message = message,
    .request = request,
    .collective_begin = collective_begin,
    .collective_end = collective_end,
    .define_rank = define_rank,
    .define_comm = define_comm,
};

static PyObject *mpi_attach(PyObject *self, PyObject *arg)
{
    (void)self;
    PyObject *path;
    if (!PyUnicode_FSConverter(arg, &path)) return NULL;
    if (!tt_measurement.session) {
        Py_DECREF(path);
        PyErr_SetString(tt_TraceError, "MPI calls can be recorded only while measuring");
        return NULL;
    }
    /* RTLD_GLOBAL: the wrappers must come before the MPI library in the
     * lookup of every MPI symbol the program's modules will bind. */
    if (!library && !(library = dlopen(PyBytes_AS_STRING(path), RTLD_NOW | RTLD_GLOBAL))) {
        PyErr_Format(tt_TraceError, "cannot load the MPI wrappers: %s", dlerror());
        Py_DECREF(path);
        return NULL;
    }
    Py_DECREF(path);
    tt_mpi_attach_fn attach = (tt_mpi_attach_fn)dlsym(library, TT_MPI_ATTACH);
    if (!attach || attach(&hooks) != 0) {
        PyErr_SetString(tt_TraceError, "the MPI wrappers do not belong to this tracetop");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef mpi_methods[] = {
    {"mpi_attach", mpi_attach, METH_O,
     "mpi_attach(library_path)\n--\n\nRecord the program's MPI calls into the running measurement, through the\n"
     "MPI wrappers at library_path (loaded before the program loads MPI)."},
    {NULL, NULL, 0, NULL},
};

int tt_ext_add_mpi(PyObject *module) { return PyModule_AddFunctions(module, mpi_methods); }

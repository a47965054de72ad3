/* ext.h -- what every part of the CPython extension `tracetop._tracetop`
 * shares: the module's parts, its exception, and the headers each needs.
 * module.c owns the module; each other file adds its functions or types
 * through one tt_ext_add_* call made from the module's init. What one part
 * offers the others is declared in its own header (measurement.h,
 * fastpath.h, threadstream.h, ...).
 *
 * Everything runs with the GIL held unless it says otherwise; the GIL
 * is what serialises the registry and stream creation.
 *
 * The extension's headers make their declarations inside
 * `#pragma GCC visibility push(hidden)` (meson builds the extension with
 * hidden visibility): their variables are then read without a detour
 * through the global offset table, as the hooks do on every event.
 */
#ifndef TRACETOP_EXT_H
#define TRACETOP_EXT_H

#include "pycompat.h"

#include "clock.h"
#include "error.h"
#include "ptrmap.h"
#include "registry.h"
#include "session.h"
#include "stream.h"

#pragma GCC visibility push(hidden)

/* tracetop._tracetop.TraceError: every failure the core reports reaches
 * Python as this exception, carrying the core's one-line message. */
extern PyObject *tt_TraceError;

/* progress.c: a long piece of work said on stderr, a line a second once it
 * has taken `after` seconds: "tracetop: WHAT: ... (N s)". Without the GIL. */
typedef struct tt_ext_progress {
    const char *what;
    double after, started, last;
} tt_ext_progress;
void tt_ext_progress_start(tt_ext_progress *p, const char *what, double after);
void tt_ext_progress_say(tt_ext_progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Raises TraceError with the message in err; returns NULL for `return`. */
PyObject *tt_raise(const tt_error *err);

int tt_ext_add_hooks(PyObject *module);  /* measurement.c: start, stop, switches; threadhook.c, program.c */
int tt_ext_add_program(PyObject *module); /* program.c: compile_program, run_code */
int tt_ext_add_api(PyObject *module);    /* api.c: regions, parameters, counters */
int tt_ext_add_reader(PyObject *module); /* readerobj.c: Trace, profile, summary */
int tt_ext_add_inline(PyObject *module); /* inline.c: overview, usage sampler (Jupyter) */
int tt_ext_add_convert(PyObject *module); /* convertobj.c: convert, FORMATS */
int tt_ext_add_live(PyObject *module);   /* liveobj.c: live_control */
int tt_ext_add_livewatch(PyObject *module); /* livewatchobj.c: LiveWatch, the live viewer's reader */
int tt_ext_add_index(PyObject *module);  /* lodobj.c: Index, the viewer's level-of-detail index */
int tt_ext_add_mpi_view(PyObject *module); /* mpiviewobj.c: MpiView, the viewer's communication view */
int tt_ext_add_fork(PyObject *module);   /* fork.c: measuring on in a forked child */
int tt_ext_add_terminate(PyObject *module); /* terminate.c: SIGTERM completes the trace */
int tt_ext_add_mpi(PyObject *module);    /* mpi.c: MPI calls recorded */
int tt_ext_add_attach(PyObject *module); /* attach.c: the end of an attached measurement */
int tt_ext_add_objects(PyObject *module); /* objects.c: objects counted */
int tt_ext_add_gc(PyObject *module);     /* gc.c: garbage collections recorded */
int tt_ext_add_threadwatch(PyObject *module); /* threadwatch.c: threading, imported when the program does */
int tt_ext_add_tasks(PyObject *module);  /* tasksobj.c: TaskLanes, asyncio tasks as lanes */
int tt_ext_add_task_recording(PyObject *module); /* tasks.c: tasks_unavailable */

/* pyregions.c: the code objects' extra slot taken and tracetop's own
 * functions noted, before any other part is added. */
int tt_pyregions_init(PyObject *module);

/* ---- compatibility ---- */

#if PY_VERSION_HEX < 0x030A0000
static inline PyObject *tt_new_ref(PyObject *o)
{
    Py_XINCREF(o);
    return o;
}
#define Py_NewRef(o) tt_new_ref((PyObject *)(o))
#define Py_XNewRef(o) tt_new_ref((PyObject *)(o))
#endif

/* PyModule_AddObjectRef arrived in 3.10. */
static inline int tt_module_add(PyObject *module, const char *name, PyObject *value)
{
#if PY_VERSION_HEX >= 0x030A0000
    return PyModule_AddObjectRef(module, name, value);
#else
    Py_XINCREF(value);
    if (PyModule_AddObject(module, name, value) < 0) {
        Py_XDECREF(value);
        return -1;
    }
    return 0;
#endif
}

#pragma GCC visibility pop

#endif

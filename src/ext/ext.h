/* ext.h -- what every part of the CPython extension `tracetop._tracetop`
 * shares: the module's parts and the headers each needs (its exception,
 * TraceError, is pyshared.h's, shared with tracetop._reader).
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
#include "pyshared.h"

#include "clock.h"
#include "error.h"
#include "ptrmap.h"
#include "registry.h"
#include "session.h"
#include "stream.h"

#pragma GCC visibility push(hidden)

int tt_ext_add_hooks(PyObject *module);          /* measurement.c: start, stop, switches; threadhook.c, program.c */
int tt_ext_add_program(PyObject *module);        /* program.c: compile_program, run_code */
int tt_ext_add_api(PyObject *module);            /* api.c: regions, parameters, counters */
int tt_ext_add_inline(PyObject *module);         /* inline.c: the CPU and memory sampler (Jupyter) */
int tt_ext_add_fork(PyObject *module);           /* fork.c: measuring on in a forked child */
int tt_ext_add_terminate(PyObject *module);      /* terminate.c: SIGTERM completes the trace */
int tt_ext_add_last_thread(PyObject *module);    /* lastthread.c: a child forked from a thread ends with it */
int tt_ext_add_mpi(PyObject *module);            /* mpi.c: MPI calls recorded */
int tt_ext_add_attach(PyObject *module);         /* attach.c: the end of an attached measurement */
int tt_ext_add_objects(PyObject *module);        /* objects.c: objects counted */
int tt_ext_add_gc(PyObject *module);             /* gc.c: garbage collections recorded */
int tt_ext_add_threadwatch(PyObject *module);    /* threadwatch.c: threading, imported when the program does */
int tt_ext_add_task_recording(PyObject *module); /* tasks.c: tasks_unavailable */

/* pyregions.c: the code objects' extra slot taken and tracetop's own
 * functions noted, before any other part is added. */
int tt_pyregions_init(PyObject *module);

#pragma GCC visibility pop

#endif

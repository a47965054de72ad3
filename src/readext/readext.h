/* readext.h -- what the parts of the CPython extension `tracetop._reader`
 * share. module.c owns the module; each other file adds its functions or
 * types through one tt_readext_add_* call made from the module's init.
 *
 * This extension reads experiments: traces (reader.h), their analyses,
 * the viewer's index, conversions, and live channels from outside the
 * measured process. The measured process never loads it while the program
 * runs; it links none of the recording code (src/record) either.
 */
#ifndef TRACETOP_READEXT_H
#define TRACETOP_READEXT_H

#include <string.h>

#include "format.h"
#include "pyshared.h"

#pragma GCC visibility push(hidden)

/* progress.c: a long piece of work said on stderr, a line a second once it
 * has taken `after` seconds: "tracetop: WHAT: ... (N s)". Without the GIL. */
typedef struct tt_readext_progress {
    const char *what;
    double after, started, last;
} tt_readext_progress;
void tt_readext_progress_start(tt_readext_progress *p, const char *what, double after);
void tt_readext_progress_say(tt_readext_progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A C string of the trace as str, its bad bytes replaced: names come from
 * the measured program and a damaged trace alike. */
static inline PyObject *tt_readext_text(const char *s)
{
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

/* A region's kind as Python sees it: format.h's name, "unknown" for the
 * reader's "<undefined>" placeholder. */
static inline const char *tt_readext_region_kind(uint8_t kind)
{
    const char *name = tt_region_kind_name(kind);
    return name ? name : "unknown";
}

int tt_readext_add_reader(PyObject *module);    /* readerobj.c: Trace, profile, summary, score */
int tt_readext_add_overview(PyObject *module);  /* overviewobj.c: overview (Jupyter) */
int tt_readext_add_tasks(PyObject *module);     /* tasksobj.c: TaskLanes, asyncio tasks as lanes */
int tt_readext_add_convert(PyObject *module);   /* convertobj.c: convert, FORMATS */
int tt_readext_add_index(PyObject *module);     /* lodobj.c: Index, the viewer's level-of-detail index */
int tt_readext_add_mpi_view(PyObject *module);  /* mpiviewobj.c: MpiView, the viewer's communication view */
int tt_readext_add_live(PyObject *module);      /* liveobj.c: live_control (`tracetop ctl`) */
int tt_readext_add_livewatch(PyObject *module); /* livewatchobj.c: LiveWatch, the live viewer's reader */

#pragma GCC visibility pop

#endif

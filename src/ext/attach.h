/* attach.h -- calls running when tracetop attached (attach.c): noted as the
 * measurement starts, handed to each thread's stream as it is made.
 */
#ifndef TRACETOP_ATTACH_H
#define TRACETOP_ATTACH_H

#include "ext.h"

#pragma GCC visibility push(hidden)

/* Notes the Python calls every other thread is in, for a measurement that
 * starts now (tt_measurement.session set, the hook just put on every
 * thread, the GIL held since). -1 with an exception. */
int tt_attach_capture(void);
/* The calls noted for the calling thread, whose ident is `ident`
 * (PyThread_get_thread_ident) and whose outermost frame is the one noted,
 * once: 1 with *out set (valid until tt_attach_forget), 0 when none. */
int tt_attach_open_calls(unsigned long ident, tt_open_calls *out);
void tt_attach_forget(void);
/* Wakes the attached measurement's attach_wait: from the writer thread. */
void tt_attach_request_detach(void);

#pragma GCC visibility pop

#endif

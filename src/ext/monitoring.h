/* monitoring.h -- the `monitoring` instrumenter: sys.monitoring's callbacks
 * (monitoring.c). On a Python without sys.monitoring
 * (pycompat.h: TT_PYTHON_HAS_MONITORING) tt_monitoring_start fails and the
 * others do nothing.
 */
#ifndef TRACETOP_MONITORING_H
#define TRACETOP_MONITORING_H

#include "ext.h"

#pragma GCC visibility push(hidden)

/* Takes a tool id and registers the callbacks: 0, or -1 with an exception. */
int tt_monitoring_start(void);
void tt_monitoring_stop(void);
/* The program has imported threading since tt_monitoring_start. */
void tt_monitoring_threading_imported(void);
/* Objects counting went on or off: the callbacks follow (monitoring.c). */
void tt_monitoring_objects_switched(void);

#pragma GCC visibility pop

#endif

/* threadwatch.h -- threading, seen as the program imports it
 * (threadwatch.c): tracetop never imports it itself.
 */
#ifndef TRACETOP_THREADWATCH_H
#define TRACETOP_THREADWATCH_H

#include "ext.h"

#pragma GCC visibility push(hidden)

/* The threading module if the program has imported it (new reference),
 * else NULL, without an exception either way. */
PyObject *tt_imported_threading(void);

#pragma GCC visibility pop

#endif

/* requicken.h -- CPython 3.12's superinstructions given back to code that
 * sys.monitoring instrumented.
 *
 * CPython 3.12 quickens a code object as it is made: a LOAD_FAST followed
 * by a LOAD_FAST becomes one LOAD_FAST__LOAD_FAST (and so four other
 * pairs of LOAD_FAST, STORE_FAST and LOAD_CONST), which runs both. When it
 * instruments a code object for sys.monitoring, whatever the events, it
 * turns every such pair back into two instructions, for good: the code
 * runs slower for as long as it lives, whether or not the tool that asked
 * for the events is still there. A loop of a few arithmetic lines between
 * calls pays it on every turn: on bench's threads workload it is 811 of
 * the 1,148 instructions per event that an empty sys.monitoring tool with
 * tracetop's events costs over the plain program, and cProfile and the
 * profile hook's floor pay it too (bench/README.md: "3.12: the
 * superinstructions sys.monitoring's instrumenting takes away").
 *
 * tt_requicken puts the pairs back where CPython's own quickening put them,
 * on the instructions that no tool instruments (an instrumented one has an
 * INSTRUMENTED_ opcode, and is left as it is): the code runs as it would
 * without any tool, and every event still fires. The next time CPython
 * instruments the code object (another tool's events, tracetop's stop) it
 * takes them back first, as it always does.
 *
 * Only 3.12 does this: 3.13's compiler writes its superinstructions, which
 * instrumenting keeps. Before 3.12 and after it, tt_requicken does nothing.
 */
#ifndef TRACETOP_REQUICKEN_H
#define TRACETOP_REQUICKEN_H

#include "pycompat.h"

/* With the GIL held, on a code object at its first sight by a hook
 * (pyregions.c; instrumented by then, whether through tracetop's
 * sys.monitoring callbacks or the profile hook, which 3.12 runs on
 * sys.monitoring too): gives back its superinstructions. Never fails: a
 * code object it cannot read is left as it is, without an exception. */
void tt_requicken(PyObject *code);

#endif

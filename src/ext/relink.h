/* relink.h -- points libpython's own calls of one of its functions at
 * another function: a wedge, for what CPython gives no hook for.
 *
 * A shared libpython built, as CPython is by default, with semantic
 * interposition calls its own exported functions through its global offset
 * table; rewriting the table's entry for a function redirects every one of
 * those calls (not calls from extension modules, which have their own
 * tables). Where libpython is linked into the python executable, its calls
 * are direct and nothing can be redirected.
 *
 * Contract: tt_relink(symbol, replacement, &original) rewrites every entry
 * of libpython's table that binds `symbol` to `replacement`, and gives what
 * the first held (the function itself); 0, or -1 when libpython has no such
 * entry (static build, another platform than x86-64 Linux) or it cannot be
 * written. tt_relink(symbol, original, NULL) puts the function back. The
 * caller holds the GIL, so no other thread runs Python meanwhile; the pages
 * of the table stay writable afterwards.
 */
#ifndef TRACETOP_RELINK_H
#define TRACETOP_RELINK_H

int tt_relink(const char *symbol, void *replacement, void **original);

#endif

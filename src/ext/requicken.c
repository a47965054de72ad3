/* requicken.c -- 3.12's superinstructions given back (see requicken.h).
 *
 * The pairs are found as CPython 3.12's _PyCode_Quicken finds them: two
 * instructions next to each other, by their base opcodes. co_code gives
 * every instruction's base opcode (instrumentation and specialisation
 * taken off, inline caches as CACHE, 0, which no pair has), so the walk
 * needs no table of CPython's. The first of a pair gets the
 * superinstruction's opcode only when both still run as plain
 * instructions in the code as it runs: the superinstruction runs the
 * second from its oparg alone, so an instrumented second one (a LINE or
 * INSTRUCTION event of another tool) would be skipped, as CPython's
 * instrumenting knows.
 */
#include "requicken.h"

#if TT_PYTHON_UNQUICKENS
#include <opcode.h>

/* The superinstruction CPython 3.12 makes of base opcodes `first` and
 * `second`, or 0. */
static int super_of(int first, int second)
{
    switch (first << 8 | second) {
    case LOAD_CONST << 8 | LOAD_FAST:
        return LOAD_CONST__LOAD_FAST;
    case LOAD_FAST << 8 | LOAD_CONST:
        return LOAD_FAST__LOAD_CONST;
    case LOAD_FAST << 8 | LOAD_FAST:
        return LOAD_FAST__LOAD_FAST;
    case STORE_FAST << 8 | LOAD_FAST:
        return STORE_FAST__LOAD_FAST;
    case STORE_FAST << 8 | STORE_FAST:
        return STORE_FAST__STORE_FAST;
    default:
        return 0;
    }
}

/* Whether `live`, an opcode in the running code, runs as its base opcode
 * `base` (itself, or a superinstruction that starts with it). */
static int runs_as(int live, int base)
{
    if (live == base) return 1;
    switch (live) {
    case LOAD_FAST__LOAD_FAST:
    case LOAD_FAST__LOAD_CONST:
        return base == LOAD_FAST;
    case STORE_FAST__LOAD_FAST:
    case STORE_FAST__STORE_FAST:
        return base == STORE_FAST;
    case LOAD_CONST__LOAD_FAST:
        return base == LOAD_CONST;
    default:
        return 0;
    }
}

void tt_requicken(PyObject *code)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyObject *bytes = PyCode_GetCode((PyCodeObject *)code);
    if (bytes && PyBytes_Check(bytes)) {
        const _Py_CODEUNIT *base = (const _Py_CODEUNIT *)PyBytes_AS_STRING(bytes);
        Py_ssize_t n = PyBytes_GET_SIZE(bytes) / (Py_ssize_t)sizeof(_Py_CODEUNIT);
        _Py_CODEUNIT *live = _PyCode_CODE((PyCodeObject *)code);
        for (Py_ssize_t i = 1; i < n && i < Py_SIZE(code); i++) {
            int super = super_of(base[i - 1].op.code, base[i].op.code);
            if (super && runs_as(live[i - 1].op.code, base[i - 1].op.code) && runs_as(live[i].op.code, base[i].op.code))
                live[i - 1].op.code = (uint8_t)super;
        }
    }
    Py_XDECREF(bytes);
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
}

#else

void tt_requicken(PyObject *code) { (void)code; }

#endif

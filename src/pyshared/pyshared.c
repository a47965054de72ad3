/* pyshared.c -- TraceError and its raising, for either extension (pyshared.h). */
#include "pyshared.h"

PyObject *tt_TraceError;

PyObject *tt_raise(const tt_error *err)
{
    PyErr_SetString(tt_TraceError, err->message);
    return NULL;
}

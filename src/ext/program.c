/* program.c -- the measured program's code compiled and run:
 * compile_program, run_code and report_uncaught, which tracetop/program.py
 * and tracetop/runner.py use in place of compile(), exec() and
 * sys.excepthook(), so that starting the program costs what `python
 * script.py` costs, and running it and reporting how it failed add no
 * event of their own.
 */
#include "ext.h"

static PyObject *run_code(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *code, *globals;
    if (!PyArg_ParseTuple(args, "O!O!:run_code", &PyCode_Type, &code, &PyDict_Type, &globals)) return NULL;
    return PyEval_EvalCode(code, globals, globals);
}

/* compile(source, filename, "exec", dont_inherit=True) without builtins.compile, which first asks whether the
 * source is an AST and so makes the ast module's types: 9 million instructions on 3.11, paid by every
 * `tracetop run` (`python script.py` compiles without them). str is compiled as UTF-8 with coding cookies
 * ignored, bytes as a file's contents; a source holding NUL goes to builtins.compile, for its error. */
static PyObject *compile_program(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *source, *filename;
    if (!PyArg_ParseTuple(args, "OU:compile_program", &source, &filename)) return NULL;
    PyCompilerFlags flags = {.cf_flags = 0, .cf_feature_version = PY_MINOR_VERSION};
    const char *text = NULL;
    Py_ssize_t len = 0;
    if (PyUnicode_Check(source)) {
        text = PyUnicode_AsUTF8AndSize(source, &len);
        flags.cf_flags = PyCF_IGNORE_COOKIE | PyCF_SOURCE_IS_UTF8;
    } else if (PyBytes_Check(source)) {
        text = PyBytes_AS_STRING(source);
        len = PyBytes_GET_SIZE(source);
    }
    if (!text) {
        if (PyErr_Occurred()) return NULL;
        PyErr_SetString(PyExc_TypeError, "compile_program() takes str or bytes");
        return NULL;
    }
    if ((size_t)len != strlen(text)) {
        PyObject *compile = PyDict_GetItemString(PyEval_GetBuiltins(), "compile");
        return compile ? PyObject_CallFunction(compile, "OOsii", source, filename, "exec", 0, 1) : NULL;
    }
    return Py_CompileStringObject(text, filename, Py_file_input, &flags, -1);
}

/* report_uncaught(type, value, traceback): what the interpreter does with an exception that ended the
 * program (pythonrun.c's _PyErr_PrintEx): sys.excepthook called from C, so that the call is no event, as it is
 * none without tracetop; a hook of the program's own, a Python function, is recorded as the call it is. */
static PyObject *report_uncaught(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *type, *value, *traceback;
    if (!PyArg_ParseTuple(args, "OOO:report_uncaught", &type, &value, &traceback)) return NULL;
    PyObject *hook = PySys_GetObject("excepthook"); /* borrowed */
    if (!hook || hook == Py_None) {
        PySys_WriteStderr("sys.excepthook is missing\n");
        PyErr_Display(type, value, traceback);
        Py_RETURN_NONE;
    }
    PyObject *result = PyObject_CallFunctionObjArgs(hook, type, value, traceback, NULL);
    if (!result) {
        PyObject *failed_type, *failure, *failure_traceback;
        PyErr_Fetch(&failed_type, &failure, &failure_traceback);
        PyErr_NormalizeException(&failed_type, &failure, &failure_traceback);
        PySys_WriteStderr("Error in sys.excepthook:\n");
        PyErr_Display(failed_type, failure, failure_traceback);
        PySys_WriteStderr("\nOriginal exception was:\n");
        PyErr_Display(type, value, traceback);
        Py_XDECREF(failed_type);
        Py_XDECREF(failure);
        Py_XDECREF(failure_traceback);
    }
    Py_XDECREF(result);
    Py_RETURN_NONE;
}

static PyMethodDef program_methods[] = {
    {"run_code", run_code, METH_VARARGS, "run_code(code, globals)\n--\n\nexec() without an event of its own."},
    {"report_uncaught", report_uncaught, METH_VARARGS,
     "report_uncaught(type, value, traceback)\n--\n\nsys.excepthook(type, value, traceback) as the interpreter "
     "calls it, without an event of its own."},
    {"compile_program", compile_program, METH_VARARGS,
     "compile_program(source, filename)\n--\n\ncompile(source, filename, 'exec', dont_inherit=True), lighter at "
     "start-up."},
    {NULL, NULL, 0, NULL},
};

int tt_ext_add_program(PyObject *module) { return PyModule_AddFunctions(module, program_methods); }

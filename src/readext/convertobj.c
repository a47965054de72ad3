/* convertobj.c -- the converters (export.h) and the scoring of traces
 * (score.h) for Python: convert(), FORMATS, default_name(), score(). The
 * work runs without the GIL. */
#include "readext.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "export.h"
#include "file.h"
#include "filter.h"
#include "reader.h"
#include "score.h"

static PyObject *problem_list(char **problems, size_t count)
{
    PyObject *list = PyList_New((Py_ssize_t)count);
    for (size_t i = 0; list && i < count; i++) {
        PyObject *line = tt_readext_text(problems[i]);
        if (!line)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, (Py_ssize_t)i, line);
    }
    return list;
}

/* The bytes of the stream files of an experiment's trace (trace/<pid>/<n>.tts): what a conversion reads. */
static uint64_t trace_bytes(const char *experiment_dir)
{
    uint64_t total = 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/trace", experiment_dir);
    DIR *processes = opendir(path);
    struct dirent *p, *s;
    while (processes && (p = readdir(processes))) {
        if (p->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/trace/%s", experiment_dir, p->d_name);
        DIR *streams = opendir(path);
        while (streams && (s = readdir(streams))) {
            struct stat st;
            char file[4352];
            snprintf(file, sizeof file, "%s/%s", path, s->d_name);
            if (s->d_name[0] != '.' && stat(file, &st) == 0 && S_ISREG(st.st_mode)) total += (uint64_t)st.st_size;
        }
        if (streams) closedir(streams);
    }
    if (processes) closedir(processes);
    return total;
}

/* A conversion or a scoring as it reads the trace, said as the share of its bytes read. */
typedef struct reading {
    tt_readext_progress line;
    uint64_t total;
} reading;

static void say_read(void *ctx, uint64_t bytes)
{
    reading *c = ctx;
    if (c->total)
        tt_readext_progress_say(&c->line, "%.0f%% of the trace read", 100.0 * (double)bytes / (double)c->total);
}

/* Starts the reading of the trace of experiment_dir, said as `what` once it
 * takes `after` seconds (None: never): 0, or -1 with a Python error when
 * `after` is no number. */
static int reading_start(reading *r, const char *what, const char *experiment_dir, PyObject *after)
{
    double seconds = after == Py_None ? 0 : PyFloat_AsDouble(after);
    if (seconds == -1 && PyErr_Occurred()) return -1;
    r->total = trace_bytes(experiment_dir);
    tt_readext_progress_start(&r->line, what, seconds);
    return 0;
}

static PyObject *convert(PyObject *module, PyObject *args, PyObject *kwds)
{
    (void)module;
    static char *kwlist[] = {"experiment_dir", "format", "path", "thread", "start", "stop", "progress", "filter", NULL};
    PyObject *dir, *path, *after = Py_None;
    const char *format, *thread = NULL, *filter_path = NULL;
    unsigned long long start = 0, stop = UINT64_MAX;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&sO&|zKKOz:convert", kwlist, PyUnicode_FSConverter, &dir, &format,
                                     PyUnicode_FSConverter, &path, &thread, &start, &stop, &after, &filter_path))
        return NULL;
    char what[300];
    snprintf(what, sizeof what, "converting %s to %s", PyBytes_AS_STRING(dir), format);
    reading said;
    if (reading_start(&said, what, PyBytes_AS_STRING(dir), after) != 0) {
        Py_DECREF(dir);
        Py_DECREF(path);
        return NULL;
    }
    tt_read_progress progress = {say_read, &said, 0};
    tt_trace *trace = NULL;
    tt_filter *filter = NULL;
    tt_export_result result;
    tt_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = filter_path ? tt_filter_load(filter_path, &filter, &err) : 0;
    if (rc == 0) rc = tt_trace_open(PyBytes_AS_STRING(dir), &trace, &err);
    if (rc == 0 && thread && tt_trace_keep_thread(trace, thread) == 0)
        rc = tt_fail(&err, "no thread %s in %s (a thread's name or its native id)", thread, PyBytes_AS_STRING(dir));
    if (rc == 0) tt_trace_keep_range(trace, start, stop);
    if (rc == 0 && filter && tt_trace_keep_regions(trace, filter, &err) < 0) rc = -1;
    if (rc == 0 && after != Py_None) tt_trace_set_progress(trace, &progress);
    if (rc == 0) rc = tt_export(trace, format, PyBytes_AS_STRING(path), &result, &err);
    tt_trace_close(trace);
    tt_filter_free(filter);
    Py_END_ALLOW_THREADS
    Py_DECREF(dir);
    Py_DECREF(path);
    if (rc != 0) return tt_raise(&err);
    PyObject *problems = problem_list(result.problems, result.problem_count);
    PyObject *out = Py_BuildValue("{s:K,s:K,s:N,s:N}", "events", (unsigned long long)result.events, "bytes",
                                  (unsigned long long)result.bytes, "problems", problems, "corrupt",
                                  PyBool_FromLong(result.corrupt));
    tt_export_result_free(&result);
    return out;
}

static PyObject *default_name(PyObject *module, PyObject *format)
{
    (void)module;
    const char *name = PyUnicode_Check(format) ? tt_export_default_name(PyUnicode_AsUTF8(format)) : NULL;
    if (!name) {
        if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "unknown format %R", format);
        return NULL;
    }
    return PyUnicode_FromString(name);
}

static PyObject *open_output(PyObject *module, PyObject *arg)
{
    (void)module;
    PyObject *path;
    if (!PyUnicode_FSConverter(arg, &path)) return NULL;
    int fd;
    Py_BEGIN_ALLOW_THREADS
    fd = tt_open_output(AT_FDCWD, PyBytes_AS_STRING(path), O_WRONLY);
    Py_END_ALLOW_THREADS
    if (fd < 0) {
        int e = errno;
        PyObject *error = Py_BuildValue("(isO)", e, tt_output_problem(e), arg);
        if (error) PyErr_SetObject(PyExc_OSError, error);
        Py_XDECREF(error);
    }
    Py_DECREF(path);
    return fd < 0 ? NULL : PyLong_FromLong(fd);
}

/* What score() asks of the core and returns. */
typedef struct score_request {
    const char *dir, *filter_path;
    int suggest;
    double min_share, max_ns;
    size_t top;
    tt_read_progress *progress; /* or NULL */
    /* results */
    char *report, *suggested;
    size_t suggested_count;
    uint64_t native, otf2, recorded, on_disk;
    char **problems;
    size_t problem_count;
    int corrupt;
} score_request;

/* Scores the trace with the filter at filter_path, or the suggested one, or
 * none. Runs without the GIL. */
static int score_trace(score_request *q, tt_error *err)
{
    tt_trace *trace;
    tt_score *sc = NULL;
    tt_filter *filter = NULL;
    if (tt_trace_open(q->dir, &trace, err) != 0) return -1;
    if (q->progress) tt_trace_set_progress(trace, q->progress);
    int rc = tt_score_build(trace, &sc, err);
    if (rc == 0 && q->filter_path) rc = tt_filter_load(q->filter_path, &filter, err);
    if (rc == 0 && q->suggest) {
        q->suggested = tt_score_suggest(sc, q->min_share, q->max_ns, &q->suggested_count);
        rc = q->suggested ? tt_filter_parse(q->suggested, strlen(q->suggested), "suggested filter", &filter, err)
                          : tt_fail(err, "out of memory");
    }
    char name[4200];
    snprintf(name, sizeof name, q->filter_path ? "the filter %s" : "the suggested filter",
             q->filter_path ? q->filter_path : "");
    if (rc == 0 && !(q->report = tt_score_render(sc, filter, name, q->top))) rc = tt_fail(err, "out of memory");
    if (rc == 0) {
        q->native = tt_score_native_bytes(sc, filter);
        q->otf2 = tt_score_otf2_bytes(sc, filter);
        q->recorded = tt_score_native_bytes(sc, NULL);
        q->on_disk = sc->trace_bytes;
        /* The problems are the caller's now. */
        q->problems = sc->problems;
        q->problem_count = sc->problem_count;
        q->corrupt = sc->corrupt;
        sc->problems = NULL;
        sc->problem_count = 0;
    }
    tt_filter_free(filter);
    tt_score_free(sc);
    tt_trace_close(trace);
    return rc;
}

/* PyUnicode_FSConverter that takes None for no path. */
static int optional_path(PyObject *arg, void *out)
{
    if (arg == Py_None) {
        *(PyObject **)out = NULL;
        return 1;
    }
    return PyUnicode_FSConverter(arg, out);
}

static PyObject *score(PyObject *module, PyObject *args, PyObject *kwds)
{
    (void)module;
    static char *kwlist[] = {"experiment_dir",   "filter", "suggest",  "min_percent",
                             "max_us_per_visit", "top",    "progress", NULL};
    PyObject *dir, *filter_path = NULL, *after = Py_None;
    double min_percent = 1.0, max_us = 5.0;
    Py_ssize_t top = 25;
    score_request q = {0};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&|O&pddnO:score", kwlist, PyUnicode_FSConverter, &dir, optional_path,
                                     &filter_path, &q.suggest, &min_percent, &max_us, &top, &after))
        return NULL;
    char what[300];
    snprintf(what, sizeof what, "scoring %s", PyBytes_AS_STRING(dir));
    reading said;
    if (reading_start(&said, what, PyBytes_AS_STRING(dir), after) != 0) {
        Py_DECREF(dir);
        Py_XDECREF(filter_path);
        return NULL;
    }
    tt_read_progress progress = {say_read, &said, 0};
    if (after != Py_None) q.progress = &progress;
    q.dir = PyBytes_AS_STRING(dir);
    q.filter_path = filter_path ? PyBytes_AS_STRING(filter_path) : NULL;
    q.min_share = min_percent / 100.0;
    q.max_ns = max_us * 1e3;
    q.top = top > 0 ? (size_t)top : 1;
    tt_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = score_trace(&q, &err);
    Py_END_ALLOW_THREADS
    Py_DECREF(dir);
    Py_XDECREF(filter_path);
    PyObject *out = NULL;
    if (rc != 0) {
        tt_raise(&err);
    } else {
        PyObject *suggestion = q.suggested ? tt_readext_text(q.suggested) : Py_NewRef(Py_None);
        out = Py_BuildValue("{s:N,s:N,s:N,s:K,s:K,s:K,s:K,s:N,s:n}", "text", tt_readext_text(q.report), "problems",
                            problem_list(q.problems, q.problem_count), "corrupt", PyBool_FromLong(q.corrupt),
                            "native_bytes", (unsigned long long)q.native, "otf2_bytes", (unsigned long long)q.otf2,
                            "recorded_native_bytes", (unsigned long long)q.recorded, "trace_bytes",
                            (unsigned long long)q.on_disk, "suggested", suggestion, "suggested_count",
                            (Py_ssize_t)q.suggested_count);
    }
    free(q.report);
    free(q.suggested);
    for (size_t i = 0; i < q.problem_count; i++) free(q.problems[i]);
    free(q.problems);
    return out;
}

static PyMethodDef convert_methods[] = {
    {"score", (PyCFunction)(void (*)(void))score, METH_VARARGS | METH_KEYWORDS,
     "score(experiment_dir, filter=None, suggest=False, min_percent=1.0, max_us_per_visit=5.0, top=25,\n"
     "      progress=None)\n--\n\n"
     "What the trace's regions cost, as scorep-score tells it (a scoring longer than\n"
     "`progress` seconds says how it goes on stderr): {text, problems, corrupt,\n"
     "native_bytes and otf2_bytes (with the filter file or the suggested filter),\n"
     "recorded_native_bytes (the model without filter), trace_bytes (on disk),\n"
     "suggested (a filter file's text, or None), suggested_count}."},
    {"convert", (PyCFunction)(void (*)(void))convert, METH_VARARGS | METH_KEYWORDS,
     "convert(experiment_dir, format, path, thread=None, start=0, stop=2**64-1, progress=None, filter=None)\n--\n\n"
     "Converts the experiment's trace to `format` (one of FORMATS) at `path`, only the\n"
     "thread named `thread` (or with that native id) when given, and only what happens\n"
     "between start and stop (ns since the epoch; calls cut at the edges), without the\n"
     "calls of the regions the Score-P filter file `filter` excludes; a conversion\n"
     "longer than `progress` seconds says how it goes on stderr; returns\n"
     "{events, bytes, problems, corrupt}: what was read and written, and what the\n"
     "reader found cut or damaged."},
    {"open_output", open_output, METH_O,
     "open_output(path)\n--\n\n"
     "A descriptor of the file `path` opened to be written from its start, as tracetop writes\n"
     "every file (src/util/file.h): never through a symbolic link, never another user's file,\n"
     "owner-only when made. OSError with what is wrong otherwise."},
    {"default_name", default_name, METH_O,
     "default_name(format)\n--\n\nThe file name of `format` in an experiment directory."},
    {NULL, NULL, 0, NULL},
};

int tt_readext_add_convert(PyObject *module)
{
    size_t n = 0;
    while (tt_export_format(n)) n++;
    PyObject *formats = PyTuple_New((Py_ssize_t)n);
    for (size_t i = 0; formats && i < n; i++) {
        PyObject *name = PyUnicode_FromString(tt_export_format(i));
        if (!name)
            Py_CLEAR(formats);
        else
            PyTuple_SET_ITEM(formats, (Py_ssize_t)i, name);
    }
    int rc = formats ? tt_module_add(module, "FORMATS", formats) : -1;
    Py_XDECREF(formats);
    return rc < 0 ? -1 : PyModule_AddFunctions(module, convert_methods);
}

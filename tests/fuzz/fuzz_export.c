/* fuzz_export.c -- every converter (export.h) fed a fuzzed trace. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "export.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *exp = fuzz_experiment(data, size);
    tt_trace *t;
    tt_error err;
    if (tt_trace_open(exp, &t, &err) != 0) return 0;
    const char *format;
    for (size_t i = 0; (format = tt_export_format(i)); i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", exp, tt_export_default_name(format));
        tt_export_result result;
        if (tt_export(t, format, path, &result, &err) == 0) tt_export_result_free(&result);
    }
    tt_trace_close(t);
    return 0;
}

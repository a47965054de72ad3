/* fuzz_export.c -- a converter (export.h) fed a fuzzed trace: built once
 * per format, FUZZ_FORMAT naming it. */
#include <stdint.h>
#include <stdio.h>

#include "export.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *exp = fuzz_experiment(data, size);
    tt_trace *t;
    tt_error err;
    if (tt_trace_open(exp, &t, &err) != 0) return 0;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", exp, tt_export_default_name(FUZZ_FORMAT));
    tt_export_result result;
    if (tt_export(t, FUZZ_FORMAT, path, &result, &err) == 0) tt_export_result_free(&result);
    tt_trace_close(t);
    return 0;
}

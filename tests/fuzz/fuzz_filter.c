/* fuzz_filter.c -- the Score-P filter parser (filter.h): a fuzzed filter
 * file, then the filter asked about a few names. */
#include <stdint.h>

#include "filter.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tt_filter *f;
    tt_error err;
    if (tt_filter_parse((const char *)data, size, "fuzz", &f, &err) != 0) return 0;
    static const char *const names[][2] = {
        {"__main__:main", "/tmp/main.py"}, {"builtins:len", ""}, {"", ""}, {"a*b?[c]", "/x/site-packages/y.py"}};
    int excluded = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        excluded += tt_filter_excludes(f, names[i][0], names[i][1]);
    fuzz_sink += (size_t)excluded;
    tt_filter_free(f);
    return 0;
}

/* test_filter.c -- Score-P filter files: syntax, rule order, wildcards and
 * escapes, file rules, and the line of each error. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "filter.h"

static tt_filter *parse(const char *text)
{
    tt_filter *f = NULL;
    tt_error err;
    if (tt_filter_parse(text, strlen(text), "f", &f, &err) != 0) fprintf(stderr, "    %s\n", err.message);
    return f;
}

/* The error message of a text that must not parse. */
static const char *error_of(const char *text)
{
    static tt_error err;
    tt_filter *f = NULL;
    if (tt_filter_parse(text, strlen(text), "f", &f, &err) == 0) {
        tt_filter_free(f);
        return NULL;
    }
    return err.message;
}

static void test_rules(void)
{
    tt_filter *f = parse("# everything but one module\n"
                         "SCOREP_REGION_NAMES_BEGIN\n"
                         "  EXCLUDE *\n"
                         "  INCLUDE __main__:*  # comment after a pattern\n"
                         "          app:run\n"
                         "  EXCLUDE MANGLED __main__:f?b\n"
                         "SCOREP_REGION_NAMES_END\n");
    CHECK(f != NULL);
    if (!f) return;
    CHECK(tt_filter_excludes(f, "builtins:len", ""));
    CHECK(!tt_filter_excludes(f, "__main__:main", "/x/y.py"));
    CHECK(!tt_filter_excludes(f, "app:run", ""));
    CHECK(tt_filter_excludes(f, "__main__:fib", "/x/y.py"));
    CHECK(!tt_filter_excludes(f, "__main__:fibs", "/x/y.py"));
    tt_filter_free(f);
}

static void test_files_and_escapes(void)
{
    tt_filter *f = parse("SCOREP_FILE_NAMES_BEGIN EXCLUDE */site-packages/* SCOREP_FILE_NAMES_END\n"
                         "SCOREP_REGION_NAMES_BEGIN\nEXCLUDE a\\*b with\\ blank hash\\#x\nSCOREP_REGION_NAMES_END\n");
    CHECK(f != NULL);
    if (!f) return;
    CHECK(tt_filter_excludes(f, "numpy:dot", "/usr/lib/python3/site-packages/numpy/x.py"));
    CHECK(!tt_filter_excludes(f, "numpy:dot", "")); /* no file: file rules do not apply */
    CHECK(tt_filter_excludes(f, "a*b", ""));
    CHECK(!tt_filter_excludes(f, "axb", "")); /* the star was escaped */
    CHECK(tt_filter_excludes(f, "with blank", ""));
    CHECK(tt_filter_excludes(f, "hash#x", ""));
    tt_filter_free(f);

    f = parse("");
    CHECK(f != NULL && !tt_filter_excludes(f, "anything", "file.py"));
    tt_filter_free(f);
}

static void test_errors(void)
{
    CHECK_STR(error_of("\n\nINCLUDE x\n"), "f:3: outside a SCOREP_REGION_NAMES or SCOREP_FILE_NAMES block: 'INCLUDE'");
    CHECK_STR(error_of("SCOREP_REGION_NAMES_BEGIN\n x\n"), "f:2: a pattern before INCLUDE or EXCLUDE: 'x'");
    CHECK_STR(error_of("SCOREP_FILE_NAMES_BEGIN\nEXCLUDE x\n"),
              "f:1: SCOREP_FILE_NAMES_BEGIN without SCOREP_FILE_NAMES_END");
    CHECK_STR(error_of("SCOREP_FILE_NAMES_BEGIN\nSCOREP_REGION_NAMES_END\n"),
              "f:2: no open block to end: 'SCOREP_REGION_NAMES_END'");
    CHECK_STR(error_of("SCOREP_REGION_NAMES_BEGIN SCOREP_REGION_NAMES_BEGIN"),
              "f:1: a block cannot begin inside another: 'SCOREP_REGION_NAMES_BEGIN'");
    tt_filter *f;
    tt_error err;
    CHECK(tt_filter_parse("a\0b", 3, "f", &f, &err) != 0);
    CHECK_STR(err.message, "f:1: not a text file (a NUL byte)");
}

static void test_load(void)
{
    tt_filter *f;
    tt_error err;
    CHECK(tt_filter_load("/nonexistent/filter", &f, &err) != 0);
    CHECK_STR(err.message, "cannot read filter file /nonexistent/filter: No such file or directory");
}

int main(void)
{
    test_rules();
    test_files_and_escapes();
    test_errors();
    test_load();
    return check_report();
}

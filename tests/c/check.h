/* check.h -- the assertions of the C unit tests: no framework, two counts.
 * A failed check prints where and what, and the test goes on; main ends
 * with `return check_report();`, which prints "N passed, N failed" last. */
#ifndef TRACETOP_CHECK_H
#define TRACETOP_CHECK_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int check_passed, check_failed;

static inline int check_result(int ok, const char *file, int line, const char *what)
{
    if (ok) {
        check_passed++;
    } else {
        check_failed++;
        fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what);
    }
    return ok;
}

#define CHECK(cond) check_result(!!(cond), __FILE__, __LINE__, #cond)

#define CHECK_U64(actual, expected)                                                 \
    do {                                                                            \
        uint64_t a_ = (uint64_t)(actual), e_ = (uint64_t)(expected);                \
        if (!check_result(a_ == e_, __FILE__, __LINE__, #actual " == " #expected))  \
            fprintf(stderr, "    got %" PRIu64 ", expected %" PRIu64 "\n", a_, e_); \
    } while (0)

/* `actual` may be NULL (a failure then). */
#define CHECK_STR(actual, expected)                                                                 \
    do {                                                                                            \
        const char *a_ = (actual), *e_ = (expected);                                                \
        if (!check_result(a_ && strcmp(a_, e_) == 0, __FILE__, __LINE__, #actual " == " #expected)) \
            fprintf(stderr, "    got \"%s\"\n", a_ ? a_ : "(null)");                                \
    } while (0)

#define CHECK_CONTAINS(actual, part)                                                                     \
    do {                                                                                                 \
        const char *a_ = (actual), *p_ = (part);                                                         \
        if (!check_result(a_ && strstr(a_, p_) != NULL, __FILE__, __LINE__, #actual " contains " #part)) \
            fprintf(stderr, "    got \"%s\"\n", a_ ? a_ : "(null)");                                     \
    } while (0)

static inline int check_report(void)
{
    printf("%d passed, %d failed\n", check_passed, check_failed);
    return check_failed ? 1 : 0;
}

#endif

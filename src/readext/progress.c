/* progress.c -- how a long piece of work goes, said on stderr for the user
 * waiting for it (building the viewer's index, converting a trace): nothing
 * for a short one, then a line a second. Called from the working thread,
 * without the GIL. */
#include "readext.h"

#include <stdarg.h>
#include <time.h>

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void tt_readext_progress_start(tt_readext_progress *p, const char *what, double after)
{
    p->what = what;
    p->after = after;
    p->started = seconds_now();
    p->last = 0;
}

void tt_readext_progress_say(tt_readext_progress *p, const char *fmt, ...)
{
    double now = seconds_now();
    if (now - p->started < p->after || now - p->last < 1.0) return;
    p->last = now;
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "tracetop: %s: %s (%.0f s)\n", p->what, line, now - p->started);
    fflush(stderr);
}

/* crash.c -- the trace written before a fatal signal kills (crash.h). */
#include "crash.h"

#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "writer.h"

static const int fatal_signals[] = {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL};
#define TT_FATAL_COUNT (sizeof fatal_signals / sizeof fatal_signals[0])

static struct sigaction previous[TT_FATAL_COUNT]; /* the actions found */
static atomic_flag handling = ATOMIC_FLAG_INIT;   /* a crash is being handled */

static int slot(int signo)
{
    for (unsigned i = 0; i < TT_FATAL_COUNT; i++)
        if (fatal_signals[i] == signo) return (int)i;
    return -1;
}

static void on_fatal(int signo)
{
    int i = slot(signo);
    /* A second fatal signal while the first is handled (one in the writer's
     * last pass, or a previous handler that hands the signal back to us):
     * the default action, at once. */
    if (atomic_flag_test_and_set(&handling)) {
        signal(signo, SIG_DFL);
    } else {
        tt_writer_flush_on_crash();
        sigaction(signo, &previous[i], NULL);
    }
    /* Blocked while this handler runs: delivered as it returns, to the
     * action just put back. A fault raised by an instruction would come
     * again anyway as that instruction runs again. */
    raise(signo);
}

void tt_crash_catch(void)
{
    struct sigaction ours;
    memset(&ours, 0, sizeof ours);
    ours.sa_handler = on_fatal;
    ours.sa_flags = SA_ONSTACK; /* an alternate stack where the thread has one: stack overflows */
    sigfillset(&ours.sa_mask);
    for (unsigned i = 0; i < TT_FATAL_COUNT; i++) {
        struct sigaction found;
        if (sigaction(fatal_signals[i], NULL, &found) != 0) continue;
        if (!(found.sa_flags & SA_SIGINFO) && found.sa_handler == on_fatal) continue; /* caught already */
        previous[i] = found;
        sigaction(fatal_signals[i], &ours, NULL);
    }
}

void tt_crash_release(void)
{
    for (unsigned i = 0; i < TT_FATAL_COUNT; i++) {
        struct sigaction found;
        if (sigaction(fatal_signals[i], NULL, &found) == 0 && !(found.sa_flags & SA_SIGINFO) &&
            found.sa_handler == on_fatal)
            sigaction(fatal_signals[i], &previous[i], NULL);
    }
}

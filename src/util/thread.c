/* thread.c -- threads that take no signal of the program's and are
 * counted while they run (thread.h). */
#include "thread.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* tracetop's threads between their first instruction and their body's
 * return: counted by the thread itself, so that one made but not yet
 * running, or returned but not yet gone, is taken for the program's. */
static atomic_long own_running;

typedef struct {
    void *(*body)(void *);
    void *arg;
} start;

static void *run(void *p)
{
    atomic_fetch_add(&own_running, 1);
    start s = *(start *)p;
    free(p);
    void *result = s.body(s.arg);
    atomic_fetch_sub(&own_running, 1);
    return result;
}

int tt_thread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*body)(void *), void *arg)
{
    start *s = malloc(sizeof *s);
    if (!s) return ENOMEM;
    *s = (start){body, arg};
    sigset_t all, saved;
    sigfillset(&all);
    int rc = pthread_sigmask(SIG_SETMASK, &all, &saved);
    if (rc == 0) {
        rc = pthread_create(thread, attr, run, s);
        pthread_sigmask(SIG_SETMASK, &saved, NULL);
    }
    if (rc != 0) free(s);
    return rc;
}

long tt_thread_process_count(int *leader_ended)
{
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = '\0';
    /* pid (comm) state ppid ...: the name may itself hold spaces and
     * parentheses; state is the first field after it, num_threads the
     * 18th. The state is the leader's: Z once it has ended. */
    char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ') return -1;
    if (leader_ended) *leader_ended = p[2] == 'Z';
    for (int field = 2; p && field < 20; field++) p = strchr(p + 1, ' ');
    return p ? strtol(p + 1, NULL, 10) : -1;
}

long tt_thread_program_count(void)
{
    int leader_ended = 0;
    long threads = tt_thread_process_count(&leader_ended);
    if (threads < 0) return -1;
    return threads - leader_ended - atomic_load(&own_running);
}

/* thread.c -- threads that take no signal of the program's (thread.h). */
#include "thread.h"

#include <signal.h>

int tt_thread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*body)(void *), void *arg)
{
    sigset_t all, saved;
    sigfillset(&all);
    int rc = pthread_sigmask(SIG_SETMASK, &all, &saved);
    if (rc != 0) return rc;
    rc = pthread_create(thread, attr, body, arg);
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    return rc;
}

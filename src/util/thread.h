/* thread.h -- starting one of tracetop's own threads.
 *
 * The measured program must see its signals as it would without tracetop.
 * The kernel hands a process-directed signal to any thread that does not
 * block it; a thread of ours that left signals unblocked would take
 * signals the program blocks in its own threads to wait for them
 * (sigwait, sigtimedwait, signalfd), and die of them. So every thread
 * tracetop starts blocks every signal it can from its first instruction:
 * the mask is set before pthread_create, which the new thread inherits,
 * and put back after. Faults in such a thread (SIGSEGV, SIGBUS, ...) still
 * kill the process: the kernel delivers those whatever the mask.
 */
#ifndef TRACETOP_THREAD_H
#define TRACETOP_THREAD_H

#include <pthread.h>

/* pthread_create with every signal blocked in the new thread; its return
 * value (0 or an errno value). attr may be NULL. */
int tt_thread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*body)(void *), void *arg);

#endif

/* thread.h -- tracetop's own threads.
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
 *
 * Nor may they keep the process alive: a process whose leader thread ends
 * as a thread (a child forked from a thread other than the main one) ends
 * when its last thread does, and tracetop's threads are not the program's.
 * So the threads tt_thread_create starts are counted while they run, and
 * tt_thread_program_count tells those of the program from them.
 */
#ifndef TRACETOP_THREAD_H
#define TRACETOP_THREAD_H

#include <pthread.h>

/* pthread_create with every signal blocked in the new thread; its return
 * value (0 or an errno value). attr may be NULL. The new thread counts as
 * tracetop's from its first instruction until `body` returns. */
int tt_thread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*body)(void *), void *arg);

/* The threads of the process as the kernel counts them (a leader that has
 * ended while others run, a zombie, among them); -1 where /proc does not
 * say. *leader_ended, unless NULL, tells whether the leader has. */
long tt_thread_process_count(int *leader_ended);

/* The threads of the process that are alive and not tracetop's; -1 where
 * /proc does not say. A thread of tracetop's that is starting or ending
 * may count as the program's for a moment, never the other way round. */
long tt_thread_program_count(void);

#endif

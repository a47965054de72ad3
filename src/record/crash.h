/* crash.h -- a measured process that dies of a fatal signal leaves its
 * trace written up to the crash.
 *
 * Without this, SIGABRT (abort, a failed C assert, a Fatal Python error),
 * SIGSEGV, SIGBUS, SIGFPE and SIGILL kill the process wherever the writer
 * had got to: the last TT_WRITER_PERIOD_MS of every thread lost, all of a
 * process that lived less. While a session runs, tracetop's handler for
 * these signals asks the writer thread for one more pass and waits for it
 * (a bounded time: tt_writer_flush_on_crash), using only async-signal-safe
 * calls itself; then it puts back the action it found and raises the
 * signal again. The process so dies as it would have: same status, same
 * core dump, and the handler that was there before (faulthandler's, the
 * program's) runs as before.
 *
 * A handler the program sets afterwards replaces tracetop's: the signal is
 * then the program's business (faulthandler.enable() keeps ours and calls
 * it after its own output).
 */
#ifndef TRACETOP_CRASH_H
#define TRACETOP_CRASH_H

/* Installs the handler for each fatal signal, keeping the action found. */
void tt_crash_catch(void);

/* Puts back the actions found, where tracetop's handler is still the one
 * set. */
void tt_crash_release(void);

#endif

"""Blocks SIGUSR1, sends it to its own process and waits for it with sigwait: the signal stays pending
until taken, unless some thread that does not block it takes it first (and dies of it). With `session`,
measures itself with tracetop.start()/stop() around that, then checks that the measurement left no thread
behind."""
import os
import signal
import sys
import time


def threads():
    return len(os.listdir("/proc/self/task"))


def threads_after(count):
    """The threads once those that ended are gone: a joined thread has ended, but the kernel may list it in
    /proc/self/task a moment longer. One left behind is still there after a second."""
    for _ in range(100):
        if threads() <= count:
            break
        time.sleep(0.01)
    return threads()


def wait_for_own_signal():
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
    os.kill(os.getpid(), signal.SIGUSR1)
    print("took", signal.Signals(signal.sigwait([signal.SIGUSR1])).name)


if __name__ == "__main__":
    if sys.argv[1:2] == ["session"]:
        import tracetop

        before = threads()
        session = tracetop.start(output=sys.argv[2], instrumenter=sys.argv[3])
        wait_for_own_signal()
        session.stop()
        print("threads left behind:", threads_after(before) - before)
    else:
        wait_for_own_signal()

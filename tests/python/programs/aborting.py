"""Computes, then aborts at once (no time for the writer's periodic pass) where WHERE says: main (this
process), thread (a thread of it), fork (an os.fork child), spawn (a multiprocessing spawn worker). With fork
and spawn the parent goes on and prints how the child ended. Or it starts children that leave no trace of
their own: exec (os.fork, then exec of a non-Python program), instant (an os.fork child killed as it starts)."""
import multiprocessing
import os
import resource
import signal
import sys
import threading


def square_sum(n):
    return sum(i * i for i in range(n))


def crash():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    square_sum(1000)
    os.abort()


def forked(body):
    pid = os.fork()
    if pid == 0:
        body()
        os._exit(0)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


if __name__ == "__main__":
    where = sys.argv[1]
    if where == "main":
        crash()
    elif where == "thread":
        thread = threading.Thread(target=crash)
        thread.start()
        thread.join()
    elif where == "fork":
        print("child ended with", forked(crash))
    elif where == "spawn":
        worker = multiprocessing.get_context("spawn").Process(target=crash)
        worker.start()
        worker.join()
        print("child ended with", worker.exitcode)
    elif where == "exec":
        print("child ended with", forked(lambda: os.execv("/bin/true", ["true"])))
    elif where == "instant":
        print("child ended with", forked(lambda: os.kill(os.getpid(), signal.SIGKILL)))
    print("the parent computed", square_sum(500))

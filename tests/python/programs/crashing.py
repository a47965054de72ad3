"""Starts a child process as HOW says (fork, spawn, subprocess) that computes, sleeps long enough for the
writer to have put what it recorded on disk, then crashes as CRASH says (sigsegv, abort, sigkill). The parent
goes on computing and prints how the child ended."""
import multiprocessing
import os
import resource
import signal
import subprocess
import sys
import time


def square_sum(n):
    return sum(i * i for i in range(n))


def crash(how):
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    square_sum(1000)
    time.sleep(0.5)
    if how == "sigsegv":
        import ctypes
        ctypes.string_at(0)
    elif how == "abort":
        os.abort()
    os.kill(os.getpid(), signal.SIGKILL)


def child(start, how):
    if start == "fork":
        pid = os.fork()
        if pid == 0:
            crash(how)
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    if start == "spawn":
        process = multiprocessing.get_context("spawn").Process(target=crash, args=(how,))
        process.start()
        process.join()
        return process.exitcode
    return subprocess.run([sys.executable, __file__, "crash", how]).returncode


if __name__ == "__main__":
    if sys.argv[1] == "crash":
        crash(sys.argv[2])
    status = child(sys.argv[1], sys.argv[2])
    print("child ended with", status, "and the parent computed", square_sum(500))

"""Forks a child with os.fork as HOW says, and prints what parent and child computed:
  exit       the child ends with os._exit(0)
  return     the child returns and ends as the parent's program would, at the end of the script
  thread     the fork is made from a thread named "forker"; the child ends with os._exit(0)
  thread-return
             the fork is made from "forker"; the child says which thread it takes for its main one, and
             returns: it ends when that thread does
  thread-outlived
             as thread-return, and the child starts a thread named "late" that works once the first has ended
  sigterm    the child works, then waits until the parent ends it with SIGTERM
"""
import os
import signal
import sys
import threading
import time
import warnings


def square_sum(n):
    return sum(i * i for i in range(n))


def before_fork():
    return square_sum(10)


def late():
    threading.main_thread().join()
    print("late", square_sum(400), threading.main_thread().is_alive(), flush=True)


def in_child(how):
    if how.startswith("thread-"):
        main = threading.main_thread()
        print(main.name, main.ident == threading.current_thread().ident == threading.get_ident(), flush=True)
    if how == "thread-outlived":
        threading.Thread(target=late, name="late").start()
    print("child", square_sum(300), flush=True)
    if how == "sigterm":
        os.write(ready_w, b"!")
        while True:
            time.sleep(1)
    if how in ("exit", "thread"):
        os._exit(0)


def fork_here(how):
    pid = os.fork()
    if pid == 0:
        in_child(how)
        return None
    if how == "sigterm":
        os.read(ready_r, 1)
        os.kill(pid, signal.SIGTERM)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def main(how):
    before_fork()
    if how.startswith("thread"):
        # Python 3.12+ warns of fork() in a process with threads, naming its pid: this one has two of its own.
        warnings.filterwarnings("ignore", "This process .* is multi-threaded", DeprecationWarning)
        statuses = []
        forker = threading.Thread(target=lambda: statuses.append(fork_here(how)), name="forker")
        forker.start()
        forker.join()
        status, = statuses
    else:
        status = fork_here(how)
    if status is not None:
        print("parent", square_sum(200), "child status", status, flush=True)


ready_r, ready_w = os.pipe()
main(sys.argv[1])

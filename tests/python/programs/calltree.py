"""A bit of everything a call tree has to follow: recursion, generators, exceptions, C calls, user regions,
recording switched off and on inside open calls, a forced collection inside a call, threads (one of them
still running calls when the program ends). With "crash": a thread ends, then the process is killed."""
import gc
import os
import signal
import sys
import threading
import time

import tracetop


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def numbers(n):
    for i in range(n):
        yield i * i


def fails(i):
    raise ValueError(i)


def catches(i):
    try:
        fails(i)
    except ValueError as e:
        return len(str(e))


def filtered(i):
    return abs(-i)


def mixed(rounds):
    total = 0
    for i in range(rounds):
        total += sum(numbers(7)) + catches(i) + filtered(i) + max(i, 3)
        total += sum(x for x in range(5))
    return total


def collect():
    garbage = []
    for _ in range(100):
        cycle = []
        cycle.append(cycle)
        garbage.append(cycle)
    del garbage
    return gc.collect()


def switched(rounds):
    with tracetop.region("switched"):
        mixed(rounds)
        tracetop.disable_recording()
        mixed(rounds)
        tracetop.enable_recording()
        mixed(rounds)


def worker(rounds):
    with tracetop.region("worker"):
        mixed(rounds)
        fib(12)


stop = threading.Event()


def spinning():
    while not stop.is_set():
        mixed(5)


threads = [threading.Thread(target=worker, args=(200,)) for _ in range(3)]
for t in threads:
    t.start()
spinner = threading.Thread(target=spinning, daemon=True)
spinner.start()
print(fib(15), mixed(300), collect())
switched(50)
for t in threads:
    t.join()
if sys.argv[1:] == ["crash"]:
    time.sleep(0.5)  # the writer puts what was recorded on disk
    os.kill(os.getpid(), signal.SIGKILL)
stop.set()
spinner.join()

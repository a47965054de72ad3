"""Measures part of a program with tracetop.start(): work() is recorded 3 times in thread `early` (started
before the measurement), 4 times in thread `late` (started during it) and once in the main thread."""
import sys
import threading

import tracetop


def work():
    return sum(range(100))


def early():
    go.wait()
    for _ in range(3):
        work()


def late():
    for _ in range(4):
        work()


go = threading.Event()
work()  # before the measurement
early_thread = threading.Thread(target=early, name="early")
early_thread.start()
with tracetop.start(output=sys.argv[1]) as session:
    late_thread = threading.Thread(target=late, name="late")
    late_thread.start()
    late_thread.join()
    go.set()
    early_thread.join()
    work()
work()  # after it
print(session.directory)

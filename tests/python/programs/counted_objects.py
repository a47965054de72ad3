"""Objects made in two threads, then calls alone, for test_calltree_counted.py: with --objects, the chunks of the
calls phase hold no OBJECTS record (calls of a C function that returns a small int make no object, not even a
frame, and no loop counter is made: no object is counted, so no batch is written), those of the objects phases do
(a batch every 100 ms, and the last as counting stops)."""
import itertools
import threading


class Point:
    def __init__(self, x):
        self.x = x


def make(count):
    return [Point(i) for i in range(count)]


def calls():
    for _ in itertools.repeat(None, 120_000):
        abs(-1)


kept = make(30_000)
worker = threading.Thread(target=make, args=(20_000,), name="maker")
worker.start()
worker.join()
calls()
print(len(kept))

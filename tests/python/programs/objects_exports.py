"""Makes known numbers of objects at known times, for the tests of the exports of --objects
(test_objects_exports.py).

make_items() makes 15,000 Items a call, called once from first() and once from second(); make_lists() makes
20,000 lists; a thread makes 10,000 Moved that the main thread frees. Each of these functions makes nothing else:
the iterators they loop over are made by their callers, and their classes have no __init__ to call. All of them
are alive while churn() makes floats for a while (so that counts are written while they are), then freed, then
churn() again; leak() makes 700 Kept, alive at the end. With --child, a child process does the same first."""

import collections
import itertools
import queue
import subprocess
import sys
import threading
import time


class Item:
    pass


class Moved:
    pass


class Kept:
    pass


def make_items(keep, times):
    for _ in times:
        keep.append(Item())


def first(keep):
    make_items(keep, itertools.repeat(None, 15_000))


def second(keep):
    make_items(keep, itertools.repeat(None, 15_000))


def make_lists(keep, times):
    for _ in times:
        keep.append([])


def produce(keep, times, channel):
    for _ in times:
        keep.append(Moved())
    channel.put(keep)


def churn(seconds):
    """Makes floats for `seconds`: objects are counted, and their counts written, while the others stay."""
    end = time.monotonic() + seconds
    x = 0.5
    while time.monotonic() < end:
        for _ in range(1000):
            x = x * 0.5 + 0.25
    return x


def leak(times):
    kept = []  # not a comprehension: before 3.12 its own function, before 3.11 named <listcomp> alone
    for _ in times:
        kept.append(Kept())
    return kept


def main():
    items, lists = collections.deque(), collections.deque()
    first(items)
    second(items)
    make_lists(lists, itertools.repeat(None, 20_000))
    channel = queue.Queue()
    worker = threading.Thread(target=produce, args=(collections.deque(), itertools.repeat(None, 10_000), channel))
    worker.start()
    worker.join()
    moved = channel.get()
    churn(0.3)
    items.clear()
    lists.clear()
    moved.clear()
    churn(0.3)


if sys.argv[1:] == ["--child"]:
    subprocess.run([sys.executable, __file__], check=True)
main()
LEAKED = leak(itertools.repeat(None, 700))  # alive at the end: tracetop stops before the module's globals go
print("done", len(LEAKED))

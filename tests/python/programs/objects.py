"""Makes known numbers of objects in known functions, for the tests of --objects (test_objects.py).

make(): 100,000 instances of Point and 50,000 lists, kept in a deque (so that no other list is made there),
freed by its caller. handover(): 20,000 Points made in one thread and freed in another. cycles(): 1,000 pairs
of Nodes that refer to each other, freed by the garbage collector. wrapped(): calls make_filtered(), which a
filter file leaves out, so its 3,000 Points count for wrapped(); they are still alive at the end."""

import collections
import gc
import queue
import threading


class Point:
    def __init__(self, x):
        self.x = x


class Node:
    def __init__(self):
        self.other = None


def make():
    keep = collections.deque()
    for i in range(100_000):
        keep.append(Point(i))
    for _ in range(50_000):
        keep.append([])
    return keep


def producer(channel):
    items = collections.deque()
    for i in range(20_000):
        items.append(Point(i))
    channel.put(items)


def consumer(channel):
    items = channel.get()
    items.clear()


def handover():
    channel = queue.Queue()
    maker = threading.Thread(target=producer, args=(channel,))
    maker.start()
    maker.join()
    freer = threading.Thread(target=consumer, args=(channel,))
    freer.start()
    freer.join()


def pair():
    a, b = Node(), Node()
    a.other, b.other = b, a


def cycles():
    gc.disable()
    for _ in range(1_000):
        pair()
    gc.enable()
    gc.collect()


def make_filtered():
    items = collections.deque()
    for i in range(3_000):
        items.append(Point(i))
    return items


def wrapped():
    return make_filtered()


def main():
    kept = make()
    del kept
    handover()
    cycles()


main()
LEAKED = wrapped()  # alive at the end: tracetop stops before the module's globals go
print("done", len(LEAKED))

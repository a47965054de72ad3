"""Known numbers of objects over time, for the viewer's objects views (test_viewer_objects.py).

make_points() makes exactly 100,000 instances of Point and make_lists() exactly 50,000 lists, and nothing else:
what they fill (and its bound append) and what they loop over are made by main(). Between the steps, hold() waits while making bytes
objects, so that counts are recorded while the objects are alive: the Points alone, then both, then the lists
alone, then none."""

import collections
import itertools
import time


class Point:
    __slots__ = ()


def make_points(add, times):
    for _ in times:
        add(Point())


def make_lists(add, times):
    for _ in times:
        add([])


def hold(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for _ in itertools.repeat(None, 1200):
            bytes(16)
        time.sleep(0.005)


def main():
    points = collections.deque()
    make_points(points.append, itertools.repeat(None, 100_000))
    hold(0.4)
    lists = collections.deque()
    make_lists(lists.append, itertools.repeat(None, 50_000))
    hold(0.4)
    points.clear()
    hold(0.4)
    lists.clear()
    hold(0.3)
    print("points and lists made and freed")


main()

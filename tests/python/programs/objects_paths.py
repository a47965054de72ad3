"""One function, make(), that makes Items on two call paths: 30,000 under early() and 10,000 under late(), for
the viewer's objects per call path (test_viewer_objects.py). Objects are recorded per creating function, so the
viewer shares make()'s 40,000 between its two paths by its time on each."""

import itertools


class Item:
    __slots__ = ()


def make(add, times):
    for _ in times:
        add(Item())


def early(add, times):
    make(add, times)


def late(add, times):
    make(add, times)


def main():
    kept = []
    early(kept.append, itertools.repeat(None, 30_000))
    late(kept.append, itertools.repeat(None, 10_000))
    print(len(kept))


main()

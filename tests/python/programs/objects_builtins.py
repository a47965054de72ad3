"""Makes a known number of objects of each built-in type that issue 10 names (list, dict, tuple, set, str,
bytes, int, float), for test_objects_builtins.py.

Each object is made by one bytecode instruction (a display or a binary operation on locals), so that nothing
else of these types is made in the two functions; the loops run over itertools.repeat, which makes no int,
made by the caller (its constructor takes a tuple).
The objects are freed by C code (a deque's), never by the interpreter loop dropping a local: before 3.13.3
that loop calls a destructor itself, unseen (README, Objects).

kept(): N of each, kept in a deque that its caller drops: each freed once, all at the end. churn(): N of each,
each freed as the next of its type is made (a deque of one), so that the free lists (list, dict, tuple,
float, ...) and the allocator hand the same memory out again and again; reused() shows that the
list's did."""

import collections
import itertools
import sys

N = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000


def kept(times, a, b, s, t, p, q, i, j, x, y):
    keep = collections.deque()
    for _ in times:
        keep.append([])
        keep.append({})
        keep.append((a, b))
        keep.append({a})
        keep.append(s + t)
        keep.append(p + q)
        keep.append(i + j)
        keep.append(x + y)
    return keep


def churn(times, a, b, s, t, p, q, i, j, x, y):
    lists, dicts, tuples, sets = (collections.deque(maxlen=1) for _ in range(4))
    strs, bytes_, ints, floats = (collections.deque(maxlen=1) for _ in range(4))
    for _ in times:
        lists.append([])
        dicts.append({})
        tuples.append((a, b))
        sets.append({a})
        strs.append(s + t)
        bytes_.append(p + q)
        ints.append(i + j)
        floats.append(x + y)
    lists.clear()
    dicts.clear()
    tuples.clear()
    sets.clear()
    strs.clear()
    bytes_.clear()
    ints.clear()
    floats.clear()


def reused():
    """The addresses of 1,000 lists made and freed one after the other: a few, not 1,000."""
    addresses, last = set(), collections.deque(maxlen=1)
    for _ in range(1_000):
        last.append([])
        addresses.add(id(last[0]))
    return len(addresses)


# Operands that make a new object every time: no small int, no one-character str or bytes (CPython keeps
# those), float and int far from any cached value.
OPERANDS = (1, 2, "ab", "cd", b"ab", b"cd", 100_000, 200_000, 1.5, 2.25)
dropped = kept(itertools.repeat(None, N), *OPERANDS)
dropped.clear()
churn(itertools.repeat(None, N), *OPERANDS)
print("done", N, reused() < 100)

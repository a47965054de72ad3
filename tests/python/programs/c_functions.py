"""Calls some hundreds of C functions of many method tables in turn, round after round, each a number of
times of its own (1 to 5 a round), and prints as JSON the region name each should have and how often it
was called. The methods are those of immutable values, defined by the value's own type; the functions
those of a few modules of pure functions; called without arguments, most raise TypeError, which is a call all the same."""
import binascii
import bisect
import cmath
import heapq
import json
import math
import operator
import sys
import zlib

ROUNDS = 10
VALUES = ("Ab c", b"Ab c", 2.5, 7, 3 + 4j, (1, 2), frozenset({1}), range(3), slice(1, 2), True, Ellipsis)
BUILTIN = type(len)


def c_functions():
    """(function, name) pairs: `Type.method` for a method, `module:name` for a module's function."""
    functions = []
    for value in VALUES:
        for name in sorted(vars(type(value))):
            method = getattr(value, name)
            if type(method) is BUILTIN and method.__self__ is value:
                functions.append((method, getattr(type(value), name).__qualname__))
    for module in (math, cmath, operator, binascii, zlib, heapq, bisect):
        for name in sorted(dir(module)):
            function = getattr(module, name)
            if type(function) is BUILTIN and function.__name__ == name:
                functions.append((function, f"{function.__module__}:{name}"))
    return functions


def call_in_turn(functions):
    for _ in range(ROUNDS):
        for index, function in enumerate(functions):
            for _ in range(index % 5 + 1):
                try:
                    function()
                except TypeError:
                    pass


if __name__ == "__main__":
    functions = c_functions()
    expected = {}
    for index, (_, name) in enumerate(functions):
        expected[name] = expected.get(name, 0) + ROUNDS * (index % 5 + 1)
    call_in_turn([function for function, _ in functions])
    json.dump(expected, sys.stdout)

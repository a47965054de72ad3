"""Calls of every kind a filter may exclude: a recursive function, a generator, a function that raises,
a builtin, a user region. Their callee `leaf` is to be recorded whatever the filter excludes around it."""
import math
import sys

import tracetop


def leaf(n):
    return math.gcd(n, 6)


def fib(n):
    if n < 2:
        return leaf(n)
    return fib(n - 1) + fib(n - 2)


def numbers(k):
    for i in range(k):
        yield leaf(i)


def failing(n):
    leaf(n)
    raise ValueError(n)


def main():
    total = fib(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
    total += sum(numbers(5))
    for i in range(3):
        try:
            failing(i)
        except ValueError:
            total += 1
    with tracetop.region("phase"):
        total += leaf(7)
    print("total", total)


main()

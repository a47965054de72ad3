"""Cheap calls by the thousand (fib, math.sqrt) beside a few expensive ones (slow): what a filter should
drop and what it should keep."""
import math
import sys
import time


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def roots(n):
    return sum(math.sqrt(i) for i in range(n))


def slow():
    time.sleep(0.002)
    return fib(5)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 18
    total = fib(n) + roots(20 * n)
    for _ in range(5):
        total += slow()
    print("total", round(total))


main()

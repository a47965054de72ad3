"""Many call paths in few calls, after imports of many modules: a trace whose definitions and call tree
outweigh its events' records, which the writer pays back by compressing event chunks."""
import sys

import asyncio  # noqa: F401  (its definitions: thousands of regions' names)
import decimal  # noqa: F401
import email.parser  # noqa: F401
import json


def a(n, path):
    return path if n == 0 else (b if n % 2 else c)(n - 1, path + "a")


def b(n, path):
    return path if n == 0 else (c if n % 3 else a)(n - 1, path + "b")


def c(n, path):
    return path if n == 0 else (a if n % 5 else b)(n - 1, path + "c")


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    paths = set()
    for _ in range(rounds):
        for n in range(400):
            paths.add((a, b, c)[n % 3](n % 37 + n // 37, ""))
    print("paths", len(paths), len(json.dumps(sorted(paths))))


main()

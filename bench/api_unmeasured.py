"""What tracetop's API costs a program that is not measured: annotated code must run as before.

    python bench/api_unmeasured.py [--number 100000]

Outside a measurement every call of the API is a no-op. This times `with tracetop.region("x"): pass`
and the other calls against the same statement without tracetop (`with nullcontext(): pass` for the
region), best of five repeats, and prints nanoseconds per call and the ratio.
"""

import argparse
import timeit
from contextlib import nullcontext

import tracetop
from tracetop import _tracetop

CALLS = {
    'with region("x"): pass': ("with nullcontext(): pass", 'with region("x"): pass'),
    "region_begin/region_end": ("pass", 'region_begin("y"); region_end("y")'),
    "parameter_int": ("pass", 'parameter_int("n", 1)'),
    "counter": ("pass", 'counter("c", 1.5)'),
}


def best_ns(statement, number):
    names = {
        "nullcontext": nullcontext,
        "region": tracetop.region,
        "region_begin": tracetop.region_begin,
        "region_end": tracetop.region_end,
        "parameter_int": tracetop.parameter_int,
        "counter": tracetop.counter,
    }
    return min(timeit.repeat(statement, globals=names, number=number, repeat=5)) / number * 1e9


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=100_000)
    args = parser.parse_args()
    if _tracetop.active():
        parser.error("run it outside a measurement")
    print("| call | without tracetop (ns) | tracetop, unmeasured (ns) | ratio |")
    print("|---|---:|---:|---:|")
    for name, (plain, annotated) in CALLS.items():
        base, cost = best_ns(plain, args.number), best_ns(annotated, args.number)
        print(f"| `{name}` | {base:.0f} | {cost:.0f} | {cost / base:.2f} |")


if __name__ == "__main__":
    main()

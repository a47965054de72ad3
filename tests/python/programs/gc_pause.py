"""A function whose forced full collection takes 100 ms or more: objects in reference cycles, all tracked
by the collector, dropped and then collected by gc.collect() called from `work`. The number of objects
doubles until one collection takes that long; the last pause is printed, as the program measured it."""
import gc
import time


def work(n):
    keep = []
    for _ in range(n):
        cycle = []
        cycle.append(cycle)
        keep.append(cycle)
    del keep, cycle
    started = time.perf_counter()
    gc.collect()
    return time.perf_counter() - started


def main():
    n = 200_000
    while (pause := work(n)) < 0.1:
        n *= 2
    print(f"pause {pause * 1e9:.0f} ns with {n} objects")


main()

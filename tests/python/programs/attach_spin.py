"""A CPU-bound loop in threads, started without tracetop, for `tracetop attach` tests. Each worker runs
batches of the same work and notes the CPU time each took. On each line of stdin, the main thread prints
the least CPU time a batch took since the previous line (in microseconds; 0: none), and empties the
notes."""

import select
import sys
import threading
import time

WORKERS = 3
costs = []


def step(i):
    return i * i % 7


def batch():
    return sum(step(i) for i in range(20000))


def worker():
    while True:
        began = time.thread_time_ns()
        batch()
        costs.append(time.thread_time_ns() - began)


for n in range(WORKERS):
    threading.Thread(target=worker, name=f"worker-{n}", daemon=True).start()
print("ready", flush=True)
while True:
    ready, _, _ = select.select([sys.stdin], [], [], 0.05)
    if ready:
        if not sys.stdin.readline():
            break
        least, costs[:] = min(costs, default=0) // 1000, []
        print(least, flush=True)

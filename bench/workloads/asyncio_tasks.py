"""asyncio workload for bench/run.py and bench/asyncio_cost.py: 16 named tasks, each awaiting a nested
coroutine that yields to the loop (asyncio.sleep(0)) `rounds` times, doing a little work per step, under a
gather; then a TaskGroup-free fan-out of short-lived tasks. Prints a checksum line."""

import asyncio
import sys


def work(k, r):
    return (k * 31 + r) % 97


async def step(k, r):
    await asyncio.sleep(0)
    return work(k, r)


async def worker(k, rounds):
    total = 0
    for r in range(rounds):
        total += await step(k, r)
    return total


async def short(k):
    await asyncio.sleep(0)
    return k


async def main(rounds):
    tasks = [asyncio.create_task(worker(k, rounds), name=f"worker-{k}") for k in range(16)]
    total = sum(await asyncio.gather(*tasks))
    total += sum(await asyncio.gather(*(short(k) for k in range(rounds))))
    return total


if __name__ == "__main__":
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    print("checksum", asyncio.run(main(rounds)))

"""Named asyncio tasks for tracetop's task lanes: N workers that sleep
0.1 s, a gather, a TaskGroup (3.11+), wait_for with a timeout and a
cancelled task (0.1 s after it began to wait). Prints what it did, so a run under tracetop can be compared
with a plain one."""
import asyncio
import sys

N = int(sys.argv[1]) if len(sys.argv) > 1 else 4


# Each worker's running time, so much of it that spin() is the top function of each worker's lane however
# long the machine keeps the program waiting inside another function.
def spin(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


async def nap(seconds):
    await asyncio.sleep(seconds)


async def worker(k):
    spin(200000)
    await nap(0.1)
    spin(200000)
    return k


async def slow():
    await asyncio.sleep(10)


async def doomed(started):
    started.set()
    try:
        await asyncio.sleep(10)
    except asyncio.CancelledError:
        print("doomed cancelled")
        raise


async def main():
    tasks = [asyncio.create_task(worker(k), name=f"worker-{k}") for k in range(N)]
    print("workers", await asyncio.gather(*tasks))
    print("gathered", await asyncio.gather(worker(10), worker(11)))
    if hasattr(asyncio, "TaskGroup"):
        async with asyncio.TaskGroup() as group:
            grouped = [group.create_task(worker(20 + k), name=f"grouped-{k}") for k in range(2)]
        print("group", [t.result() for t in grouped])
    try:
        await asyncio.wait_for(slow(), timeout=0.5)
    except asyncio.TimeoutError:
        print("wait_for timed out")
    # The victim is cancelled 0.1 s after it began to wait, however late a loaded machine let it start.
    started = asyncio.Event()
    victim = asyncio.create_task(doomed(started), name="doomed")
    await started.wait()
    await asyncio.sleep(0.1)
    victim.cancel()
    try:
        await victim
    except asyncio.CancelledError:
        print("victim cancelled:", victim.cancelled())


asyncio.run(main())

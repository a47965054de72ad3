"""asyncio tasks for the call tree the hook keeps (test_calltree.py): the case named by argv[1]. Prints what it
did, so that a run under tracetop can be compared with a plain one."""
import asyncio
import sys
import threading


def spin(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


async def inner(k):
    spin(300 + k)
    await asyncio.sleep(0)
    return k


async def worker(k, rounds=5):
    total = 0
    for r in range(rounds):
        spin(200 * (k + 1))
        total += await inner(r)
        await asyncio.sleep(0)
    return total


async def interleaving():
    tasks = [asyncio.create_task(worker(k), name=f"w{k}") for k in range(6)]
    print("interleaving", [await t for t in tasks])


async def awaiting():
    first = asyncio.create_task(worker(1), name="first")
    async def second():
        return await first + await worker(2)
    print("awaiting", await asyncio.create_task(second(), name="second"))


async def nested():
    async def parent(k):
        kids = [asyncio.create_task(worker(k + j, 2), name=f"kid{k}.{j}") for j in range(3)]
        return sum([await kid for kid in kids])
    print("nested", await asyncio.gather(*(asyncio.create_task(parent(k), name=f"parent{k}") for k in range(3))))


async def cancelled():
    async def doomed():
        try:
            while True:
                spin(500)
                await asyncio.sleep(0)
        except asyncio.CancelledError:
            print("doomed cancelled")
            raise
    victim = asyncio.create_task(doomed(), name="doomed")
    for _ in range(5):
        await asyncio.sleep(0)
    victim.cancel()
    try:
        await victim
    except asyncio.CancelledError:
        print("cancelled", victim.cancelled())


async def raising():
    async def fails(k):
        await inner(k)
        raise ValueError(k)
    async def catches(k):
        try:
            await fails(k)
        except ValueError as e:
            return e.args[0]
    print("raising", await asyncio.gather(*(catches(k) for k in range(4))))
    try:
        await asyncio.create_task(fails(9), name="fails")
    except ValueError as e:
        print("caught", e)


async def gathered():
    print("gathered", await asyncio.gather(*(worker(k, 3) for k in range(5))))


async def alive():
    async def forever():
        while True:
            spin(100)
            await asyncio.sleep(0)
    global left
    left = asyncio.create_task(forever(), name="forever")
    await worker(1, 3)
    print("alive", not left.done())


def in_threads():
    results = []
    def run(k):
        results.append(asyncio.run(gathered_in(k)))
    async def gathered_in(k):
        return sum(await asyncio.gather(*(worker(k + j, 3) for j in range(3))))
    threads = [threading.Thread(target=run, args=(k,), name=f"loop{k}") for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("threads", sorted(results))


async def driven():
    """Steps within steps: a task's step drives a coroutine by hand, from a plain function (a resume by no
    coroutine), through a suspension and on to its end, at two depths."""
    async def leaf(k):
        spin(100 + k)
        await asyncio.sleep(0)
        spin(50)
        return k
    def drive(k):
        coro = leaf(k)
        coro.send(None)  # to the sleep's yield
        try:
            coro.send(None)
        except StopIteration as stop:
            return stop.value
    async def stepper(k):
        total = 0
        for r in range(3):
            total += drive(k + r) + (drive(r) if r % 2 else 0)
            await asyncio.sleep(0)
        return total
    print("driven", await asyncio.gather(*(asyncio.create_task(stepper(k), name=f"drv{k}") for k in range(3))))


async def eager():
    if hasattr(asyncio, "eager_task_factory"):
        asyncio.get_running_loop().set_task_factory(asyncio.eager_task_factory)
    await interleaving()
    await nested()


CASES = {"interleaving": interleaving, "awaiting": awaiting, "nested": nested, "cancelled": cancelled,
         "raising": raising, "gathered": gathered, "alive": alive, "driven": driven, "eager": eager}

if __name__ == "__main__":
    case = sys.argv[1]
    if case == "threads":
        in_threads()
    elif case == "alive":
        loop = asyncio.new_event_loop()
        loop.run_until_complete(alive())  # the task is left alive: the loop is never closed
    else:
        asyncio.run(CASES[case]())

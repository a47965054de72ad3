"""An event loop in each of two threads, with named tasks; on 3.12+ they are eager (asyncio.eager_task_factory:
their first step runs inside create_task, before it names them)."""
import asyncio
import threading


async def child(n):
    await asyncio.sleep(0.02)
    return n


async def main(tag):
    loop = asyncio.get_running_loop()
    if hasattr(asyncio, "eager_task_factory"):
        loop.set_task_factory(asyncio.eager_task_factory)
    ts = [asyncio.create_task(child(i), name=f"{tag}-{i}") for i in range(3)]
    results[tag] = await asyncio.gather(*ts)


results = {}
t = threading.Thread(target=lambda: asyncio.run(main("thread")), name="looper")
t.start()
asyncio.run(main("main"))
t.join()
print(sorted(results.items()))  # from one thread: the two loops' lines never interleave

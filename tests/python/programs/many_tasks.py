"""Makes N asyncio tasks, one after another, each awaited before the next (a server that handles one request
at a time, for days), named w0, w1, ...; then prints the process's peak resident memory, as it saw it."""

import asyncio
import resource
import sys


async def work():
    return 1


async def main(count):
    done = 0
    for k in range(count):
        done += await asyncio.create_task(work(), name=f"w{k}")
    return done


print("done", asyncio.run(main(int(sys.argv[1]))))
print("peak_kb", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)

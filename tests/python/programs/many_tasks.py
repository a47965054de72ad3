"""Makes N asyncio tasks, one after another, each awaited before the next (a server that handles one request
at a time, for days), named w0, w1, ...; then prints the process's peak resident memory."""

import asyncio
import sys


async def work():
    return 1


async def main(count):
    done = 0
    for k in range(count):
        done += await asyncio.create_task(work(), name=f"w{k}")
    return done


print("done", asyncio.run(main(int(sys.argv[1]))))
# VmHWM, not ru_maxrss: that one keeps the peak of what ran in this process before an exec (tracetop's command
# line, when it runs the program so).
with open("/proc/self/status") as status:
    print("peak_kb", next(line.split()[1] for line in status if line.startswith("VmHWM:")))

"""Starts N threads one after another, each joined before the next (a server with a thread per request),
each calling work() once; then prints the process's peak resident memory."""

import sys
import threading

done = []


def work(k):
    done.append(sum(range(k % 50)))


for k in range(int(sys.argv[1])):
    thread = threading.Thread(target=work, args=(k,), name=f"request-{k}")
    thread.start()
    thread.join()
print("done", len(done))
# VmHWM, not ru_maxrss: that one keeps the peak of what ran in this process before an exec (tracetop's command
# line, when it runs the program so).
with open("/proc/self/status") as status:
    print("peak_kb", next(line.split()[1] for line in status if line.startswith("VmHWM:")))

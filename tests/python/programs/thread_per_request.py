"""A server with a thread per request: the main thread starts a thread for each request, RATE a second (the
argument; default 10, 600 a minute), at most SLOTS at once; each handles its request in a few calls (a few ms)
and ends. Until a file named `stop` appears in the working directory; then it prints how many it served."""
import os
import sys
import threading
import time

SLOTS = 4


def compute(n):
    total = 0
    for i in range(n):
        total += i
    return total


def query(k):
    return compute(20000 + k % 100)


def render(k):
    return str(compute(10000)) * (k % 7 + 1)


def route(k):
    return query(k) if k % 3 else render(k)


def handle(k, slots):
    try:
        route(k)
    finally:
        slots.release()


def main(rate):
    slots = threading.BoundedSemaphore(SLOTS)
    served, due = 0, time.monotonic()
    while served % 10 or not os.path.exists("stop"):
        slots.acquire()
        threading.Thread(target=handle, args=(served, slots)).start()
        served += 1
        due += 1 / rate
        time.sleep(max(0.0, due - time.monotonic()))
    for _ in range(SLOTS):  # the last requests served
        slots.acquire()
    print("served", served)


main(float(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] != "0" else 10.0)

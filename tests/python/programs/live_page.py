"""A steady program for the live page: the main thread spends most of its time in hot() and a little in
cool(), samples a counter `queue_len` and a parameter `round`; a thread named `worker` calls hot() and
light(). It runs until a file named `stop` appears in the working directory, then prints its rounds."""
import os
import threading
import time

import tracetop


def hot(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


def cool(n):
    return sum(range(n))


def light():
    return len(str(time.time()))


def worker(done):
    while not done.is_set():
        hot(5000)
        light()


def main():
    done = threading.Event()
    thread = threading.Thread(target=worker, args=(done,), name="worker")
    thread.start()
    rounds = 0
    # The file is looked for now and then: stat() gives the GIL away, and waiting to have it back would
    # count as time in stat.
    while rounds % 20 or not os.path.exists("stop"):
        hot(20000)
        cool(20000)
        rounds += 1
        tracetop.counter("queue_len", rounds % 17)
        tracetop.parameter_int("round", rounds)
    done.set()
    thread.join()
    print("rounds", rounds > 0)


main()

"""A steady program to watch with `tracetop top`: the main thread spends most of its time in hot() and a
little in cool(); with an argument of 1, a thread named `worker` runs beside it, mostly asleep. It runs
until a file named `stop` appears in the working directory."""
import os
import sys
import threading
import time


def hot(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


def cool(n):
    return sum(range(n))


def light():
    return len(str(time.time()))


def worker():
    while not os.path.exists("stop"):
        time.sleep(0.01)
        light()


def main(workers):
    threads = [threading.Thread(target=worker, name="worker") for _ in range(workers)]
    for thread in threads:
        thread.start()
    while not os.path.exists("stop"):
        hot(20000)
        cool(20000)
    for thread in threads:
        thread.join()


main(int(sys.argv[1]) if len(sys.argv) > 1 else 0)

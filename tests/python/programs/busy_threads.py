"""N busy threads (default 8), busy-0 to busy-(N-1), that call work over and over, now and then 30 calls deep
(deeper than a lane of the live page shows), and a main thread that waits for a file named `stop` in the working
directory; then they end, and it prints how many there were."""
import os
import sys
import threading
import time


def descend(depth):
    return leaf() if depth == 0 else descend(depth - 1)


def leaf():
    return sum(range(20000))


def work(stop):
    rounds = 0
    while not stop.is_set():
        descend(30 if rounds % 10 == 0 else 2)
        rounds += 1


def main(count):
    stop = threading.Event()
    threads = [threading.Thread(target=work, args=(stop,), name=f"busy-{k}") for k in range(count)]
    for thread in threads:
        thread.start()
    while not os.path.exists("stop"):
        time.sleep(0.05)
    stop.set()
    for thread in threads:
        thread.join()
    print("busy", count)


main(int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] != "0" else 8)

"""Four threads that compute in Python and one that sleeps, all for about the same time: the four share
the GIL, the sleeper uses no CPU."""
import sys
import threading
import time


def spin(seconds):
    end = time.monotonic() + seconds
    total = 0
    while time.monotonic() < end:
        for i in range(1000):
            total += i * i
    return total


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    threads = [threading.Thread(target=spin, args=(seconds,), name=f"cpu-{n}") for n in range(4)]
    threads.append(threading.Thread(target=time.sleep, args=(seconds,), name="sleeper"))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print("done")


main()

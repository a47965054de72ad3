"""Four threads that compute in Python and one that sleeps, for the same time: they start together and stop
together, when the main thread says so. The four share the GIL, the sleeper uses no CPU."""
import sys
import threading
import time


def spin(start, stop):
    start.wait()
    total = 0
    while not stop.is_set():
        for i in range(1000):
            total += i * i
    return total


def sleep(start, stop):
    start.wait()
    stop.wait()


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    start, stop = threading.Barrier(6), threading.Event()
    threads = [threading.Thread(target=spin, args=(start, stop), name=f"cpu-{n}") for n in range(4)]
    threads.append(threading.Thread(target=sleep, args=(start, stop), name="sleeper"))
    for thread in threads:
        thread.start()
    start.wait()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    print("done")


main()

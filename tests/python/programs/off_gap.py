"""Four threads loop on worker() until a line on stdin ends them: each turn it sleeps 50 ms itself, then calls
batch(), which sleeps 50 ms. Measured with --no-c-calls, the sleeps are the functions' own time, the same each
turn however loaded the machine. Prints "ready" once they loop."""
import sys
import threading
import time

running = True


def batch():
    time.sleep(0.05)


def worker():
    while running:
        time.sleep(0.05)
        batch()


threads = [threading.Thread(target=worker, name=f"worker-{n}") for n in range(4)]
for thread in threads:
    thread.start()
print("ready", flush=True)
sys.stdin.readline()
running = False
for thread in threads:
    thread.join()

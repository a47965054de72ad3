"""What a program sees of its file descriptors while threads of its own run and tracetop's writer writes.

    descriptors.py list        prints the descriptors open, asked of each number: those
                               open at each of five listings, 50 ms apart (tracetop's writer has a trace
                               file open for the moment of a pass, which a listing may catch; it holds none)
    descriptors.py closerange  closes every descriptor past stderr, as a daemon does, then writes a file of
                               its own for a while and prints whether it holds what was written
"""
import fcntl
import os
import sys
import threading
import time


def busy(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sum(range(100))


def open_descriptors():
    """Asked of each number, which opens nothing (a listing of /proc/self/fd would open a descriptor of its
    own, whose number moves with the writer's)."""
    open_ = []
    for fd in range(1024):
        try:
            fcntl.fcntl(fd, fcntl.F_GETFD)
        except OSError:
            continue
        open_.append(fd)
    return open_


threads = [threading.Thread(target=busy, args=(0.5,)) for _ in range(4)]
for thread in threads:
    thread.start()
if sys.argv[1] == "list":
    busy(0.3)  # several of the writer's passes, each thread's stream on disk by now
    held = set(open_descriptors())
    for _ in range(4):
        busy(0.05)
        held &= set(open_descriptors())
    print(sorted(held))
else:
    os.closerange(3, 1 << 16)
    with open("own.txt", "w") as own:
        for line in range(2000):
            own.write(f"line {line}\n")
            own.flush()
            busy(0.0005)
    with open("own.txt") as own:
        print("intact" if own.read() == "".join(f"line {line}\n" for line in range(2000)) else "overwritten")
for thread in threads:
    thread.join()

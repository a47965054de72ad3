"""A program short of something for a moment, as a server at its limit is, that then goes on.

    starved.py descriptors   opens files until none is left (EMFILE), calls visit() for 0.3 s holding
                             them all, closes them, then calls visit() 400,000 times more
    starved.py disk DIR      fills the file system of DIR until it is full (ENOSPC), calls visit()
                             400,000 times, and exits with status 3, the disk still full
    starved.py               calls visit() 400,000 times

It prints how often it called visit().
"""

import errno
import os
import sys
import time

calls = 0


def visit():
    global calls
    calls += 1


def visits(count):
    for _ in range(count):
        visit()


def hold_every_descriptor():
    held = []
    try:
        while True:
            held.append(os.open(os.devnull, os.O_RDONLY))
    except OSError as error:
        if error.errno != errno.EMFILE:
            raise
    end = time.monotonic() + 0.3
    while time.monotonic() < end:
        visits(100)
    for fd in held:
        os.close(fd)


def fill(directory):
    filler = os.open(os.path.join(directory, "filler"), os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(filler, b"x" * 4096)
    except OSError as error:
        if error.errno != errno.ENOSPC:
            raise
    os.close(filler)


what = sys.argv[1] if len(sys.argv) > 1 else ""
if what == "descriptors":
    hold_every_descriptor()
elif what == "disk":
    fill(sys.argv[2])
visits(400_000)
print(calls, flush=True)
if what == "disk":
    os._exit(3)

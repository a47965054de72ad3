"""Finds the name of its live channel taken (a directory there, as another user could make it: a name in
/dev/shm that this process cannot remove), measures itself live all the same, and prints whether
`tracetop top --list` lists it."""
import os
import subprocess
import sys

import tracetop

squatted = f"/dev/shm/tracetop-{os.geteuid()}-{os.getpid()}"
os.mkdir(squatted)
try:
    session = tracetop.start(output=sys.argv[1], live=True)
    listed = subprocess.run([sys.executable, "-m", "tracetop", "top", "--list"], capture_output=True, text=True)
    print("listed:", any(line.split()[:1] == [str(os.getpid())] for line in listed.stdout.splitlines()))
    session.stop()
finally:
    os.rmdir(squatted)

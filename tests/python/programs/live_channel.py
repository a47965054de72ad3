"""Says whether its live channel is there and with which permissions, then ends as asked: `return`,
`exit` (os._exit), `kill` (SIGKILL), or `wait` (for a line on stdin, then return)."""
import os
import signal
import stat
import sys

path = f"/dev/shm/tracetop-{os.geteuid()}-{os.getpid()}"
try:
    print(f"channel {stat.S_IMODE(os.stat(path).st_mode):o}", flush=True)
except FileNotFoundError:
    print("no channel", flush=True)
how = sys.argv[1]
if how == "exit":
    os._exit(3)
elif how == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
elif how == "wait":
    sys.stdin.readline()

"""Works for SECONDS (default 0) calling work(), prints how many calls were done 0.1 s and more before the
end, then ends as HOW says: return, exit-5, exit-message, os-exit-3, raise, interrupt, sigkill, sigsegv."""
import atexit
import os
import signal
import sys
import time


def work():
    return sum(range(100))


def work_for(seconds):
    start = time.perf_counter()
    calls = early_calls = 0
    while time.perf_counter() - start < seconds:
        work()
        calls += 1
        if time.perf_counter() - start < seconds - 0.1:
            early_calls = calls
    return early_calls


def fail(how):
    if how == "raise":
        try:
            {}["key"]
        except KeyError as error:
            raise ValueError("bad value") from error
    raise KeyboardInterrupt


def end(how):
    if how == "exit-5":
        sys.exit(5)
    if how == "exit-message":
        sys.exit("the message")
    if how == "os-exit-3":
        os._exit(3)
    if how in ("raise", "interrupt"):
        fail(how)
    if how == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    if how == "sigsegv":
        import ctypes
        ctypes.string_at(0)


def goodbye():
    print("atexit handler ran")


atexit.register(goodbye)
print(work_for(float(sys.argv[2]) if len(sys.argv) > 2 else 0), flush=True)
end(sys.argv[1])

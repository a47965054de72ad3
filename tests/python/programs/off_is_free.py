"""Started with --noinstrumenter, switches tracetop's recording of calls on and off in each way a program can
(nested too) while a second thread keeps calling f(). Prints, in each state, what the program can see of
tracetop's hook: threading's hook for new threads, sys.setprofile wrapped, the profiler's sys.monitoring tool.
The worker's f() is recorded at least twice (it is made to call it in each
state); in the main thread f() is recorded 3 times: once on, once inside g() after g switched back on (g ends after
it), once in the region `kept`; the regions `kept` and `inside` once each."""
import sys
import threading

import tracetop

SETPROFILE = sys.setprofile  # sys's own: the hook is away at the start


def threading_hooks():
    """threading's hooks for new threads: its globals, which tracetop's hook is in (threading.getprofile() and
    gettrace() answer what the program set)."""
    return threading._profile_hook, threading._trace_hook


def hooked():
    monitoring = getattr(sys, "monitoring", None)
    return (any(hook is not None for hook in threading_hooks()),
            sys.setprofile is not SETPROFILE,
            monitoring is not None and monitoring.get_tool(monitoring.PROFILER_ID) is not None)


def f():
    pass


started, stop, turn, taken = threading.Event(), threading.Event(), threading.Event(), threading.Event()


def worker():
    started.set()
    while not stop.is_set():
        f()
        if turn.is_set():
            f()  # in the state the main thread waits in
            turn.clear()
            taken.set()


def let_worker_call():
    """The main thread waits until the worker has called f() in the present state."""
    taken.clear()
    turn.set()
    taken.wait()


def g():
    with tracetop.instrumenter.disable():
        print("off", hooked())
        let_worker_call()
        f()
    f()


thread = threading.Thread(target=worker)
thread.start()
started.wait()
print("start", hooked())
with tracetop.instrumenter.enable():
    print("on", hooked())
    let_worker_call()
    f()
    g()
    tracetop.disable_recording()
    print("recording off", hooked())
    f()
    tracetop.enable_recording()
    with tracetop.region("kept"):
        with tracetop.instrumenter.disable():
            with tracetop.instrumenter.disable():
                print("nested off", hooked())
                with tracetop.region("inside"):
                    f()
            print("still off", hooked())
        print("on again", hooked())
        let_worker_call()
        f()
print("end", hooked())
stop.set()
thread.join()

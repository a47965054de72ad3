"""Two worker threads call one function per phase, in a loop: step_1 in phase 1, step_2 in phase 2 ...
The program moves to the next phase at each line on stdin; phase 2 also starts a third thread, `late`,
that calls late_step to the end. Once every thread made some calls in the new phase, it says `phase N`
and whether a hook is there (`hooked`, `unhooked`): threading's profile hook for new threads, or a
sys.monitoring tool (3.12+). It ends after phase 4."""
import sys
import threading
import time

CALLS = 200  # per thread and phase, at least, before the phase is announced
phase = 1
calls = {}  # (thread name, phase) -> calls made


def step_1(): return sum(range(50))
def step_2(): return sum(range(50))
def step_3(): return sum(range(50))
def step_4(): return sum(range(50))


STEPS = {1: step_1, 2: step_2, 3: step_3, 4: step_4}


def late_step(): return sum(range(50))


def work(step=None):
    name = threading.current_thread().name
    while phase <= 4:
        now = phase
        (step or STEPS[now])()
        calls[name, now] = calls.get((name, now), 0) + 1


def hooked():
    # threading's global, which tracetop's hook for new threads is in: threading.getprofile() answers what the
    # program set.
    monitoring = getattr(sys, "monitoring", None)
    return (threading._profile_hook is not None or
            monitoring is not None and any(monitoring.get_tool(tool) for tool in range(6)))


def announce():
    while any(calls.get((worker.name, phase), 0) < CALLS for worker in workers):
        time.sleep(0.001)
    print(f"phase {phase} {'hooked' if hooked() else 'unhooked'}", flush=True)


workers = [threading.Thread(target=work, name=f"worker-{n}") for n in range(2)]
for worker in workers:
    worker.start()
announce()
for line in sys.stdin:
    phase += 1
    if phase > 4:
        break
    if phase == 2:
        workers.append(threading.Thread(target=work, args=(late_step,), name="late"))
        workers[-1].start()
    announce()
phase = 5
for worker in workers:
    worker.join()

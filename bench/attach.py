"""How long `tracetop attach` takes to get into a running program, and to its first event.

    python bench/attach.py [--times 5]

A program started without tracetop (python -I -S: tracetop is not on its sys.path) runs threads that call
Python functions without pause, its main thread waking every 10 ms. It is attached to --times times in a
row, one second each. Per attach: from the command's start to the measurement running (and within it:
gdb's part, from its start to its end; when the program's main thread ran tracetop's bootstrap, the
pending call, and when the measurement started, both counted from gdb's start), and from the
measurement's start to the first event recorded after it. Prints a markdown table on stdout.

Then the program's speed before and after being attached to twice (tests/python/programs/attach_spin.py,
CPU-bound workers noting the CPU time of each batch of work): the least batch cost over three one-second
windows, paired with an identical copy never attached to over the same windows, so that the machine's load
weighs on both alike; after / before should be 1 (a hook left behind costs several times a batch).
"""

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tracetop import _reader

SPINNER = Path(__file__).resolve().parent.parent / "tests" / "python" / "programs" / "attach_spin.py"

PROGRAM = """
import threading, time
def work(n):
    return sum(i * i for i in range(n))
def loop():
    while True:
        work(1000)
for _ in range(2):
    threading.Thread(target=loop, daemon=True).start()
print("up", flush=True)
while True:
    time.sleep(0.01)
"""

DETAIL = re.compile(
    r"attaching took ([\d.]+) s: gdb ([\d.]+) s; the program ran tracetop's bootstrap at ([\d.]+) s, "
    r"measured from ([\d.]+) s"
)


def first_event_ms(experiment):
    """From the measurement's start to the first event after the calls that were running then."""
    trace = _reader.Trace(str(experiment))
    (process,) = trace.processes
    firsts = []
    for thread in process["threads"]:
        events, _, _ = trace.read_stream(0, thread["stream"])
        after = events[thread["open_at_start"] :]
        if after:
            firsts.append(after[0][1])
    return min(firsts) / 1e6


class Spinner:
    """attach_spin.py: each line on its stdin is answered with the least CPU time (µs) a batch took since."""

    def __init__(self):
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-S", str(SPINNER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout.readline() == "ready\n"

    def mark(self):
        self.process.stdin.write("\n")
        self.process.stdin.flush()
        return int(self.process.stdout.readline())


def relative_cost(measured, control, windows=3, seconds=1.0):
    """What a batch costs `measured` against `control` over the same windows (the least of each)."""
    costs = []
    for spinner in (measured, control):
        spinner.mark()
    for _ in range(windows):
        time.sleep(seconds)
        costs.append([spinner.mark() for spinner in (measured, control)])
    return min(cost[0] for cost in costs) / min(cost[1] for cost in costs)


def speed_after_detach():
    """(before, after): the attached program's batch cost relative to its twin, before and after two attaches."""
    measured, control = Spinner(), Spinner()
    try:
        before = relative_cost(measured, control)
        with tempfile.TemporaryDirectory() as place:
            for n in range(2):
                subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "tracetop",
                        "attach",
                        str(measured.process.pid),
                        "--duration",
                        "2",
                        "--output",
                        str(Path(place) / f"exp{n}"),
                    ],
                    capture_output=True,
                    check=True,
                    cwd=place,
                )  # not the checkout, whose tracetop/ has no extension built
        return before, relative_cost(measured, control)
    finally:
        for spinner in (measured, control):
            spinner.process.kill()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--times", type=int, default=5)
    options = parser.parse_args()
    target = subprocess.Popen([sys.executable, "-I", "-S", "-c", PROGRAM], stdout=subprocess.PIPE, text=True)
    assert target.stdout.readline() == "up\n"
    rows = []
    try:
        with tempfile.TemporaryDirectory() as place:
            for n in range(options.times):
                experiment = Path(place) / f"exp{n}"
                done = subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "tracetop",
                        "attach",
                        str(target.pid),
                        "--duration",
                        "1",
                        "-v",
                        "--output",
                        str(experiment),
                    ],
                    capture_output=True,
                    text=True,
                    cwd=place,
                )
                found = DETAIL.search(done.stderr)
                if done.returncode != 0 or not found:
                    sys.exit(f"attach failed:\n{done.stderr}")
                rows.append([float(x) * 1000 for x in found.groups()] + [first_event_ms(experiment)])
                time.sleep(0.5)
    finally:
        target.kill()
    print("| | attach (ms) | gdb's part | bootstrap ran at | measuring from | first event after that (ms) |")
    print("|---|---|---|---|---|---|")
    for n, row in enumerate(rows, 1):
        print(f"| {n} | " + " | ".join(f"{value:.1f}" for value in row) + " |")
    medians = [statistics.median(column) for column in zip(*rows)]
    print("| median | " + " | ".join(f"**{value:.1f}**" for value in medians) + " |")
    before, after = speed_after_detach()
    print(
        f"\nbatch cost against an unattached twin: before {before:.3f}, after two attaches {after:.3f} "
        f"(after / before {after / before:.3f})"
    )


if __name__ == "__main__":
    main()

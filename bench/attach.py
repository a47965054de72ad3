"""How long `tracetop attach` takes to get into a running program, and to its first event.

    python bench/attach.py [--times 5]

A program started without tracetop (python -I -S: tracetop is not on its sys.path) runs threads that call
Python functions without pause, its main thread waking every 10 ms. It is attached to --times times in a
row, one second each. Per attach: from the command's start to the measurement running (and within it:
gdb's part, from its start to its end; when the program's main thread ran tracetop's bootstrap, the
pending call, and when the measurement started, both counted from gdb's start), and from the
measurement's start to the first event recorded after it. Prints a markdown table on stdout.
"""
import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tracetop import _tracetop

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

DETAIL = re.compile(r"attaching took ([\d.]+) s: gdb ([\d.]+) s; the program ran tracetop's bootstrap at ([\d.]+) s, "
                    r"measured from ([\d.]+) s")


def first_event_ms(experiment):
    """From the measurement's start to the first event after the calls that were running then."""
    trace = _tracetop.Trace(str(experiment))
    (process,) = trace.processes
    firsts = []
    for thread in process["threads"]:
        events, _, _ = trace.read_stream(0, thread["stream"])
        after = events[thread["open_at_start"]:]
        if after:
            firsts.append(after[0][1])
    return min(firsts) / 1e6


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
                done = subprocess.run([sys.executable, "-m", "tracetop", "attach", str(target.pid), "--duration", "1",
                                       "-v", "--output", str(experiment)], capture_output=True, text=True)
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


if __name__ == "__main__":
    main()

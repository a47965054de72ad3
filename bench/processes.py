"""What following child processes costs: the extra time to start (and end) a child process when the parent is
measured and the child is measured too, by the way the child is started.

    python bench/processes.py [--starts 20] [--runs 3]

For each way (os.fork, subprocess running python, multiprocessing's fork, spawn and forkserver start methods) a
driver program starts `--starts` children one after the other, each doing nothing, and times each start until the
child has ended (waitpid, join). It runs `--runs` times unmeasured (`python driver.py`) and measured
(`python -m tracetop --no-profile --output DIR driver.py`), alternating. The table gives the median time per child
over all starts of each, and the difference: what tracetop adds per child process, its session's start and stop
(trace folder, writer thread, definitions, writing out) included, and for a new interpreter the import of tracetop.
It also times the line of tracetop-follow.pth that every interpreter of the environment runs at startup, when
nothing is measured. Prints a markdown table on stdout; progress on stderr.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import timeit

WAYS = ("os.fork", "subprocess", "fork", "spawn", "forkserver")

DRIVER = """
import json, multiprocessing, os, subprocess, sys, time

def nothing():
    pass

def start(way):
    if way == "os.fork":
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    elif way == "subprocess":
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    else:
        process = multiprocessing.get_context(way).Process(target=nothing)
        process.start()
        process.join()

if __name__ == "__main__":
    way, starts = sys.argv[1], int(sys.argv[2])
    start(way)  # the first start of a way pays for imports, servers and helper processes
    times = []
    for _ in range(starts):
        begin = time.perf_counter()
        start(way)
        times.append(time.perf_counter() - begin)
    print(json.dumps(times))
"""

PTH_LINE = 'os.environ.get("TRACETOP_FOLLOW_INTO") and __import__("tracetop.child").child.start()'


def times(command, cwd):
    env = {name: value for name, value in os.environ.items() if not name.startswith(("TRACETOP_", "SCOREP_"))}
    completed = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    if completed.returncode != 0:
        sys.exit(f"failed: {' '.join(command)}\n{completed.stderr}")
    return json.loads(completed.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--starts", type=int, default=20, help="children started per run (default: 20)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each kind (default: 3)")
    options = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        driver = os.path.join(scratch, "driver.py")
        with open(driver, "w") as file:
            file.write(DRIVER)
        for way in WAYS:
            plain, measured = [], []
            for run in range(options.runs):
                print(f"{way}: run {run + 1} of {options.runs}", file=sys.stderr, flush=True)
                plain += times([sys.executable, driver, way, str(options.starts)], scratch)
                output = os.path.join(scratch, f"exp-{way}-{run}")
                measured += times(
                    [
                        sys.executable,
                        "-m",
                        "tracetop",
                        "--no-profile",
                        "--output",
                        output,
                        driver,
                        way,
                        str(options.starts),
                    ],
                    scratch,
                )
                processes = len(os.listdir(os.path.join(output, "trace")))
                if processes < options.starts + 2:
                    sys.exit(f"{way}: only {processes} processes measured")
            rows.append((way, statistics.median(plain) * 1e3, statistics.median(measured) * 1e3))
    pth = min(timeit.repeat(PTH_LINE, setup="import os", number=100000, repeat=5)) / 100000 * 1e6

    print(
        f"Child process start and end, median of {options.runs} x {options.starts} starts "
        f"(Python {sys.version.split()[0]}, {os.cpu_count()} cores)\n"
    )
    print("| started by | unmeasured (ms) | measured (ms) | tracetop adds (ms) |")
    print("|---|---:|---:|---:|")
    for way, plain, measured in rows:
        name = way if way in ("os.fork", "subprocess") else f"multiprocessing {way}"
        print(f"| {name} | {plain:.2f} | {measured:.2f} | {measured - plain:+.2f} |")
    print(f"\ntracetop-follow.pth, in every interpreter of the environment when nothing is measured: {pth:.3f} µs")


if __name__ == "__main__":
    main()

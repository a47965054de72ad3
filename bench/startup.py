"""What tracetop adds to the start of a Python process: `tracetop run -c pass`, `python -m tracetop run -c
pass` and a followed child (TRACETOP_FOLLOW_INTO set, `python -c pass`), against `python -c pass`.

    python bench/startup.py [--runs 15]

Prints, for each, the instructions over `python -c pass` (perf or valgrind, as run.py counts them), the
median of paired wall-clock differences (each run of it right after one of `python -c pass`) and the median
of the paired differences in CPU time (user + system, of the process and its threads), which a loaded
machine disturbs less than the wall clock."""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import run

PY = sys.executable
TRACETOP = str(Path(PY).with_name("tracetop"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="paired wall-clock runs (default 15)")
    args = parser.parse_args()
    counter = run.instruction_counter()
    with tempfile.TemporaryDirectory(prefix="tracetop-startup-") as tmp:
        work = Path(tmp)
        parent = work / "parent"  # the experiment a followed child joins
        # Run in the temporary directory: `python -m tracetop` in the repository would import its sources.
        subprocess.run(
            [TRACETOP, "run", "--output", str(parent), "-c", "pass"], check=True, capture_output=True, cwd=work
        )
        cases = {
            "tracetop run -c pass": lambda out: [TRACETOP, "run", "--output", str(out), "-c", "pass"],
            "python -m tracetop run -c pass": lambda out: [
                PY,
                "-m",
                "tracetop",
                "run",
                "--output",
                str(out),
                "-c",
                "pass",
            ],
            "followed child (python -c pass)": lambda out: [PY, "-c", "pass"],
        }
        env = {**os.environ, "TRACETOP_FOLLOW_INTO": str(parent)}

        def argv_env(name, n):
            out = work / f"exp{n}"
            return cases[name](out), (env if name.startswith("followed") else os.environ)

        def instructions(argv, environ):
            run.ENV = environ  # what run.execute runs with
            return run.count_instructions(counter, argv, work).instructions

        plain = instructions([PY, "-c", "pass"], os.environ)
        print(f"Python {sys.version.split()[0]}; `python -c pass`: {plain / 1e6:.1f} M instructions ({counter})\n")
        print("| what | instructions over python -c pass | paired wall median (ms) | paired CPU median (ms) |")
        print("|---|---:|---:|---:|")
        for n, name in enumerate(cases):
            argv, environ = argv_env(name, n)
            extra = instructions(argv, environ) - plain
            walls, cpus = [], []
            for r in range(args.runs):
                base_wall, base_cpu = timed([PY, "-c", "pass"], os.environ, work)
                wall, cpu = timed(*argv_env(name, f"{n}-{r}"), work)
                walls.append(wall - base_wall)
                cpus.append(cpu - base_cpu)
            print(
                f"| {name} | +{extra / 1e6:.1f} M | {statistics.median(walls) * 1e3:+.1f} | "
                f"{statistics.median(cpus) * 1e3:+.1f} |",
                flush=True,
            )


def timed(argv, environ, cwd):
    """Runs argv; returns (wall-clock seconds, CPU seconds of the process)."""
    start = time.perf_counter()
    process = subprocess.Popen(argv, env=environ, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise run.Failed(f"{' '.join(argv)} exited with {process.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    try:
        main()
    except run.Failed as failure:
        sys.exit(f"startup.py: {failure}")

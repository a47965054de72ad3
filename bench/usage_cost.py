"""What recording garbage collections, sampling threads and telling asyncio tasks costs a traced program,
in instructions.

    python bench/usage_cost.py [--workloads allocations,threads,fib,asyncio_tasks]

Runs each workload under `tracetop run --no-profile` in valgrind's callgrind (every thread, user space)
and reports the instructions spent, inclusively, in the GC callback (gc.c: on_collection, what CPython
runs it through included), in the writer's sampling (sampler.c: tt_sampler_tick) and in telling which
asyncio task a coroutine's resume belongs to (tasks.c: tt_task_resume, asyncio's table and a new task's
name and weak reference included), as a share of all the run's instructions. Under valgrind the program runs some 50 times slower while the sampler keeps its
wall-clock rate, so the sampler's share here is an overestimate of its share at full speed.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Beside the repository, as run.py has them; or beside the directory of a git worktree.
WORKLOADS = next(
    (p for p in (HERE.parents[1] / "shared" / "workloads", HERE.parents[2] / "shared" / "workloads") if p.is_dir()),
    HERE.parents[1] / "shared" / "workloads",
)
OWN_WORKLOADS = HERE / "workloads"  # bench's own (asyncio_tasks)
SIZES = {"allocations": 45000, "threads": 3000, "fib": 20, "objects": 40, "asyncio_tasks": 500}
FUNCTIONS = {"GC callback": "on_collection", "thread sampling": "tt_sampler_tick", "asyncio tasks": "tt_task_resume"}


def measure(workload, size, where):
    out = where / f"{workload}.callgrind"
    script = OWN_WORKLOADS / f"{workload}.py"
    script = script if script.is_file() else WORKLOADS / f"{workload}.py"
    command = [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={out}",
        sys.executable,
        "-m",
        "tracetop",
        "run",
        "--no-profile",
        "--output",
        str(where / workload),
        str(script),
        str(size),
    ]
    # Run from elsewhere: in the repository, `-m tracetop` would find the source tree, not what is installed.
    subprocess.run(command, check=True, capture_output=True, cwd=where, env={**os.environ, "PYTHONHASHSEED": "0"})
    text = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(out)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    total = int(re.search(r"^([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS", text, re.M).group(1).replace(",", ""))
    costs = {}
    for label, function in FUNCTIONS.items():
        found = re.search(rf"^\s*([\d,]+) \([^)]*\)\s+\S*:{function} ", text, re.M)
        costs[label] = int(found.group(1).replace(",", "")) if found else 0
    return total, costs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default="allocations,threads,fib,asyncio_tasks")
    names = parser.parse_args().workloads.split(",")
    print("| workload | instructions | GC callback | thread sampling | asyncio tasks | together |")
    print("|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as where:
        for name in names:
            total, costs = measure(name, SIZES[name], Path(where))
            shares = [100 * costs[label] / total for label in FUNCTIONS]
            print(
                f"| {name} {SIZES[name]} | {total:,} | {shares[0]:.3f} % | {shares[1]:.3f} % | {shares[2]:.3f} % | "
                f"{sum(shares):.3f} % |",
                flush=True,
            )


if __name__ == "__main__":
    main()

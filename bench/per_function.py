"""Where a default `tracetop run` spends its instructions over the floor, function by function, per event.

    python bench/per_function.py WORKLOAD SMALL LARGE [--thread N] [--top 25]

Runs WORKLOAD (bench/workloads or the shared workloads, as bench/run.py finds them) at the two sizes under
`valgrind --tool=callgrind --separate-threads=yes`, once as `tracetop run` and once under the floor (the empty
C hook of bench/hook.py), and prints per function (self cost, all threads, or thread N: 1 is the main one) the
instructions of LARGE minus SMALL divided by the events between them, tracetop's minus the floor's: the
functions the table's ratio comes from. Instruction counts are exact, so one run of each suffices; under
valgrind a program runs ~50 times slower, so its clock deltas take the record forms of long ones.
"""

import argparse
import collections
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import run as bench  # bench/run.py: the workloads, the floor's command, the events of a trace

COST = re.compile(r"^\s*([\d,]+) \([^)]*\)\s+(\S.*?)(?: \[(.*)\])?$")


def function_costs(out_file):
    """Self instructions per function of one callgrind output file."""
    report = subprocess.run(
        ["callgrind_annotate", "--threshold=100", "--inclusive=no", str(out_file)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    costs = collections.Counter()
    for line in report.splitlines():
        match = COST.match(line)
        if match and ":" in match.group(2):
            name = match.group(2).rsplit("/", 1)[-1]
            if name.startswith("???:") and match.group(3):  # no symbol: an address, named by its object
                name += " in " + match.group(3).rsplit("/", 1)[-1]
            costs[name] += int(match.group(1).replace(",", ""))
    return costs


def callgrind(argv, workdir, name, thread):
    """Runs argv under callgrind; the self costs of its threads (or of thread `thread` alone) together."""
    subprocess.run(
        ["valgrind", "--tool=callgrind", "--separate-threads=yes", f"--callgrind-out-file={workdir / name}.%p", *argv],
        cwd=workdir,
        env=bench.ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    costs = collections.Counter()
    for out_file in workdir.glob(f"{name}.*-*"):
        if thread is None or int(out_file.name.rsplit("-", 1)[1]) == thread:
            costs.update(function_costs(out_file))
    return costs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload")
    parser.add_argument("small", type=int)
    parser.add_argument("large", type=int)
    parser.add_argument("--thread", type=int, help="only this thread's functions (1: the main thread)")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    script = bench.workload(args.workload)
    if not script.is_file():
        sys.exit(f"per_function.py: no workload {script}")
    bench.hook.build()
    with tempfile.TemporaryDirectory(prefix="tracetop-per-function-") as tmp:
        workdir = Path(tmp)
        costs, events = {}, {}
        for size in (args.small, args.large):
            argv, trace = bench.command("tracetop+summary", script, size, workdir / f"tracetop-{size}", 0)
            (workdir / f"tracetop-{size}").mkdir()
            costs["tracetop", size] = callgrind(argv, workdir, f"tracetop-{size}", args.thread)
            events[size] = bench.traced_events(trace)
            costs["floor", size] = callgrind(
                bench.command("floor", script, size, workdir, 0)[0], workdir, f"floor-{size}", args.thread
            )
    between = events[args.large] - events[args.small]
    difference = collections.Counter()
    for tool, sign in (("tracetop", 1), ("floor", -1)):
        difference.update({name: sign * cost for name, cost in costs[tool, args.large].items()})
        difference.update({name: -sign * cost for name, cost in costs[tool, args.small].items()})
    total = {
        tool: (sum(costs[tool, args.large].values()) - sum(costs[tool, args.small].values())) / between
        for tool in ("tracetop", "floor")
    }
    print(
        f"{args.workload} {args.small} -> {args.large}: {between:,} events between them; instructions per event:"
        f" tracetop {total['tracetop']:.1f}, floor {total['floor']:.1f}, over the floor "
        f"{total['tracetop'] - total['floor']:.1f}" + (f" (thread {args.thread})" if args.thread else "")
    )
    for name, cost in sorted(difference.items(), key=lambda item: -abs(item[1]))[: args.top]:
        if abs(cost) / between >= 0.1:
            print(f"{cost / between:8.1f}  {name}")


if __name__ == "__main__":
    sys.exit(main())

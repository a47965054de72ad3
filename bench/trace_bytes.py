"""Trace bytes per event of a default tracetop run, without the instruction counts of run.py (seconds, not
minutes): each workload at run.py's larger size, the events counted by bench/hook.py as run.py counts them.

    python bench/trace_bytes.py [--quick] [--workloads fib,threads] [--sizes threads=15000,fib=23]

Prints a markdown table: trace bytes ÷ events counted (run.py's `trace bytes/event`), ÷ events the trace
holds (a program's import of a module that bench/hook.py's runner had imported before it is in the
trace, not in the count: threads' import of threading), and defs.tts's share.
"""

import argparse
import sys
import tempfile
from pathlib import Path

import hook
from run import SIZES, WORKLOADS, Failed, command, execute, names, size_of, workload


def measure(name, size):
    """(events counted, events in the trace, trace bytes, defs.tts bytes) of `name.py size`."""
    import tracetop._reader as reader  # the running venv's tracetop

    script = workload(name)
    with tempfile.TemporaryDirectory(prefix="tracetop-bench-") as tmp:
        counted = execute([sys.executable, hook.__file__, "count", str(script), str(size)], Path(tmp))
        events = int(counted.stderr.rsplit(" ", 1)[-1])
        argv, trace = command("tracetop", script, size, Path(tmp), 0)
        ran = execute(argv, Path(tmp))
        if counted.stdout.strip() not in ran.stdout.splitlines():
            raise Failed("changed the program's output")
        recorded = sum(p["events"] for p in reader.Trace(str(trace.parent)).processes)
        return events, recorded, size_of(trace), sum(f.stat().st_size for f in trace.rglob("defs.tts"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="run.py --quick's sizes")
    parser.add_argument("--workloads", type=names(SIZES), default=list(SIZES), help="comma-separated")
    parser.add_argument(
        "--sizes",
        type=lambda text: dict(item.split("=") for item in text.split(",")),
        default={},
        help="sizes instead of run.py's larger ones: name=size,...",
    )
    args = parser.parse_args()
    if not WORKLOADS.is_dir():
        sys.exit(f"trace_bytes.py: no workloads at {WORKLOADS} (../shared/workloads, beside the repository)")
    hook.build()
    print(
        "| workload | events counted | events in the trace | trace bytes | bytes/event counted "
        "| bytes/event in the trace | defs.tts bytes/event |\n|---|---:|---:|---:|---:|---:|---:|"
    )
    for name in args.workloads:
        size = args.sizes.get(name, SIZES[name][1 if args.quick else 0][1])
        try:
            events, recorded, total, defs = measure(name, size)
        except Failed as failure:
            print(f"| {name} {size} | failed: {failure} | | | | | |")
            continue
        print(
            f"| {name} {size} | {events:,} | {recorded:,} | {total:,} | {total / events:.2f} "
            f"| {total / recorded:.2f} | {defs / events:.3f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()

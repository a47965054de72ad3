"""Checks that tracetop records every call of a long program within its memory budget.

    python bench/lossless.py [--calls N] [--memory SIZE]

Runs a program of 4 x N profile events (by default over 50 million) under `python -m tracetop`
with the default budget (or --memory SIZE), then compares the ENTER events recorded for its
two hot regions with the calls it made, which are known exactly. Prints the events, seconds,
peak RSS and the times tracetop's writer made the program wait; exits 1 when a count differs.
"""

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tracetop import _reader

# Per iteration one call of lossless_tiny and one of the builtin math.gcd: four profile events
# (call, return, c_call, c_return), and one ENTER in each of the two regions.
PROGRAM = """\
import math
import sys


def lossless_tiny(x):
    return x


def main(n):
    for i in range(n):
        lossless_tiny(i)
        math.gcd(i, 6)


main(int(sys.argv[1]))
"""
HOT = ("lossless_tiny", "gcd")


def enters(profile, qualname):
    """ENTER events of the regions named `module:qualname` (or `module:type.qualname`)."""
    return sum(r["visits"] for r in profile["regions"] if r["name"].rpartition(":")[2].rpartition(".")[2] == qualname)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=13_000_000, help="loop iterations (default 13,000,000)")
    parser.add_argument("--memory", help="tracetop's --memory budget (default: tracetop's own)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="tracetop-lossless-") as tmp:
        script, exp = Path(tmp) / "calls.py", Path(tmp) / "exp"
        script.write_text(PROGRAM)
        memory = ["--memory", args.memory] if args.memory else []
        print(f"tracing some {4 * args.calls:,} events ...", file=sys.stderr, flush=True)
        start = time.perf_counter()
        # In tmp, where no source tree shadows the installed tracetop.
        subprocess.run(
            [sys.executable, "-m", "tracetop", "--output", str(exp), *memory, str(script), str(args.calls)],
            cwd=tmp,
            check=True,
        )
        seconds = time.perf_counter() - start
        peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        process = _reader.Trace(str(exp)).processes[0]
        profile = _reader.profile(str(exp))
        config = dict(line.split("=", 1) for line in (exp / "config.txt").read_text().splitlines() if "=" in line)

    print(f"events    {process['events']:,}")
    print(f"seconds   {seconds:.1f}")
    budget_mib = int(config["TRACETOP_TOTAL_MEMORY"]) / 2**20
    print(f"peak RSS  {peak_mib:.1f} MiB, the whole process (tracetop's budget, --memory: {budget_mib:.1f} MiB)")
    print(f"waits     {process['waits']:,} ({process['wait_ns'] / 1e9:.3f} s in all)")
    recorded = {qualname: enters(profile, qualname) for qualname in HOT}
    for qualname, count in recorded.items():
        verdict = "ok" if count == args.calls else "DIFFERS"
        print(f"{qualname:<14}{count:,} ENTER events for {args.calls:,} calls: {verdict}")
    sys.exit(0 if all(count == args.calls for count in recorded.values()) else 1)


if __name__ == "__main__":
    main()

"""Converter throughput: events per second, output bytes per event and peak RSS of `tracetop convert` for
every format, and of `tracetop score`, at two trace sizes.

    python bench/convert.py [--calls N] [--formats otf2,chrome] [--objects]

Traces a program of 4 x N events, and 4 x N/4, with `python -m tracetop`, then converts each trace to each
format in a fresh process, timed (wall clock) and waited for with wait4 (peak RSS of exactly that process).
The converters stream from the reader, so the peak RSS of the larger trace should be that of the smaller.
--objects traces with objects counted, so that the traces hold OBJECTS records for the converters to carry.
Prints a markdown table and writes it to bench/results/convert.md.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tracetop import _reader

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "convert.md"

# Per iteration: a Python call and a builtin call (4 events); every 1000th also sets a parameter and a
# counter inside a user region.
PROGRAM = """\
import math
import sys

import tracetop


def tiny(x):
    return x


def main(n):
    for i in range(n):
        tiny(i)
        math.gcd(i, 6)
        if i % 1000 == 0:
            with tracetop.region("batch"):
                tracetop.parameter_int("i", i)
                tracetop.counter("progress", i / n)


main(int(sys.argv[1]))
"""


def timed(argv, cwd):
    """(seconds, peak RSS in MiB) of one process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"convert.py: {' '.join(map(str, argv))} failed: {proc.stderr.read().decode().strip()}")
    proc.stderr.close()
    return seconds, usage.ru_maxrss / 1024


def size_of(path):
    """Bytes of a file, or of an OTF2 archive (anchor, NAME.def, NAME.marker, NAME/)."""
    if path.suffix != ".otf2":
        return path.stat().st_size
    stem = path.with_suffix("")
    parts = [path, stem.with_suffix(".def"), stem.with_suffix(".marker")]
    return sum(p.stat().st_size for p in parts if p.exists()) + sum(
        f.stat().st_size for f in stem.rglob("*") if f.is_file()
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2_000_000, help="loop iterations of the larger trace")
    parser.add_argument("--formats", default=",".join(_reader.FORMATS), help="comma-separated")
    parser.add_argument("--objects", action="store_true", help="trace with objects counted (tracetop run --objects)")
    args = parser.parse_args()
    formats = args.formats.split(",")
    tool = [sys.executable, "-m", "tracetop"]
    lines = [
        "| trace events | format | seconds | events/s | output bytes/event | peak RSS (MiB) |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    with tempfile.TemporaryDirectory(prefix="tracetop-convert-") as tmp:
        tmp = Path(tmp)
        (tmp / "calls.py").write_text(PROGRAM)
        for calls in (args.calls // 4, args.calls):
            exp = tmp / f"exp{calls}"
            print(f"tracing {calls:,} iterations ...", file=sys.stderr, flush=True)
            subprocess.run(
                [
                    *tool,
                    "--no-profile",
                    *(["--objects"] if args.objects else []),
                    "--output",
                    str(exp),
                    "calls.py",
                    str(calls),
                ],
                cwd=tmp,
                check=True,
                stderr=subprocess.DEVNULL,
            )
            events = _reader.Trace(str(exp)).processes[0]["events"]
            for format in formats:
                out = tmp / f"out{calls}" / _reader.default_name(format)
                out.parent.mkdir(exist_ok=True)
                print(f"  {format} ...", file=sys.stderr, flush=True)
                seconds, rss = timed([*tool, "convert", str(exp), "--to", format, "-o", str(out)], tmp)
                lines.append(
                    f"| {events:,} | {format} | {seconds:.2f} | {events / seconds:,.0f} | "
                    f"{size_of(out) / events:.2f} | {rss:.1f} |"
                )
            seconds, rss = timed([*tool, "score", str(exp)], tmp)
            lines.append(f"| {events:,} | (score) | {seconds:.2f} | {events / seconds:,.0f} | – | {rss:.1f} |")
    report = "\n".join(lines)
    print(report)
    RESULTS.parent.mkdir(exist_ok=True)
    counted = ", objects counted" if args.objects else ""
    RESULTS.write_text(
        f"# converter throughput\n\nPython {sys.version.split()[0]}, {os.cpu_count()} CPUs{counted}.\n\n{report}\n"
    )


if __name__ == "__main__":
    main()

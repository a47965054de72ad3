"""What the viewer's objects views cost: the index of a run with --objects against the same run without, and the
queries the objects views ask (the objects of the whole run and of a tenth of it, per region and type and per call
path).

    python bench/viewer_objects.py [--rounds 1000000] [--queries 20]

Runs a loop making lists, dicts, strs and ints, some kept (as /work/shared/workloads/allocations.py does), with and
without --objects; prints a markdown table.
"""
import argparse
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from tracetop import _tracetop

PROGRAM = textwrap.dedent("""
    import sys

    def churn(rounds):
        keep = []
        for r in range(rounds):
            row = [r, r + 1, r + 2]
            d = {"r": r, "row": row}
            s = "value-%d" % r
            if r % 100 == 0:
                keep.append((d, s))
        return len(keep)

    def main(rounds):
        for part in range(10):
            churn(rounds // 10)

    main(int(sys.argv[1]))
""")


def timed(call, times):
    """Median seconds of `times` calls."""
    seconds = []
    for _ in range(times):
        start = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=20)
    options = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        program = Path(work) / "churn.py"
        program.write_text(PROGRAM)
        for objects in (False, True):
            experiment = Path(work) / ("objects" if objects else "plain")
            subprocess.run([sys.executable, "-m", "tracetop", "run", *(["--objects"] if objects else []), "--output",
                            str(experiment), str(program), str(options.rounds)], check=True, stdout=subprocess.DEVNULL)
            start = time.perf_counter()
            index = _tracetop.Index(str(experiment))
            build = time.perf_counter() - start
            size = (experiment / "view.idx").stat().st_size
            label = "with --objects" if objects else "without"
            rows.append((f"index build, {label}", f"{build:.2f} s; view.idx {size / 2**20:.2f} MiB"))
            if not objects:
                continue
            lanes = list(range(len(index.lanes)))
            t0, t1 = index.begin_ns, index.end_ns + 1
            tenth = (t0 + (t1 - t0) * 4 // 10, t0 + (t1 - t0) * 5 // 10)
            types = sum(track["kind"] == "objects" for track in index.tracks)
            rows.append(("objects tracks (types)", str(types)))
            for what, (a, b) in (("whole run", (t0, t1)), ("a tenth", tenth)):
                rows.append((f"objects per region and type, {what}",
                             f"{timed(lambda: index.objects(a, b, lanes), options.queries) * 1e3:.2f} ms"))
                rows.append((f"objects per call path, {what}",
                             f"{timed(lambda: index.tree_objects(a, b, lanes), options.queries) * 1e3:.2f} ms"))
                rows.append((f"call tree alone (for comparison), {what}",
                             f"{timed(lambda: index.tree(a, b, lanes), options.queries) * 1e3:.2f} ms"))
    print(f"rounds: {options.rounds}\n\n| measure | value |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()

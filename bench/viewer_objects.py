"""What the viewer's objects views cost: the index of a run with --objects against the same run without, and the
queries the objects views ask (the objects of the whole run and of a tenth of it, per region and type and per call
path).

    python bench/viewer_objects.py [--seconds 5] [--queries 20]

Runs for --seconds a loop over 200 functions, each making an instance of a class of its own, a list, a dict and a
tuple (some kept a while): some 800 places that make objects, each recorded every 100 ms. With and without
--objects; prints a markdown table.
"""

import argparse
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from tracetop import _reader

PROGRAM = textwrap.dedent("""
    import sys
    import time

    FUNCTIONS = 200
    for i in range(FUNCTIONS):  # f0 .. f199, each making an instance of its own class, a list, a dict and a tuple
        exec(f"class C{i}: pass\\ndef f{i}(keep):\\n    keep.append((C{i}(), [], {{}}))", globals())

    def main(seconds):
        keep, makers = [], [globals()[f"f{i}"] for i in range(FUNCTIONS)]
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            for make in makers:
                make(keep)
            if len(keep) > 20_000:
                keep.clear()

    main(float(sys.argv[1]))
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
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--queries", type=int, default=20)
    options = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        program = Path(work) / "churn.py"
        program.write_text(PROGRAM)
        for objects in (False, True):
            experiment = Path(work) / ("objects" if objects else "plain")
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "tracetop",
                    "run",
                    *(["--objects"] if objects else []),
                    "--output",
                    str(experiment),
                    str(program),
                    str(options.seconds),
                ],
                check=True,
                stdout=subprocess.DEVNULL,
                cwd=work,
            )  # not a checkout, whose tracetop/ would come before the installed one
            start = time.perf_counter()
            index = _reader.Index(str(experiment))
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
            records = index.objects(t0, t1, lanes)
            rows.append(("objects tracks (types); places", f"{types}; {int.from_bytes(records[:4], 'little')}"))
            for what, (a, b) in (("whole run", (t0, t1)), ("a tenth", tenth)):
                rows.append(
                    (
                        f"objects per region and type, {what}",
                        f"{timed(lambda: index.objects(a, b, lanes), options.queries) * 1e3:.2f} ms",
                    )
                )
                rows.append(
                    (
                        f"objects per call path, {what}",
                        f"{timed(lambda: index.tree_objects(a, b, lanes), options.queries) * 1e3:.2f} ms",
                    )
                )
                rows.append(
                    (
                        f"call tree alone (for comparison), {what}",
                        f"{timed(lambda: index.tree(a, b, lanes), options.queries) * 1e3:.2f} ms",
                    )
                )
    print(f"{options.seconds} s of making objects\n\n| measure | value |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()

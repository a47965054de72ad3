"""The viewer's index of an experiment through the Python API, in CPU time (a loaded machine's wall clock is not
the index's): the index built and loaded, then the queries a viewer asks at level 0 (every call: the trace's own
chunks, lod_file.h), of the whole run, of ranges, of one call, and a search. bench/README.md ("view.idx size
(index version 10)") has what it measured.

    python bench/viewer_queries.py EXP     # EXP: e.g. bench/viewer.py's DIR/viewer-30000000
"""

import random
import statistics
import sys
import time
from pathlib import Path

from tracetop import _reader

WIDTH = 1600  # pixels of a view, as bench/viewer.py's


def timed(fn, count):
    times = []
    for _ in range(count):
        started = time.process_time()
        fn()
        times.append(time.process_time() - started)
    return times


def percentiles(times):
    times = sorted(times)
    return (
        f"p50 {statistics.median(times) * 1e3:.2f} ms, p99 {times[max(0, int(len(times) * 0.99) - 1)] * 1e3:.2f} ms,"
        f" max {times[-1] * 1e3:.2f} ms"
    )


def main():
    experiment = Path(sys.argv[1])
    (experiment / "view.idx").unlink(missing_ok=True)
    started = time.process_time()
    built = _reader.Index(str(experiment))
    build = time.process_time() - started
    del built
    started = time.process_time()
    index = _reader.Index(str(experiment))
    load = time.process_time() - started
    trace = sum(f.stat().st_size for f in (experiment / "trace").rglob("*") if f.is_file())
    size = (experiment / "view.idx").stat().st_size
    print(
        f"index build {build:.2f} s, load {load * 1e3:.1f} ms; view.idx {size / 2**20:.2f} MiB, {size / trace:.4f} "
        f"of the trace's {trace / 2**20:.1f} MiB; {index.levels} levels"
    )
    lanes = list(range(len(index.lanes)))
    begin, end = index.begin_ns, index.end_ns
    place = random.Random(1)

    def level0():
        width = 40_000  # 25 ns a pixel
        t0 = place.randrange(begin, end - 3 * width)
        assert index.level_for(t0, t0 + width, WIDTH) == 0
        index.spans(t0, t0 + 3 * width, 3 * WIDTH, lanes)

    def tree():
        t0 = place.randrange(begin, end - 2_000_000)
        index.tree(t0, t0 + 2_000_000, lanes)

    tenth = begin + (end - begin) // 2
    leaf = [i for i, region in enumerate(index.regions) if region["name"].endswith(":leaf")]
    print("level-0 view (40 us, three views wide):", percentiles(timed(level0, 200)))
    print("view of the whole run:", percentiles(timed(lambda: index.spans(begin, end + 1, WIDTH, lanes), 50)))
    print("call tree of 2 ms:", percentiles(timed(tree, 50)))
    print("call tree of a tenth:", percentiles(timed(lambda: index.tree(tenth, tenth + (end - begin) // 10, lanes), 3)))
    print("call_at depth 2:", percentiles(timed(lambda: index.call_at(0, 2, place.randrange(begin, end)), 200)))
    print("call_at depth 1 (the whole run):", percentiles(timed(lambda: index.call_at(0, 1, (begin + end) // 2), 3)))
    if leaf:
        print(
            "search of :leaf over the whole run:",
            percentiles(timed(lambda: index.spans(begin, end + 1, WIDTH, lanes, only=leaf, limit=500_000), 3)),
        )
    print("read problem:", index.read_problem)


if __name__ == "__main__":
    main()

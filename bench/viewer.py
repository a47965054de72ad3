"""Benchmarks the viewer on a large experiment: index build and load, viewport queries, first paint, the profile
tab and the frame times of a scripted pan in Chromium; and `convert` of a time range.

    python bench/viewer.py [--events 10000000] [--queries 300] [--cache DIR]

Makes (once, in bench/.cache/) an experiment of about --events events: three threads calling nested Python
functions and builtins. Prints a markdown table on stdout and writes it to bench/results/viewer.md; progress
goes to stderr. bench/README.md says what each number means.
"""

import argparse
import http.client
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.parse
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"
RESULTS = HERE / "results" / "viewer.md"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGUMENTS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
WIDTH = 1600  # pixels of the timeline, as on a laptop screen

# Each iteration of `step` makes 6 calls (12 events): 3 Python functions and 3 builtins.
PROGRAM = textwrap.dedent("""\
    import sys, threading

    def leaf(x):
        return abs(x) + len(str(x & 7))

    def middle(x):
        return leaf(x) + min(x, 3)

    def step(x):
        return middle(x) + 1

    def work(iterations):
        total = 0
        for i in range(iterations):
            total += step(i)
        return total

    iterations = int(sys.argv[1])
    threads = [threading.Thread(target=work, args=(iterations,), name="worker-%d" % k) for k in range(2)]
    for t in threads:
        t.start()
    work(iterations)
    for t in threads:
        t.join()
    print("viewer-bench", iterations)
""")


def progress(message):
    print(message, file=sys.stderr, flush=True)


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def make_experiment(events, cache=CACHE):
    """The experiment of about `events` events, made once and kept in `cache` (bench/.cache/)."""
    experiment = cache / f"viewer-{events}"
    if (experiment / "MANIFEST.md").exists() and (experiment / "trace").is_dir():
        return experiment
    shutil.rmtree(experiment, ignore_errors=True)
    cache.mkdir(exist_ok=True)
    iterations = max(1, events // (3 * 12))
    with tempfile.TemporaryDirectory() as where:
        script = Path(where) / "viewer_bench.py"
        script.write_text(PROGRAM)
        progress(f"recording {experiment.name}: 3 threads x {iterations} iterations ...")
        subprocess.run(
            [
                sys.executable,
                "-m",
                "tracetop",
                "--no-profile",
                "--output",
                str(experiment),
                str(script),
                str(iterations),
            ],
            check=True,
            cwd=where,
            stdout=subprocess.DEVNULL,
        )
    return experiment


def trace_bytes(experiment):
    return sum(f.stat().st_size for f in (experiment / "trace").rglob("*") if f.is_file())


def measure_index(experiment):
    from tracetop import _reader

    cache = experiment / "view.idx"
    if cache.exists():
        cache.unlink()
    started = time.perf_counter()
    built = _reader.Index(str(experiment))
    build_s = time.perf_counter() - started
    assert built.built, built.cache_problem
    del built
    started = time.perf_counter()
    index = _reader.Index(str(experiment))
    load_s = time.perf_counter() - started
    assert not index.built
    return index, build_s, load_s, cache.stat().st_size


def random_views(index, count, seed=1):
    """Viewports over the run: spans log-uniform from 20 us to the whole run, anywhere in it."""
    rng = random.Random(seed)
    begin, end = index.begin_ns, index.end_ns
    full = end - begin
    views = []
    for _ in range(count):
        span = int(min(full, 20_000 * (full / 20_000) ** rng.random()))
        t0 = begin + rng.randint(0, max(0, full - span))
        views.append((t0, t0 + max(1, span)))
    return views


def measure_queries(server, index, count):
    """Times of viewport queries through the server's HTTP API, as the viewer sends them (a window three views
    wide, every lane), in ms."""
    parts = urllib.parse.urlsplit(server.url)
    connection = http.client.HTTPConnection("127.0.0.1", parts.port, timeout=30)
    lanes = ",".join(str(i) for i in range(len(index.lanes)))
    times, sizes = [], []
    for t0, t1 in random_views(index, count):
        span = t1 - t0
        w0, w1 = max(index.begin_ns, t0 - span), min(index.end_ns + 1, t1 + span)
        width = min(65536, max(1, round(WIDTH * (w1 - w0) / span)))
        started = time.perf_counter()
        connection.request("GET", f"{parts.path}api/spans?t0={w0}&t1={w1}&width={width}&lanes={lanes}")
        response = connection.getresponse()
        body = response.read()
        times.append((time.perf_counter() - started) * 1000)
        assert response.status == 200
        sizes.append(len(body))
    started = time.perf_counter()
    connection.request("GET", f"{parts.path}api/tree?t0={index.begin_ns}&t1={index.end_ns + 1}&lanes={lanes}")
    connection.getresponse().read()
    tree_ms = (time.perf_counter() - started) * 1000
    connection.close()
    return times, sizes, tree_ms


def measure_convert(experiment, index):
    """`convert --from/--until` of the middle tenth of the run, to chrome and to perfetto: seconds, and the
    events read per second (the reader skips what comes before the range, and stops after it)."""
    from tracetop import _reader

    full = index.end_ns - index.begin_ns
    start, stop = index.begin_ns + int(0.45 * full), index.begin_ns + int(0.55 * full)
    rows = []
    with tempfile.TemporaryDirectory() as where:
        for format in ("chrome", "perfetto"):
            out = os.path.join(where, "out." + format)
            started = time.perf_counter()
            result = _reader.convert(str(experiment), format, out, start=start, stop=stop)
            seconds = time.perf_counter() - started
            rows.append((format, seconds, result["events"], os.path.getsize(out)))
    return rows


LOADS = 5  # page loads timed: first paint and the profile tab


def measure_load(page, server):
    """One load of the page: its first paint, when the whole run's tree is there, and a click on the profile tab
    then to its tables drawn (ms)."""
    page.goto(server.url)
    page.wait_for_function("window.tracetopViewer && window.tracetopViewer.ready()", timeout=60000)
    paint = page.evaluate("""() => {
        const mark = performance.getEntriesByName('tracetop-first-paint')[0].startTime;
        const nav = performance.getEntriesByType('navigation')[0];
        return {fromNavigation: mark, fromLoad: mark - nav.loadEventEnd, fromDomContentLoaded: mark - nav.domContentLoadedEventEnd};
    }""")
    # The profile tab: the whole run's tree is asked for after the first paint; once it is there, the tab opens on
    # it (the time to its first table).
    paint["tree_ready"] = page.evaluate("""() => new Promise((done) => {
        const mark = (name) => performance.getEntriesByName(name)[0];
        const wait = () => (mark('tracetop-tree') ? done(mark('tracetop-tree').startTime - mark('tracetop-first-paint').startTime)
                                                  : setTimeout(wait, 10));
        wait();
    })""")
    paint["tab_open"] = page.evaluate("""() => new Promise((done) => {
        const started = performance.now();
        document.querySelector('#tabs button[data-tab=profile]').click();
        const wait = () => (document.getElementById('flat-table') ? requestAnimationFrame(() => done(performance.now() - started))
                                                                 : setTimeout(wait, 1));
        wait();
    })""")
    paint["at_first_paint"] = paint["tree_ready"] + paint["tab_open"]
    return paint


def measure_browser(server):
    """First paint after the page loads and the profile tab (medians of LOADS loads), and the frames of a scripted
    pan, in Chromium."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGUMENTS)
        context = browser.new_context(bypass_csp=True, viewport={"width": WIDTH + 190, "height": 900})
        loads = []  # each a fresh page: the median of LOADS, the machine being shared
        for _ in range(LOADS):
            page = context.new_page()
            loads.append(measure_load(page, server))
            page.close()
        paint = {key: statistics.median(load[key] for load in loads) for key in loads[0]}
        page = context.new_page()
        page.goto(server.url)
        page.wait_for_function("window.tracetopViewer && window.tracetopViewer.ready()", timeout=60000)
        # Zoom to a tenth of the run in the middle, let the data come, then pan 1% of the view per frame for
        # 240 frames (2.4 views), about as fast as holding D pans; the draw of each frame is timed by the viewer itself.
        pan = page.evaluate("""() => new Promise((done) => {
            const v = tracetopViewer, s = v.state, full = s.end - s.begin;
            v.setView(s.begin + 0.45 * full, s.begin + 0.55 * full);
            const settle = () => (s.inflight.spans ? setTimeout(settle, 20) : start());
            setTimeout(settle, 50);
            function start() {
                s.frameTimes.length = 0;
                const intervals = [];
                let frames = 0, last = performance.now();
                function frame(now) {
                    intervals.push(now - last);
                    last = now;
                    if (frames++ === 240) return done({draw: s.frameTimes.slice(), intervals: intervals.slice(1)});
                    v.panBy(0.01);
                    requestAnimationFrame(frame);
                }
                requestAnimationFrame(frame);
            }
        })""")
        browser.close()
    return paint, pan


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--cache", type=Path, default=CACHE, help="where the experiment is made once and kept")
    arguments = parser.parse_args()

    from tracetop.viewer.server import ViewerServer

    experiment = make_experiment(arguments.events, arguments.cache)
    progress("building and loading the index ...")
    index, build_s, load_s, index_size = measure_index(experiment)
    calls = sum(lane["calls"] for lane in index.lanes)
    server = ViewerServer(str(experiment), index).start()
    try:
        progress(f"{arguments.queries} viewport queries ...")
        times, sizes, tree_ms = measure_queries(server, index, arguments.queries)
        if os.path.exists(CHROMIUM):
            progress("first paint and pan in Chromium ...")
            paint, pan = measure_browser(server)
        else:
            paint = pan = None
    finally:
        server.close()
    progress("convert a range ...")
    converted = measure_convert(experiment, index)

    rows = [
        (
            "experiment",
            f"{2 * calls:,} events ({calls:,} calls) in {len(index.lanes)} threads, "
            f"{(index.end_ns - index.begin_ns) / 1e9:.2f} s; trace {trace_bytes(experiment) / 2**20:.1f} MiB",
        ),
        ("index build (first view)", f"{build_s:.2f} s; view.idx {index_size / 2**20:.1f} MiB, {index.levels} levels"),
        ("index load (later views)", f"{load_s * 1000:.1f} ms"),
        (
            f"viewport query, {len(times)} random views, {WIDTH} px",
            f"p50 {percentile(times, 50):.1f} ms, "
            f"p95 {percentile(times, 95):.1f} ms, max {max(times):.1f} ms; answers p95 "
            f"{percentile(sizes, 95) / 1024:.0f} KiB",
        ),
        ("call tree of the whole run (profile tab; kept in view.idx)", f"{tree_ms:.1f} ms"),
    ]
    if paint:
        rows += [
            (
                f"first paint, after the load event (median of {LOADS} loads, as the rows below)",
                f"{paint['fromLoad']:.0f} ms ({paint['fromNavigation']:.0f} ms after navigation start)",
            ),
            ("profile tab: whole run's tree ready, after the first paint", f"{paint['tree_ready']:.0f} ms"),
            ("profile tab: open at the first paint (tree ready + tables drawn)", f"{paint['at_first_paint']:.0f} ms"),
            ("profile tab: open, once the tree is ready (to its tables drawn)", f"{paint['tab_open']:.0f} ms"),
            (
                "scripted pan, 240 frames: draw time per frame",
                f"median {statistics.median(pan['draw']):.1f} ms, "
                f"p95 {percentile(pan['draw'], 95):.1f} ms, max {max(pan['draw']):.1f} ms",
            ),
            (
                "scripted pan: time between frames",
                f"median {statistics.median(pan['intervals']):.1f} ms, p95 {percentile(pan['intervals'], 95):.1f} ms",
            ),
        ]
    else:
        rows.append(("browser", f"not measured: {CHROMIUM} is not installed"))
    for format, seconds, events, size in converted:
        rows.append(
            (
                f"convert --to {format} --from/--until the middle tenth of the run",
                f"{seconds:.2f} s, {events / seconds / 1e6:.1f} M events read/s; {size / 2**20:.1f} MiB written",
            )
        )
    table = ["| what | measured |", "|---|---|"] + [f"| {what} | {value} |" for what, value in rows]
    text = "\n".join(table) + "\n"
    print(text)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(text)


if __name__ == "__main__":
    main()

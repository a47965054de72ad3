"""What the live page (`tracetop view --live`) costs and how well it keeps up, in a headless Chromium.

    python bench/live_page.py [--quick] [--seconds 3] [--lanes-seconds 60] [--lanes]

Prints markdown tables on stdout and writes them to bench/results/live_page.md; progress goes to stderr.
bench/README.md says what each number means. Run it with the venv that has tracetop installed (and
Playwright, as `make test` installs it), with no other program running under `tracetop run --live`.
"""

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tracetop.viewer.live import LiveServer

import live
import run
from run import Failed, progress

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results" / "live_page.md"
CHROMIUM = "/usr/bin/chromium"
ARGUMENTS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
WORKLOAD = "fib"
RATES = (10_000_000, 20_000_000)
TRIES = 5
REQUESTS = ROOT / "tests" / "python" / "programs" / "thread_per_request.py"
THREADS_A_MINUTE = (200, 1200)


def channel(pid):
    return Path(f"/dev/shm/tracetop-{os.geteuid()}-{pid}")


def process_js(pid, what):
    return f"(() => {{ const p = window.ttLive.state.processes.get({pid}); return p ? {what} : null; }})()"


def open_page(browser, server):
    context = browser.new_context(bypass_csp=True, viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.goto(server if isinstance(server, str) else server.url)
    page.wait_for_function("window.ttLive && window.ttLive.state.serverNow > 0")
    return context, page


def cost(counter, sizes, browser):
    """Instructions per event of the workload under --live while top reads it, and while the page does."""
    script = run.WORKLOADS / f"{WORKLOAD}.py"
    events = live.workload_events(script, sizes)
    with_top, with_page = {}, {}
    for size in sizes:
        program = live.tracetop_run("--live", str(live.DRIVER), "attach", str(script), str(size))
        with tempfile.TemporaryDirectory(prefix="tracetop-bench-") as tmp:
            progress(f"{WORKLOAD} {size}: --live, top reading")
            with_top[size] = live.count_with_top(counter, program, Path(tmp))[0]
        with tempfile.TemporaryDirectory(prefix="tracetop-bench-") as tmp:
            progress(f"{WORKLOAD} {size}: --live, the page open")
            server = LiveServer([]).start()
            context, _ = open_page(browser, server)
            try:
                with_page[size] = live.count(counter, program, Path(tmp))
            finally:
                context.close()
                server.close()
    return live.per_event(with_top, events, sizes), live.per_event(with_page, events, sizes)


def keeping_up(browser, seconds, rate):
    """A producer hands `rate` events a second to the page (bench/live_top.c produce): the events sent, read
    by the page and dropped, and the page's frame times while it streams. The producer starts once the page
    shows it: another reader of every channel of the user (a `tracetop top`, a test's live server) may have
    been there first, and what went out before this server attached is not the page's to count."""
    build = ROOT / "build" / "c"
    subprocess.run(
        [str(Path(sys.executable).parent / "meson"), "compile", "-C", str(build), "live_top_bench"],
        check=True,
        stdout=sys.stderr,
    )
    producer = subprocess.Popen(
        [str(build / "live_top_bench"), "produce", str(seconds), str(rate)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    while not channel(producer.pid).exists():  # it sends once a reader is there
        if producer.poll() is not None:
            raise Failed("the producer did not start")
        time.sleep(0.001)
    # The server in a process of its own, as `tracetop view --live` runs (not beside Playwright's driver).
    server = subprocess.Popen(
        [sys.executable, "-m", "tracetop", "view", "--live", str(producer.pid), "--no-browser"],
        cwd=HERE,
        env=run.ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        context, page = open_page(browser, server.stdout.readline().strip())
        page.wait_for_function(process_js(producer.pid, "true"), timeout=60000)
        page.evaluate("window.ttLive.frameTimes.length = 0")
        sent = int(producer.communicate("go\n", timeout=seconds + 60)[0])
        page.wait_for_function(process_js(producer.pid, "p.state === 'ended'"), timeout=60000)
        read, dropped = page.evaluate(process_js(producer.pid, "[p.events, p.dropped]"))
        frames = page.evaluate("window.ttLive.frameTimes.slice()")
        context.close()
    finally:
        server.terminate()
        server.wait()
    return sent, read, dropped, frames


def lanes(browser, seconds, per_minute):
    """programs/thread_per_request.py starting `per_minute` threads a minute, on the page for `seconds`: the
    threads it made, the most lanes the page held and threads a frame listed at any one time, and the page's
    frame times (what it takes to draw one: its own counter, ttLive.frameTimes, read twice a second)."""
    with tempfile.TemporaryDirectory(prefix="tracetop-bench-") as tmp:
        program = subprocess.Popen(
            live.tracetop_run("--live", str(REQUESTS), str(per_minute / 60)),
            cwd=tmp,
            env=run.ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        while not channel(program.pid).exists():
            if program.poll() is not None:
                raise Failed("the program did not start")
            time.sleep(0.001)
        server = subprocess.Popen(
            [sys.executable, "-m", "tracetop", "view", "--live", str(program.pid), "--no-browser"],
            cwd=HERE,
            env=run.ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            context, page = open_page(browser, server.stdout.readline().strip())
            page.wait_for_function(process_js(program.pid, "true"), timeout=60000)
            page.evaluate("window.ttLive.frameTimes.length = 0")
            frames, most_lanes, most_listed = [], 0, 0
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                time.sleep(0.5)
                drawn, held, listed = page.evaluate(
                    f"[window.ttLive.frameTimes.splice(0), window.ttLive.state.lanes.size, "
                    f"{process_js(program.pid, 'p.threads.length')}]"
                )
                frames += drawn
                most_lanes, most_listed = max(most_lanes, held), max(most_listed, listed or 0)
            context.close()
        finally:
            server.terminate()
            server.wait()
            (Path(tmp) / "stop").touch()
            served = int(program.communicate(timeout=120)[0].split()[1])
    return served, most_lanes, most_listed, frames


def appearing(browser):
    """Milliseconds from a program's channel being made to the page showing the program, TRIES times."""
    times = []
    server = LiveServer([]).start()
    context, page = open_page(browser, server)
    try:
        for _ in range(TRIES):
            with tempfile.TemporaryDirectory(prefix="tracetop-bench-") as tmp:
                (Path(tmp) / "go").touch()
                program = subprocess.Popen(
                    live.tracetop_run("--live", "-c", "import time; time.sleep(3)"),
                    cwd=tmp,
                    env=run.ENV,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                while not channel(program.pid).exists():
                    time.sleep(0.0005)
                made = time.monotonic()
                page.wait_for_function(process_js(program.pid, "true"), polling=5, timeout=30000)
                times.append(1000 * (time.monotonic() - made))
                program.wait(timeout=60)
    finally:
        context.close()
        server.close()
    return times


def switching(browser):
    """Milliseconds from the page's on/off request to the program's answer, 2 * TRIES times."""
    busy = "import time\nend = time.time() + 30\nwhile time.time() < end:\n    sum(range(100))\n"
    with tempfile.TemporaryDirectory(prefix="tracetop-bench-") as tmp:
        program = subprocess.Popen(
            live.tracetop_run("--live", "-c", busy),
            cwd=tmp,
            env=run.ENV,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        while not channel(program.pid).exists():
            time.sleep(0.001)
        server = LiveServer([program.pid]).start()
        context, page = open_page(browser, server)
        try:
            page.wait_for_function(process_js(program.pid, "true"))
            times = []
            for toggle in range(2 * TRIES):
                times.append(
                    page.evaluate(f"""async () => {{
                    const t0 = performance.now();
                    await (await fetch('api/switch?pid={program.pid}&on={toggle % 2}')).json();
                    return performance.now() - t0;
                }}""")
                )
                time.sleep(0.1)
        finally:
            context.close()
            server.close()
            program.kill()
            program.wait()
    return times


def lanes_table(browser, seconds):
    lines = [
        "## Lanes: a thread per request\n",
        f"`tests/python/programs/thread_per_request.py` watched for {seconds:g} s (the page's window: 60 s).\n",
        "| threads a minute | threads made | most lanes on the page | most threads in a frame | frames drawn | "
        "median frame | 95th percentile frame |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for per_minute in THREADS_A_MINUTE:
        progress(f"a thread per request, {per_minute} a minute, {seconds:g} s")
        served, most_lanes, most_listed, frames = lanes(browser, seconds, per_minute)
        frames.sort()
        lines.append(
            f"| {per_minute} | {served:,} | {most_lanes} | {most_listed} | {len(frames)} | "
            f"{statistics.median(frames):.2f} ms | {frames[int(0.95 * (len(frames) - 1))]:.2f} ms |"
        )
        print(lines[-1], file=sys.stderr, flush=True)
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (run.py's --quick)")
    parser.add_argument("--seconds", type=float, default=3.0, help="of each streaming run (default 3)")
    parser.add_argument("--lanes-seconds", type=float, default=60.0, help="of each thread-per-request run (default 60)")
    parser.add_argument(
        "--lanes",
        action="store_true",
        help="only the thread-per-request runs, printed (they need neither perf nor the workloads)",
    )
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    if args.lanes:  # printed, not written: bench/results/live_page.md is the whole bench's
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGUMENTS)
            print(f"Python {platform.python_version()}, {os.cpu_count()} CPUs, Chromium headless.\n", flush=True)
            print(lanes_table(browser, args.lanes_seconds), flush=True)
            browser.close()
        return
    if not run.WORKLOADS.is_dir():
        sys.exit(f"live_page.py: no workloads at {run.WORKLOADS} (../shared/workloads, beside the repository)")
    counter = run.instruction_counter()
    if counter is None:
        sys.exit("live_page.py: counting instructions needs perf (with instructions:u) or valgrind")
    live.hook.build()

    report = [
        f"# tracetop live page benchmark\n\nPython {platform.python_version()} ({sys.executable}), "
        f"instructions by {counter}, {os.cpu_count()} CPUs{', --quick' if args.quick else ''}, "
        f"Chromium headless."
    ]
    print(report[0], flush=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGUMENTS)
        top, page = cost(counter, run.SIZES[WORKLOAD][1 if args.quick else 0], browser)
        report.append(
            "\n".join(
                [
                    "## The measured program's cost\n",
                    "| workload | --live, top reading | --live, the page open | added by the page |",
                    "|---|---:|---:|---:|",
                    f"| {WORKLOAD} | {top:.1f} | {page:.1f} | {100 * (page / top - 1):+.2f} % |",
                ]
            )
        )
        print(f"\n{report[-1]}", flush=True)

        lines = [
            "## The page keeping up\n",
            "| events a second sent | events sent | read by the page | dropped (counted) | "
            "frames drawn | median frame | 95th percentile frame |",
            "|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for rate in RATES:
            progress(f"the page at {rate / 1e6:.0f} M events a second")
            sent, read, dropped, frames = keeping_up(browser, args.seconds, rate)
            frames.sort()
            lines.append(
                f"| {rate / 1e6:.0f} M | {sent:,} | {read:,} | {dropped:,} | {len(frames)} | "
                f"{statistics.median(frames):.2f} ms | {frames[int(0.95 * (len(frames) - 1))]:.2f} ms |"
            )
            print(lines[-1], file=sys.stderr, flush=True)
        report.append("\n".join(lines))
        print(f"\n{report[-1]}", flush=True)

        report.append(lanes_table(browser, args.lanes_seconds))
        print(f"\n{report[-1]}", flush=True)

        progress("a program coming on the page; switching it off and on")
        shown, switched = appearing(browser), switching(browser)
        report.append(
            "\n".join(
                [
                    "## Latency\n",
                    f"Channel made to program on the page, {len(shown)} programs: median {statistics.median(shown):.0f} ms, "
                    f"max {max(shown):.0f} ms.",
                    f"On/off asked by the page to the program's answer, {len(switched)} switches: median "
                    f"{statistics.median(switched):.1f} ms, max {max(switched):.1f} ms.",
                ]
            )
        )
        print(f"\n{report[-1]}", flush=True)
        browser.close()

    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text("\n\n".join(report) + "\n")


if __name__ == "__main__":
    main()

"""What live monitoring costs a measured program, and how fast `tracetop top` reads.

    python bench/live.py [--quick] [--workloads fib,builtins_heavy] [--seconds 3]

Prints markdown tables on stdout and writes them to bench/results/live.md; progress goes to stderr.
bench/README.md says what each number means. Run it with the venv that has tracetop installed, with
no other program running under `tracetop run --live` (top's reader here watches every live process).
"""

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tracetop import _reader, _tracetop

import hook
import run
from run import Failed, progress

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results" / "live.md"
DRIVER = HERE / "driver.py"
WORKLOADS = ("fib", "builtins_heavy", "threads")
# 20 million events a second: what top must keep up with.
RATE = 20_000_000
TOGGLES = 10


def tracetop_run(*options):
    return [sys.executable, "-m", "tracetop", "--no-profile", "--output", "exp", *options]


def count(counter, argv, workdir):
    """Instructions of argv, run in workdir under the instruction counter."""
    return run.count_instructions(counter, argv, workdir).instructions


def count_with_top(counter, argv, workdir):
    """Instructions of argv (a program measured with --live, in experiment workdir/exp) while `tracetop
    top --drain` reads it; the events top read, the events in the trace and the bytes of events the
    channel dropped."""
    reader = subprocess.Popen(
        [sys.executable, "-m", "tracetop", "top", "--drain"],
        env=run.ENV,
        cwd=workdir,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        instructions = count(counter, argv, workdir)
        out, err = reader.communicate(timeout=120)
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.wait()
    read = re.search(r"processes (\d+) events (\d+) bytes \d+ dropped_bytes (\d+)", out)
    if not read or read.group(1) != "1":
        raise Failed(f"top read {read.group(1) if read else 'nothing'} processes: {err.strip() or out.strip()}")
    traced = _reader.profile(str(workdir / "exp"))["events"]
    return instructions, int(read.group(2)), traced, int(read.group(3))


def per_event(counts, events, sizes):
    small, large = sizes
    return (counts[large] - counts[small]) / (events[large] - events[small])


def workload_events(script, sizes):
    """Events of the workload at each size, as run.py counts them (a C profile hook)."""
    events = {}
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="tracetop-bench-") as tmp:
            result = run.execute([sys.executable, hook.__file__, "count", str(script), str(size)], Path(tmp))
        events[size] = int(result.stderr.rsplit(" ", 1)[-1])
    return events


def measure_costs(name, sizes, counter):
    """Instructions per event: without --live, with --live and top reading; measurement off against no
    tracetop. Runs one at a time: top's reader watches every live process."""
    script = run.WORKLOADS / f"{name}.py"
    progress(f"{name}: counting events")
    events = workload_events(script, sizes)
    plain, live, none, off, read, traced, dropped = {}, {}, {}, {}, 0, 0, 0
    for size in sizes:
        program = [str(script), str(size)]
        with tempfile.TemporaryDirectory(prefix="tracetop-bench-") as tmp:
            progress(f"{name} {size}: tracetop, tracetop --live with top reading")
            plain[size] = count(counter, tracetop_run(str(DRIVER), "attach", *program), Path(tmp))
        with tempfile.TemporaryDirectory(prefix="tracetop-bench-") as tmp:
            live[size], events_read, events_traced, bytes_dropped = count_with_top(
                counter, tracetop_run("--live", str(DRIVER), "attach", *program), Path(tmp)
            )
            read, traced, dropped = read + events_read, traced + events_traced, dropped + bytes_dropped
        with tempfile.TemporaryDirectory(prefix="tracetop-bench-") as tmp:
            progress(f"{name} {size}: no tracetop, tracetop with measurement off")
            none[size] = count(counter, [sys.executable, *program], Path(tmp))
        with tempfile.TemporaryDirectory(prefix="tracetop-bench-") as tmp:
            off[size] = count(counter, tracetop_run("--live", str(DRIVER), "off", *program), Path(tmp))
    return {
        "events": events,
        "plain": per_event(plain, events, sizes),
        "live": per_event(live, events, sizes),
        "none": per_event(none, events, sizes),
        "off": per_event(off, events, sizes),
        "read": read,
        "traced": traced,
        "dropped": dropped,
    }


def top_reading(seconds):
    """bench/live_top.c, built with meson: (flood, paced) result lines as dicts."""
    build = ROOT / "build" / "c"
    meson = str(Path(sys.executable).parent / "meson")
    if not (build / "build.ninja").exists():
        subprocess.run([meson, "setup", str(build)], cwd=ROOT, check=True, stdout=sys.stderr)
    subprocess.run([meson, "compile", "-C", str(build), "live_top_bench"], check=True, stdout=sys.stderr)
    results = []
    for mode in (["flood", str(seconds)], ["paced", str(seconds), str(RATE)]):
        progress(f"top reading: {mode[0]}")
        line = subprocess.run(
            [str(build / "live_top_bench"), *mode], check=True, capture_output=True, text=True
        ).stdout.split()
        results.append(dict(zip(line[1::2], map(float, line[2::2]))))
    return results


def ctl_latency(seconds):
    """Milliseconds from `tracetop ctl`'s request to the program's answer (off, on, off ...), measured
    on a program that keeps calling functions under `tracetop run --live`."""
    busy = f"import time\nend = time.time() + {seconds}\nwhile time.time() < end:\n    sum(range(100))\n"
    with tempfile.TemporaryDirectory(prefix="tracetop-bench-") as tmp:
        program = subprocess.Popen(
            tracetop_run("--live", "-c", busy),
            cwd=tmp,
            env=run.ENV,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while True:  # until its channel is ready: asking for what it does already is answered at once
            try:
                _reader.live_control(program.pid, True)
                break
            except _tracetop.TraceError:
                if program.poll() is not None or time.monotonic() > deadline:
                    raise Failed("the program never answered") from None
                time.sleep(0.01)
        times = []
        for toggle in range(2 * TOGGLES):
            start = time.perf_counter()
            _reader.live_control(program.pid, toggle % 2 == 1)
            times.append(1000 * (time.perf_counter() - start))
            time.sleep(0.05)
        _, err = program.communicate(timeout=seconds + 60)
        if program.returncode:
            raise Failed(err.strip())
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (run.py's --quick)")
    parser.add_argument("--workloads", type=run.names(WORKLOADS), default=list(WORKLOADS), help="comma-separated")
    parser.add_argument("--seconds", type=float, default=3.0, help="of each top reading run (default 3)")
    args = parser.parse_args()
    if not run.WORKLOADS.is_dir():
        sys.exit(f"live.py: no workloads at {run.WORKLOADS} (../shared/workloads, beside the repository)")
    counter = run.instruction_counter()
    if counter is None:
        sys.exit("live.py: counting instructions needs perf (with instructions:u) or valgrind")
    hook.build()

    report = [
        f"# tracetop live benchmark\n\nPython {platform.python_version()} ({sys.executable}), "
        f"instructions by {counter}, {os.cpu_count()} CPUs{', --quick' if args.quick else ''}."
    ]
    print(report[0], flush=True)

    lines = [
        "## Instructions per event\n",
        "| workload | events | tracetop | tracetop --live, top reading | added by --live | no tracetop | "
        "tracetop, measurement off | added when off | events top read / in the trace | bytes dropped |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in args.workloads:
        sizes = run.SIZES[name][1 if args.quick else 0]
        try:
            m = measure_costs(name, sizes, counter)
        except Failed as failure:
            lines.append(f"| {name} | failed: {str(failure).replace('|', '/')} | | | | | | | | |")
            continue
        small, large = sizes
        lines.append(
            f"| {name} | {m['events'][small]:,} → {m['events'][large]:,} | {m['plain']:.1f} | "
            f"{m['live']:.1f} | {100 * (m['live'] / m['plain'] - 1):+.2f} % | {m['none']:.1f} | "
            f"{m['off']:.1f} | {100 * (m['off'] / m['none'] - 1):+.2f} % | {m['read']:,} / {m['traced']:,} | "
            f"{m['dropped']:,} |"
        )
        print(lines[-1], file=sys.stderr, flush=True)
    report.append("\n".join(lines))
    print(f"\n{report[-1]}", flush=True)

    flood, paced = top_reading(args.seconds)
    report.append(
        "\n".join(
            [
                "## tracetop top reading\n",
                "| mode | events sent | events read | events read a second | bytes dropped |",
                "|---|---:|---:|---:|---:|",
                f"| flood | {flood['sent']:,.0f} | {flood['read']:,.0f} | {flood['events_per_second'] / 1e6:.1f} M | "
                f"{flood['dropped_bytes']:,.0f} |",
                f"| paced at {RATE / 1e6:.0f} M/s | {paced['sent']:,.0f} | {paced['read']:,.0f} | "
                f"{paced['events_per_second'] / 1e6:.1f} M | {paced['dropped_bytes']:,.0f} |",
            ]
        )
    )
    print(f"\n{report[-1]}", flush=True)

    progress("ctl: switching a running program off and on")
    times = ctl_latency(seconds=2 * TOGGLES * 0.3 + 5)
    report.append(
        "\n".join(
            [
                "## tracetop ctl\n",
                f"Request to answer, {len(times)} switches of a running program: median {statistics.median(times):.1f} ms, "
                f"max {max(times):.1f} ms.",
            ]
        )
    )
    print(f"\n{report[-1]}", flush=True)

    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text("\n\n".join(report) + "\n")


if __name__ == "__main__":
    main()

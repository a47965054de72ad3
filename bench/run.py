"""Benchmarks tracetop against no tracing, CPython's own profiling floor, cProfile, VizTracer and yappi.

    python bench/run.py [--quick] [--pythons 3.11,3.12,3.13] [--workloads fib,objects] [--tools none,floor]
                        [--runs 5]

Prints a markdown table per workload on stdout (and writes them to bench/results/latest.md);
progress goes to stderr. With --pythons, the same for each Python version in turn, each run by its
venv (.venv or .venv-X.Y beside bench/, with tracetop installed), all in one latest.md.
bench/README.md says what each number means.
"""

import argparse
import concurrent.futures
import importlib.util
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import hook

HERE = Path(__file__).resolve().parent
# Beside the repository; BENCH_WORKLOADS names another place (a git worktree elsewhere).
WORKLOADS = Path(os.environ.get("BENCH_WORKLOADS", HERE.parent.parent / "shared" / "workloads"))
# bench's own workloads (workloads/ here), for what the shared ones do not exercise.
OWN_WORKLOADS = HERE / "workloads"
RESULTS = HERE / "results" / "latest.md"
TOOLS = (
    "none",
    "floor",
    "tracetop",
    "tracetop+filter",
    "tracetop+summary",
    "tracetop+no-c-calls",
    "tracetop+objects",
    "tracetop+objects+summary",
    "tracetop+off",
    "cprofile",
    "viztracer",
    "yappi",
)
# The whole table, what runs without --tools: tracetop+summary is a default `tracetop run`.
TABLE_TOOLS = ("none", "floor", "tracetop+summary", "tracetop+no-c-calls", "cprofile", "viztracer", "yappi")
# Installed from PyPI into the venv that runs the bench when missing.
FROM_PYPI = {"viztracer": "viztracer", "yappi": "yappi"}
# GNU time: the peak RSS of exactly the measured process. Waiting for it ourselves would not do: a
# process started by this one inherits this one's peak RSS (Linux keeps the largest over exec).
TIME = shutil.which("time", path="/usr/bin:/bin")
# What tracetop+filter excludes (Score-P filter file syntax): fib.py's function; nothing in the other
# workloads, where the row shows what a filter costs that matches nothing.
FILTER = "SCOREP_REGION_NAMES_BEGIN\n  EXCLUDE __main__:fib\nSCOREP_REGION_NAMES_END\n"
# Each workload's size argument at the smaller and the larger size, by default and with
# --quick. By default they are some 200,000 events apart (threads: 40,000, its events are far
# apart), with --quick some 40,000 (threads: 8,000): enough for instruction counts, which vary
# little, and a full run stays within minutes under valgrind on two cores.
SIZES = {
    "fib": ((20, 23), (16, 20)),
    "objects": ((50, 200), (10, 40)),
    "builtins_heavy": ((2000, 9000), (500, 2000)),
    "generators": ((30, 120), (5, 25)),
    "exceptions": ((5000, 22000), (1000, 5000)),
    "threads": ((5000, 15000), (1000, 3000)),
    "allocations": ((10000, 45000), (2000, 10000)),
    "asyncio_tasks": ((100, 500), (20, 100)),
}
TIMEOUT = 600  # seconds, for any one run (valgrind on a shared, loaded machine can take minutes)
# Fixed hash seed: the same events in every run of a size.
ENV = {**os.environ, "PYTHONHASHSEED": "0"}


def workload(name):
    """The script of workload `name`: bench's own, or the shared one."""
    own = OWN_WORKLOADS / f"{name}.py"
    return own if own.is_file() else WORKLOADS / f"{name}.py"


class Failed(Exception):
    """A run failed; the message is the reason the table gives."""


@dataclass
class Run:
    stdout: str
    stderr: str
    seconds: float
    max_rss_kib: "int | None"
    instructions: "int | None" = None  # when run under the instruction counter
    trace_bytes: "int | None" = None  # when the tool writes a trace
    trace_events: "int | None" = None  # tracetop's: the events its trace holds


def progress(message):
    print(message, file=sys.stderr, flush=True)


def execute(argv, workdir, rss=False):
    """Runs argv in workdir; with rss, under GNU time, which gives the peak RSS of exactly that process
    (None without GNU time)."""
    rss_file = workdir / "rss.txt"
    if rss and TIME:
        argv = [TIME, "-f", "%M", "-o", str(rss_file), *argv]
    with open(workdir / "stdout", "w+") as out, open(workdir / "stderr", "w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=workdir, env=ENV, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        killer = threading.Timer(TIMEOUT, proc.kill)
        killer.start()
        _, status, _ = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        killer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped: Popen must not wait for it
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read().strip()
    if seconds >= TIMEOUT:
        raise Failed(f"timed out after {TIMEOUT} s")
    if proc.returncode:
        raise Failed(stderr.splitlines()[-1] if stderr else f"exit status {proc.returncode}")
    max_rss = int(rss_file.read_text().split()[-1]) if rss and TIME else None
    return Run(stdout, stderr, seconds, max_rss)


def perf_instructions(report):
    """The instructions:u count in `perf stat -x,` output, or None where perf did not count."""
    match = re.search(r"^(\d+),[^,]*,instructions:u,", report, re.MULTILINE)
    return int(match.group(1)) if match else None


def instruction_counter():
    """perf where it counts instructions:u on this machine, else valgrind (cachegrind), else None."""
    if shutil.which("perf"):
        probe = subprocess.run(["perf", "stat", "-e", "instructions:u", "-x,", "true"], capture_output=True, text=True)
        if probe.returncode == 0 and perf_instructions(probe.stderr) is not None:
            return "perf"
    return "valgrind" if shutil.which("valgrind") else None


def count_instructions(counter, argv, workdir):
    """Runs argv under the instruction counter, which counts the user-space instructions executed."""
    report = workdir / "instructions.txt"
    if counter == "perf":
        run = execute(["perf", "stat", "-e", "instructions:u", "-x,", "-o", str(report), "--", *argv], workdir)
        run.instructions = perf_instructions(report.read_text())
    else:
        run = execute(
            [
                "valgrind",
                "--tool=cachegrind",
                "--cache-sim=no",
                "--cachegrind-out-file=/dev/null",
                f"--log-file={report}",
                *argv,
            ],
            workdir,
        )
        match = re.search(r"I\s+refs:\s+([\d,]+)", report.read_text())
        run.instructions = int(match.group(1).replace(",", "")) if match else None
    if run.instructions is None:
        raise Failed(f"{counter} reported no instruction count")
    return run


def command(tool, script, size, workdir, entries):
    """The argv that runs `script size` under tool, and the path of the trace it writes (or None)."""
    py, program = sys.executable, [str(script), str(size)]
    if tool == "none":
        return [py, *program], None
    if tool == "floor":
        return [py, hook.__file__, "floor", *program], None
    # tracetop: the measurement, the trace written to disk. tracetop+summary: a default run, which
    # also reads the whole trace back at the end to write profile.txt.
    if tool == "tracetop":
        return (
            [py, "-m", "tracetop", "--no-profile", "--output", str(workdir / "exp"), *program],
            workdir / "exp" / "trace",
        )
    if tool == "tracetop+filter":
        (workdir / "bench.filter").write_text(FILTER)
        return (
            [
                py,
                "-m",
                "tracetop",
                "--no-profile",
                "--filter",
                str(workdir / "bench.filter"),
                "--output",
                str(workdir / "exp"),
                *program,
            ],
            workdir / "exp" / "trace",
        )
    if tool == "tracetop+summary":
        return [py, "-m", "tracetop", "--output", str(workdir / "exp"), *program], workdir / "exp" / "trace"
    if tool == "tracetop+no-c-calls":
        return (
            [py, "-m", "tracetop", "--no-c-calls", "--output", str(workdir / "exp"), *program],
            workdir / "exp" / "trace",
        )
    # Measuring, the instrumenter off from the start: no hook on any thread, only user regions recorded.
    if tool == "tracetop+off":
        return (
            [py, "-m", "tracetop", "--noinstrumenter", "--output", str(workdir / "exp"), *program],
            workdir / "exp" / "trace",
        )
    if tool == "tracetop+objects":
        return (
            [py, "-m", "tracetop", "--no-profile", "--objects", "--output", str(workdir / "exp"), *program],
            workdir / "exp" / "trace",
        )
    # The default run with --objects: profile.txt written at the end, its objects tables included.
    if tool == "tracetop+objects+summary":
        return (
            [py, "-m", "tracetop", "--objects", "--output", str(workdir / "exp"), *program],
            workdir / "exp" / "trace",
        )
    if tool == "cprofile":
        return [py, "-m", "cProfile", "-o", str(workdir / "out.prof"), *program], workdir / "out.prof"
    # yappi with builtins (C calls, as tracetop's default) and the wall clock (as tracetop; its CPU clock
    # is a system call per event), every thread, its pstat file written at exit.
    if tool == "yappi":
        return (
            [py, "-m", "yappi", "-b", "-c", "wall", "-f", "pstat", "-o", str(workdir / "out.prof"), *program],
            workdir / "out.prof",
        )
    # VizTracer keeps one entry per call in a ring buffer and drops the oldest once it is full:
    # `entries` is its default or the number of events, whichever is more, so nothing is dropped.
    return (
        [py, "-m", "viztracer", "--quiet", "--tracer_entries", str(entries), "-o", str(workdir / "out.json"), *program],
        workdir / "out.json",
    )


def traced_events(trace):
    """The events a tracetop trace holds (its processes' PROCESS_END counts): its bytes per event are per these.
    bench/hook.py's count leaves out what the program imports that the runner had imported before it (threading,
    which sets the hook on new threads), while tracetop records it: threads 3000 on 3.12 holds 4,100 events more
    than counted."""
    import tracetop._reader as reader  # the running venv's tracetop

    return sum(process["events"] for process in reader.Trace(str(trace.parent)).processes)


def size_of(path):
    if path.is_dir():
        return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    return path.stat().st_size


@dataclass
class Row:
    instructions_per_event: float
    seconds: float  # median wall clock at the larger size
    added_seconds: float  # median of the paired differences with none's runs
    trace_bytes: "int | None"
    max_rss_kib: "int | None"
    trace_events: "int | None" = None


def measure(name, sizes, tools, runs, counter):
    """Measures each tool on one workload: ({tool: Row or "failed: reason"}, {size: events})."""
    script = workload(name)
    small, large = sizes
    progress(f"{name}: counting events")
    events, outputs = {}, {}
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="tracetop-bench-") as tmp:
            result = execute([sys.executable, hook.__file__, "count", str(script), str(size)], Path(tmp))
        events[size] = int(result.stderr.rsplit(" ", 1)[-1])
        outputs[size] = result.stdout.strip()
    entries = max(events[large], 1_000_000)

    def run(tool, size, instructions=False):
        """One run in a fresh directory, under the instruction counter if asked."""
        with tempfile.TemporaryDirectory(prefix="tracetop-bench-") as tmp:
            workdir = Path(tmp)
            argv, trace = command(tool, script, size, workdir, entries)
            if instructions:
                result = count_instructions(counter, argv, workdir)
            else:
                result = execute(argv, workdir, rss=True)
            if outputs[size] not in result.stdout.splitlines():
                raise Failed("changed the program's output")
            if trace:
                if not trace.exists():
                    raise Failed(f"wrote no {trace.name}")
                result.trace_bytes = size_of(trace)
                if tool.startswith("tracetop"):
                    result.trace_events = traced_events(trace)
            return result

    rows = {}
    # A first, unmeasured run of each tool: does it work here at all; it also leaves what the
    # tool imports compiled to bytecode, so that no measured run pays for that. Its time orders
    # the instruction counts, slowest first, which keeps every core busy to the end.
    first_seconds = {}
    for tool in tools:
        try:
            first_seconds[tool] = run(tool, small).seconds
        except Failed as failure:
            rows[tool] = f"failed: {failure}"
    progress(f"{name}: instructions ({counter}): {', '.join(first_seconds)}")
    jobs = sorted(
        ((tool, size) for tool in first_seconds for size in sizes),
        key=lambda job: (first_seconds[job[0]], job[1]),
        reverse=True,
    )
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count()) as pool:
        counted = {job: pool.submit(run, *job, instructions=True) for job in jobs}
    for tool in first_seconds:
        try:
            low, high = (counted[tool, size].result().instructions for size in sizes)
            progress(f"{name}: wall clock: {tool}")
            # Paired: each run right after one of the program alone, so that both see the same load.
            pairs = [
                (None, run(tool, large)) if tool == "none" else (run("none", large), run(tool, large))
                for _ in range(runs)
            ]
        except Failed as failure:
            rows[tool] = f"failed: {failure}"
        else:
            results = [r for _, r in pairs]
            rss = [r.max_rss_kib for r in results if r.max_rss_kib is not None]
            rows[tool] = Row(
                (high - low) / (events[large] - events[small]),
                statistics.median(r.seconds for r in results),
                statistics.median(r.seconds - alone.seconds if alone else 0.0 for alone, r in pairs),
                results[-1].trace_bytes,
                max(rss) if rss else None,
                results[-1].trace_events,
            )
    return {tool: rows[tool] for tool in tools}, events


def table(rows, events):
    """The markdown table of one workload; events: those of a run at the larger size."""
    none, floor = rows.get("none"), rows.get("floor")
    baseline = isinstance(none, Row) and isinstance(floor, Row)
    if baseline:
        base, span = none.instructions_per_event, floor.instructions_per_event - none.instructions_per_event
    lines = [
        "| tool | instructions/event | ratio | wall median (s) | paired wall over none (s) | trace bytes/event "
        "| peak RSS (MiB) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for tool, row in rows.items():
        if isinstance(row, str):
            lines.append(f"| {tool} | {row.replace('|', '/')} | | | | | |")
            continue
        cost = row.instructions_per_event
        ratio = f"{(cost - base) / span:.2f}" if baseline else "–"
        trace = "–" if row.trace_bytes is None else f"{row.trace_bytes / (row.trace_events or events):.2f}"
        rss = "–" if row.max_rss_kib is None else f"{row.max_rss_kib / 1024:.1f}"
        lines.append(
            f"| {tool} | {cost:.1f} | {ratio} | {row.seconds:.3f} | {row.added_seconds:+.3f} | {trace} | {rss} |"
        )
    return "\n".join(lines)


def ensure_from_pypi(tools):
    """VizTracer and yappi come from PyPI: installed into the running venv when missing (outside a
    venv, their rows say that they are missing)."""
    missing = [FROM_PYPI[t] for t in tools if t in FROM_PYPI and importlib.util.find_spec(FROM_PYPI[t]) is None]
    if missing and sys.prefix != sys.base_prefix:
        progress(f"installing {', '.join(missing)} into {sys.prefix}")
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", *missing], stdout=sys.stderr)


def venv_python(version):
    """The python of the venv for a version ("3.12"): .venv-3.12 or .venv beside bench/; None when neither is."""
    for venv in (f".venv-{version}", ".venv"):
        python = HERE.parent / venv / "bin" / "python"
        if python.exists():
            found = subprocess.run(
                [str(python), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True
            ).stdout.strip()
            if found == version:
                return python
    return None


def each_python(args, argv):
    """Runs this script once per version of --pythons, each in its venv, into one latest.md."""
    sections = []
    for version in args.pythons:
        python = venv_python(version)
        if python is None:
            sections.append(
                f"# Python {version}\n\nnot measured: no .venv-{version} with tracetop (make "
                f"PYTHON=$(pyenv prefix {version})/bin/python{version} VENV=.venv-{version} "
                f".venv-{version}/.installed)"
            )
            progress(sections[-1])
            continue
        out = RESULTS.with_name(f"python-{version}.md")
        subprocess.run([str(python), __file__, *argv, "--results", str(out)], check=False)
        sections.append(out.read_text() if out.exists() else f"# Python {version}\n\nfailed: no results")
    RESULTS.write_text("\n\n".join(s.strip() for s in sections) + "\n")


def names(allowed):
    """An argparse type: a comma-separated list of names from allowed."""

    def parse(text):
        chosen = text.split(",")
        unknown = [n for n in chosen if n not in allowed]
        if unknown:
            raise argparse.ArgumentTypeError(f"unknown: {', '.join(unknown)} (choose from {', '.join(allowed)})")
        return chosen

    return parse


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes: a quick look, less precise")
    parser.add_argument("--workloads", type=names(SIZES), default=list(SIZES), help="comma-separated")
    parser.add_argument(
        "--tools",
        type=names(TOOLS),
        default=list(TABLE_TOOLS),
        help=f"comma-separated (default {','.join(TABLE_TOOLS)})",
    )
    parser.add_argument("--runs", type=int, default=5, help="wall-clock runs per tool (default 5)")
    parser.add_argument(
        "--pythons",
        type=lambda text: text.split(","),
        help="comma-separated versions (3.11,3.12,3.13): each by its venv, one table each",
    )
    parser.add_argument("--results", type=Path, default=RESULTS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if args.pythons:
        argv = sys.argv[1:]
        at = argv.index("--pythons") if "--pythons" in argv else None
        argv = [a for i, a in enumerate(argv) if at is None or i not in (at, at + 1)]
        argv = [a for a in argv if not a.startswith("--pythons=")]
        RESULTS.parent.mkdir(exist_ok=True)
        each_python(args, argv)
        return

    if not WORKLOADS.is_dir():
        sys.exit(f"run.py: no workloads at {WORKLOADS} (../shared/workloads, beside the repository)")
    counter = instruction_counter()
    if counter is None:
        sys.exit("run.py: counting instructions needs perf (with instructions:u) or valgrind")
    try:
        hook.build()
    except (OSError, subprocess.CalledProcessError) as error:
        sys.exit(f"run.py: cannot build {os.path.basename(hook.SOURCE)}: {error}")
    ensure_from_pypi(args.tools)

    report = [
        f"# Python {platform.python_version()}\n\n{sys.executable}, instructions by {counter}, wall clock: "
        f"median of {args.runs} runs paired with as many of none, peak RSS "
        f"{'by GNU time' if TIME else 'not measured (no GNU time)'}, {os.cpu_count()} CPUs, load "
        f"{os.getloadavg()[0]:.1f} at the start{', --quick' if args.quick else ''}."
    ]
    print(report[0], flush=True)
    for name in args.workloads:
        sizes = SIZES[name][1 if args.quick else 0]
        try:
            rows, events = measure(name, sizes, args.tools, args.runs, counter)
        except Failed as failure:
            section = f"## {name}\n\nfailed: {failure}"
        else:
            small, large = sizes
            low, high = events[small], events[large]
            section = (
                f"## {name}\n\n`{name}.py {small}` → `{name}.py {large}`: {low:,} → {high:,} events "
                f"({high - low:,} between them)\n\n{table(rows, high)}"
            )
        report.append(section)
        print(f"\n{section}", flush=True)
    args.results.parent.mkdir(exist_ok=True)
    args.results.write_text("\n\n".join(report) + "\n")


if __name__ == "__main__":
    main()

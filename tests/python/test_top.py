"""`tracetop top`, driven in tmux against a program running under `tracetop run --live`: what the screen
shows (read with capture-pane, kept in tests/artifacts/ at 80x24 and 160x45) and what its keys do; and top
without a screen (--list)."""

import re
import sys
import time
from pathlib import Path

import pytest

from helpers import PROGRAMS, assert_complete, needs_object_counting, reader, tracetop
from live_helpers import (
    FIRST_ROW_LINE,
    Gated,
    Screen,
    Workload,
    channels,
    count,
    drain,
    needs_tmux,
    rows,
    top_command,
    wait_for_channel,
    wait_for_readers,
)

# A row goes above another only when its key leads by more than this share: TT_VIEW_STEADY (src/top/view.h).
STEADY = 0.03
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
# What a function name or FILE:LINE cut in the middle shows where it was cut: an ellipsis, or where the locale
# has none, a tilde.
CUT = ("\u2026", "~")


@pytest.fixture
def screens():
    opened = []
    yield lambda *args, **kwargs: opened.append(Screen(*args, **kwargs)) or opened[-1]
    for screen in opened:
        screen.close()


def first(lines):
    shown = rows(lines)
    return shown[0].function if shown else None


def disk_profile_percent(experiment, function):
    """The function's exclusive time as a share of the time covered, from the trace on disk."""
    profile = reader.profile(str(experiment))
    hottest = max(profile["regions"], key=lambda region: region["exclusive_ns"])
    region = next(region for region in profile["regions"] if region["name"] == function)
    return hottest["name"], 100 * region["exclusive_ns"] / profile["total_ns"]


@needs_tmux
def test_hottest_function_first_and_the_keys(tmp_path, screens):
    workload = Workload(tmp_path)
    screen = screens(tmp_path, top_command(workload.pid))
    try:
        lines = screen.wait(
            "hot() first, with a second of it seen",
            lambda lines: first(lines) == "__main__:hot" and rows(lines)[0].own >= 1.0,
        )
        assert f"pid {workload.pid}  live_workload.py  (measuring)" in lines[0]
        assert lines[1].startswith("threads 1  events/s ") and lines[1].endswith("measurement on  sort own")
        assert lines[2].startswith("last 5 s  all threads")
        assert rows(lines)[0].descendants == 0.0

        # s: sort by cpu, total, calls, %desc, and back to own.
        screen.keys("s")
        lines = screen.wait("sorted by cpu", lambda lines: lines[1].endswith("sort cpu"))
        assert max(row.cpu for row in rows(lines)) <= rows(lines)[0].cpu * (1 + STEADY) + 0.1
        screen.keys("s")
        lines = screen.wait("sorted by total", lambda lines: lines[1].endswith("sort total"))
        assert first(lines) in ("__main__:<module>", "__main__:main")
        # Rows are steady: once sorted, a row moves up only past a row it leads by more than the margin (hot()
        # and cool() are called in turn, their calls neck and neck).
        screen.keys("s")
        lines = screen.wait("sorted by calls", lambda lines: lines[1].endswith("sort calls"))
        assert max(row.calls for row in rows(lines)) <= rows(lines)[0].calls * (1 + STEADY)
        screen.keys("s")
        lines = screen.wait("sorted by %desc", lambda lines: lines[1].endswith("sort %desc"))
        assert max(row.descendants for row in rows(lines)) <= rows(lines)[0].descendants * (1 + STEADY)
        screen.keys("s")
        screen.wait(
            "sorted by own again", lambda lines: lines[1].endswith("sort own") and first(lines) == "__main__:hot"
        )
        # c: by CPU, and again by own time.
        screen.keys("c")
        screen.wait("sorted by cpu", lambda lines: lines[1].endswith("sort cpu"))
        screen.keys("c")
        screen.wait("sorted by own", lambda lines: lines[1].endswith("sort own"))

        # p: the rows stand still while paused, and move again after.
        screen.keys("p")
        paused = screen.wait("PAUSED", lambda lines: lines[2].startswith("PAUSED  last 5 s"))
        time.sleep(0.6)
        assert rows(screen.lines()) == rows(paused)
        screen.keys("p")
        screen.wait("moving rows", lambda lines: "PAUSED" not in lines[2] and rows(lines) != rows(paused))

        # + and -: a longer and a shorter window; w: everything since the start, and the window again.
        screen.keys("+")
        screen.wait("10 s", lambda lines: lines[2].startswith("last 10 s"))
        screen.keys("-", "-")
        screen.wait("2 s", lambda lines: lines[2].startswith("last 2 s"))
        screen.keys("w")
        lines = screen.wait("since the start", lambda lines: lines[2].startswith("since start  all threads"))
        screen.keys("w")
        screen.wait("2 s again", lambda lines: lines[2].startswith("last 2 s"))
        screen.keys("w")
        lines = screen.wait("since the start again", lambda lines: lines[2].startswith("since start"))

        # r: counting starts again.
        calls = rows(lines)[0].calls
        screen.keys("r")
        screen.wait(
            "counts started again",
            lambda lines: (
                lines[2].startswith("since reset") and first(lines) == "__main__:hot" and rows(lines)[0].calls < calls
            ),
        )

        # t: the one thread, then all threads again.
        screen.keys("t")
        screen.wait("MainThread alone", lambda lines: "  thread MainThread  " in lines[2] + "  ")
        screen.keys("t")
        screen.wait("all threads", lambda lines: "  all threads" in lines[2])

        # /: a filter, then none.
        screen.keys("/", "cool", "Enter")
        lines = screen.wait("cool() alone", lambda lines: first(lines) == "__main__:cool")
        assert all("cool" in row.function for row in rows(lines))
        assert 'filter "cool"' in lines[2]
        screen.keys("/", "BSpace", "BSpace", "BSpace", "BSpace", "Enter")
        screen.wait("every function", lambda lines: first(lines) == "__main__:hot" and "filter" not in lines[2])

        # o: no objects without --objects, and the functions again.
        screen.keys("o")
        screen.wait(
            "no objects",
            lambda lines: (
                "objects by alive" in lines[1]
                and "no objects counted (run the program with --live --objects)" in lines[FIRST_ROW_LINE]
            ),
        )
        screen.keys("o")
        screen.wait("the functions again", lambda lines: first(lines) == "__main__:hot")

        # ?: help, closed by any key.
        screen.keys("?")
        lines = screen.wait("the help", lambda lines: any("tracetop top: keys" in line for line in lines))
        for key in ("q    quit", "c    sort by CPU", "w    the last N s", "+ -  a longer", "o    objects"):
            assert any(key in line for line in lines), key
        screen.keys("x")
        screen.wait("no help", lambda lines: not any("tracetop top: keys" in line for line in lines))

        # A larger window, then 80x24 again.
        screen.resize(120, 30)
        screen.wait(
            "120 columns, hot() first",
            lambda lines: (
                len(lines) == 30
                and lines[0].endswith("? help")
                and len(lines[0]) == 120
                and first(lines) == "__main__:hot"
            ),
        )
        screen.resize(80, 24)
        screen.wait("80 columns", lambda lines: len(lines) == 24 and len(lines[0]) == 80)

        # hot()'s share of the time, as on disk: over seconds of counting (since r), as a second's share on a
        # loaded machine swings with where the program was descheduled.
        lines = screen.wait(
            "hot() first, with 4 s of it seen since r",
            lambda lines: first(lines) == "__main__:hot" and rows(lines)[0].own >= 4.0,
            timeout=60,
        )
        shown_percent = rows(lines)[0].percent

        # q: top ends.
        screen.keys("q")
        deadline = time.monotonic() + 30
        while not screen.ended():
            assert time.monotonic() < deadline, "top did not quit"
            time.sleep(0.1)
    finally:
        experiment = workload.stop()

    hottest, percent = disk_profile_percent(experiment, "__main__:hot")
    assert hottest == "__main__:hot"
    assert abs(shown_percent - percent) <= 10, (shown_percent, percent)
    assert_complete(experiment)


def keep(name, lines):
    """The screen, as capture-pane read it, in tests/artifacts/NAME.txt."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / f"{name}.txt").write_text("\n".join(lines) + "\n")


@needs_tmux
def test_now_shows_the_new_phase_first(tmp_path, screens):
    """programs/top_phases.py runs alpha() until told, then beta() for 5 s. With a window of 2 s, beta leads
    top's table within those 2 s (and a slack for a loaded machine) of the program saying it began; counted
    since the start, alpha, which ran at least 10 s, leads still: beta never ran that long."""
    window, slack = 2, 30
    workload = Workload(tmp_path, program="top_phases.py")
    screen = screens(tmp_path, top_command(workload.pid, "--window", str(window)))
    try:
        lines = screen.wait("alpha() first", lambda lines: first(lines) == "__main__:alpha")
        assert lines[2].startswith(f"last {window} s  all threads")
        screen.keys("w")
        lines = screen.wait(
            "10 s of alpha() since the start",
            lambda lines: (
                lines[2].startswith("since start") and first(lines) == "__main__:alpha" and rows(lines)[0].own >= 10
            ),
            timeout=120,
        )
        screen.keys("w")
        lines = screen.wait("the window again", lambda lines: lines[2].startswith(f"last {window} s"))
        # The window's whole seconds and the current one: no more than window + 1 s of alpha().
        assert first(lines) == "__main__:alpha" and rows(lines)[0].own <= window + 1.01, lines

        (tmp_path / "next").write_text("5")
        assert workload.process.stdout.readline() == "beta\n"
        lines = screen.wait(
            f"beta() first within {window} s and {slack} s of slack",
            lambda lines: lines[2].startswith(f"last {window} s") and first(lines) == "__main__:beta",
            timeout=window + slack,
        )
        keep("top-now-80x24", lines)
        screen.keys("w")
        lines = screen.wait("since the start", lambda lines: lines[2].startswith("since start") and rows(lines))
        shown = {row.function: row.own for row in rows(lines)}
        assert first(lines) == "__main__:alpha" and shown["__main__:alpha"] > shown["__main__:beta"], lines
    finally:
        assert_complete(workload.stop())


@needs_tmux
def test_legible_at_80x24_and_160x45(tmp_path, screens):
    """programs/top_long_names.py's two hot functions, whose names differ only beyond what 80 columns show,
    stay apart, cut in the middle; every FILE:LINE keeps its line; sorted by CPU, the sleeper's time.sleep,
    which owns half the time covered, has next to none of the CPU time. At 160 columns the names are whole."""
    names = (
        "__main__:render_invoice_line_item_with_discounts_total",
        "__main__:render_invoice_line_item_with_discounts_taxes",
    )
    workload = Workload(tmp_path, program="top_long_names.py")
    screen = screens(tmp_path, top_command(workload.pid))
    try:

        def both_cut(lines):
            shown = [row for row in rows(lines) if row.function.startswith("__main__:ren")]
            return len(shown) == 2 and all(row.own > 0.5 for row in shown)

        lines = screen.wait("both render functions, cut", both_cut)
        assert len(lines) == 24 and all(len(line) <= 80 for line in lines)
        assert lines[3].split() == ["%OWN", "OWN", "s", "%CPU", "TOTAL", "s", "%DESC", "CALLS", "FUNCTION", "FILE:LINE"]
        shown = [row for row in rows(lines) if row.function.startswith("__main__:ren")]
        assert {row.function[-5:] for row in shown} == {"total", "taxes"}, lines
        assert all(any(mark in row.function for mark in CUT) for row in shown), lines
        for row in rows(lines):
            assert row.location == "-" or re.search(r":\d+$", row.location), (row, lines)
        # Each FILE:LINE, cut or not, ends with its function's line.
        program = (PROGRAMS / "top_long_names.py").read_text().splitlines()
        defined = {
            f"__main__:{line[4:].split('(')[0]}": number
            for number, line in enumerate(program, 1)
            if line.startswith("def ")
        }
        for row in shown:
            ends = row.function[-5:]
            name = next(name for name in names if name.endswith(ends))
            assert row.location.endswith(f":{defined[name]}"), (row, lines)
        keep("top-80x24", lines)

        # c: by CPU time. The sleeper owns its time in time.sleep, but holds no CPU there.
        screen.keys("c")
        lines = screen.wait(
            "sorted by cpu, time.sleep with a share of the time",
            lambda lines: (
                lines[1].endswith("sort cpu")
                and any(row.function == "time:sleep" and row.percent >= 20 for row in rows(lines))
            ),
        )
        sleep = next(row for row in rows(lines) if row.function == "time:sleep")
        assert first(lines).startswith("__main__:ren"), lines
        assert sleep.cpu < 10 and sleep.cpu < rows(lines)[0].cpu, lines
        keep("top-cpu-80x24", lines)

        screen.resize(160, 45)
        lines = screen.wait(
            "160 columns, the names whole",
            lambda lines: len(lines) == 45 and set(names) <= {row.function for row in rows(lines)},
        )
        assert all(len(line) <= 160 for line in lines)
        keep("top-160x45", lines)
        screen.keys("q")
    finally:
        assert_complete(workload.stop())


# An objects row: CREATED/s, DESTROYED/s, ALIVE, TYPE, then its bars (not the line "no objects counted yet").
COUNT = r"(-?\d+(?:\.\d+)?[kMG]?)"
OBJECT_ROW = re.compile(rf"^\s*{COUNT}\s+{COUNT}\s+{COUNT}\s+(\S+)(?:\s+(#+))?")


def object_rows(lines):
    found = {}
    for line in lines[FIRST_ROW_LINE:]:
        match = OBJECT_ROW.match(line)
        if match:
            created, destroyed, alive, kind, bar = match.groups()
            found[kind] = (count(created), count(destroyed), count(alive), len(bar or ""))
    return found


@needs_tmux
@needs_object_counting
def test_objects_key_shows_the_types_a_program_makes(tmp_path, screens):
    """programs/live_objects.py keeps 500 of every 2000 lists it makes and frees every dict at once: on key o
    both types have rows, lists and dicts made at the same rate, lists growing alive, dicts none."""
    workload = Workload(tmp_path, program="live_objects.py", options=["--objects"])
    screen = screens(tmp_path, top_command(workload.pid))
    try:
        screen.wait("the functions", lambda lines: first(lines) is not None)
        screen.keys("o")

        def shown(lines):
            rows = object_rows(lines)
            return (
                "objects by alive" in lines[1]
                and "list" in rows
                and "dict" in rows
                and rows["list"][0] > 0
                and rows["dict"][0] > 0
                and rows["list"][2] > 10000
            )

        lines = screen.wait("list and dict rows", shown)
        rows = object_rows(lines)
        lists, dicts = rows["list"], rows["dict"]
        # As many dicts as lists made, a second apart or not: within the rounding of two refreshes.
        assert 0.5 < dicts[0] / lists[0] < 2, lines
        assert dicts[2] < 100 and dicts[1] > 0, lines  # freed as made
        assert lists[1] < lists[0], lines  # a quarter kept
        assert lists[3] > dicts[3], lines  # the longer alive bar
        first_alive = lists[2]
        lines = screen.wait(
            "more lists alive", lambda lines: object_rows(lines).get("list", (0, 0, 0))[2] > first_alive * 1.2
        )
        assert next(row for row in object_rows(lines)) in ("list", "int")  # most alive first
        screen.keys("o")
        screen.wait("the functions again", lambda lines: first(lines) == "__main__:churn")
    finally:
        assert_complete(workload.stop())


@needs_tmux
def test_threads_and_the_measurement_key(tmp_path, screens):
    workload = Workload(tmp_path, workers=1)
    screen = screens(tmp_path, top_command(workload.pid, "--window", "0"))
    try:
        screen.wait("two threads", lambda lines: lines[1].startswith("threads 2 ") and rows(lines))
        assert screen.lines()[2].startswith("since start  all threads")
        for thread in ("MainThread", "worker"):
            screen.keys("t")
            screen.wait(f"thread {thread}", lambda lines: f"  thread {thread}  " in lines[2] + "  ")
        # The worker sleeps and calls light() between sleeps.
        screen.wait(
            "the worker's functions",
            lambda lines: {"time:sleep", "__main__:light"} <= {row.function for row in rows(lines)},
        )
        screen.keys("t")
        screen.wait("all threads", lambda lines: "  all threads" in lines[2])

        screen.keys("m")
        screen.wait("measurement off", lambda lines: "measurement off" in lines[1] and "(not measuring)" in lines[0])
        listed = tracetop("top", "--list", cwd=tmp_path)
        assert re.search(rf"^\s*{workload.pid}\s+off\s+", listed.stdout, re.MULTILINE), listed.stdout
        screen.keys("m")
        screen.wait("measurement on", lambda lines: "measurement on" in lines[1] and "(measuring)" in lines[0])
        screen.keys("q")
    finally:
        experiment = workload.stop()
    assert_complete(experiment)


def test_list_removes_what_a_killed_program_left(tmp_path):
    before = channels()
    killed = tracetop("--live", "--output", "exp", PROGRAMS / "live_channel.py", "kill", cwd=tmp_path)
    assert killed.returncode == -9 and killed.stdout == "channel 600\n"
    left = channels() - before
    assert len(left) == 1
    listed = tracetop("top", "--list", cwd=tmp_path)
    assert listed.returncode == 0
    assert re.match(r"tracetop: removed \d+ channels? left by programs that died\n", listed.stderr)
    assert not left.pop().exists()


@needs_tmux
def test_the_screen_removes_what_a_killed_program_left(tmp_path, screens):
    before = channels()
    killed = tracetop("--live", "--output", "exp", PROGRAMS / "live_channel.py", "kill", cwd=tmp_path)
    assert killed.returncode == -9
    left = channels() - before
    assert len(left) == 1
    screen = screens(tmp_path, [sys.executable, "-m", "tracetop", "top"])
    screen.wait(
        "the screen, the channel gone",
        lambda lines: lines[0].startswith("tracetop top") and not any(path.exists() for path in left),
    )
    screen.keys("q")


def test_list_shows_a_live_process(tmp_path):
    workload = Workload(tmp_path)
    try:
        listed = tracetop("top", "--list", cwd=tmp_path)
    finally:
        workload.stop()
    assert f"{workload.pid}  on           {PROGRAMS / 'live_workload.py'} ({tmp_path / 'exp'})\n" in listed.stdout


def test_no_such_process(tmp_path):
    completed = tracetop("top", "999999999", cwd=tmp_path)
    assert completed.returncode == 1
    assert completed.stderr == "tracetop: error: no live process 999999999 (is it measured with --live?)\n"


def test_needs_a_terminal(tmp_path):
    completed = tracetop("top", cwd=tmp_path)
    assert completed.returncode == 2
    assert completed.stderr == "tracetop: error: top needs a terminal (without one: tracetop top --list)\n"


@pytest.mark.parametrize(
    "arguments",
    [["x"], ["--interval", "0"], ["--list", "12"], ["--bogus"], ["--window", "61"], ["--window", "1.5"]],
)
def test_bad_arguments(arguments, tmp_path):
    completed = tracetop("top", *arguments, cwd=tmp_path)
    assert completed.returncode == 2 and "Traceback" not in completed.stderr


def test_help_names_every_key(tmp_path):
    completed = tracetop("top", "--help", cwd=tmp_path)
    assert completed.returncode == 0
    text = " ".join(completed.stdout.split())
    for key in ("q quit", "s sort", "c sort by CPU", "w the last N", "+ and -", "p pause", "r reset", "t thread"):
        assert key in text, key
    for key in ("/ filter", "m measurement", "o objects", "? help", "--window SECONDS", "%CPU"):
        assert key in text, key


def test_two_readers_each_read_every_event_of_a_program_they_waited_for(tmp_path):
    program = Gated(tmp_path, "--noinstrumenter", PROGRAMS / "gated_fib.py", "24")
    drainers = [drain(program.pid, tmp_path) for _ in range(2)]
    time.sleep(0.5)  # both wait for a process that runs but has no channel yet
    assert all(drainer.poll() is None for drainer in drainers)
    program.start()
    wait_for_channel(program.process, program.pid)
    wait_for_readers(program.pid, 2)
    (tmp_path / "go").touch()
    assert program.wait() == "fib 46368\n"
    traced = reader.profile(str(tmp_path / "exp"))["events"]
    assert traced > 150_000
    for drainer in drainers:
        out, err = drainer.communicate(timeout=60)
        assert drainer.returncode == 0, err
        read = re.fullmatch(r"processes 1 events (\d+) bytes \d+ dropped_bytes (\d+) resyncs 0 seconds \S+\n", out)
        assert read, out
        assert (int(read.group(1)), int(read.group(2))) == (traced, 0)


@needs_tmux
def test_two_screens_watch_one_process(tmp_path, screens):
    workload = Workload(tmp_path)
    try:
        both = [
            screens(tmp_path / name, top_command(workload.pid))
            for name in ("one", "two")
            if not (tmp_path / name).mkdir()
        ]
        for screen in both:
            lines = screen.wait("hot() first", lambda lines: first(lines) == "__main__:hot")
            assert f"pid {workload.pid}  live_workload.py  (measuring)" in lines[0]
        calls = [rows(screen.lines())[0].calls for screen in both]
        for screen, before in zip(both, calls):
            screen.wait(
                "hot() called more", lambda lines: first(lines) == "__main__:hot" and rows(lines)[0].calls > before
            )
            screen.keys("q")
    finally:
        experiment = workload.stop()
    assert_complete(experiment)

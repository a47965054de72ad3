"""`tracetop top`, driven in tmux against a program running under `tracetop run --live`: what the screen
shows (read with capture-pane) and what its keys do; and top without a screen (--list)."""

import re
import sys
import time

import pytest

from helpers import PROGRAMS, assert_complete, needs_object_counting, reader, tracetop
from live_helpers import (
    FIRST_ROW_LINE,
    Gated,
    Screen,
    Workload,
    channels,
    drain,
    needs_tmux,
    rows,
    top_command,
    wait_for_channel,
    wait_for_readers,
)

# A row goes above another only when its key leads by more than this share: TT_VIEW_STEADY (src/top/view.h).
STEADY = 0.03


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
        assert lines[1].startswith("threads 1  events/s ") and "measurement on  sort own  all threads" in lines[1]
        assert rows(lines)[0].descendants == 0.0

        # s: sort by total, calls, %desc, and back to own.
        screen.keys("s")
        lines = screen.wait("sorted by total", lambda lines: "sort total" in lines[1])
        assert first(lines) in ("__main__:<module>", "__main__:main")
        # Rows are steady: once sorted, a row moves up only past a row it leads by more than the margin (hot()
        # and cool() are called in turn, their calls neck and neck).
        screen.keys("s")
        lines = screen.wait("sorted by calls", lambda lines: "sort calls" in lines[1])
        assert max(row.calls for row in rows(lines)) <= rows(lines)[0].calls * (1 + STEADY)
        screen.keys("s")
        lines = screen.wait("sorted by %desc", lambda lines: "sort %desc" in lines[1])
        assert max(row.descendants for row in rows(lines)) <= rows(lines)[0].descendants * (1 + STEADY)
        screen.keys("s")
        screen.wait("sorted by own again", lambda lines: "sort own" in lines[1] and first(lines) == "__main__:hot")

        # p: the rows stand still while paused, and move again after.
        screen.keys("p")
        paused = screen.wait("PAUSED", lambda lines: lines[2].startswith("PAUSED"))
        time.sleep(0.6)
        assert rows(screen.lines()) == rows(paused)
        screen.keys("p")
        screen.wait("moving rows", lambda lines: "PAUSED" not in lines[2] and rows(lines) != rows(paused))

        # r: counting starts again.
        calls = rows(screen.lines())[0].calls
        screen.keys("r")
        screen.wait(
            "counts started again", lambda lines: first(lines) == "__main__:hot" and rows(lines)[0].calls < calls
        )

        # t: the one thread, then all threads again.
        screen.keys("t")
        screen.wait("MainThread alone", lambda lines: lines[1].endswith("thread MainThread"))
        screen.keys("t")
        screen.wait("all threads", lambda lines: lines[1].endswith("all threads"))

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
        assert any(line.strip().startswith("o   objects") for line in lines)
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


# An objects row: CREATED/s, DESTROYED/s, ALIVE, TYPE, then its bars (not the line "no objects counted yet").
COUNT = r"(-?\d+(?:\.\d+)?[kMG]?)"
OBJECT_ROW = re.compile(rf"^\s*{COUNT}\s+{COUNT}\s+{COUNT}\s+(\S+)(?:\s+(#+))?")


def count(text):
    """top's counts: 1234, 12.3k, 4.5M."""
    scale = {"k": 1e3, "M": 1e6, "G": 1e9}.get(text[-1:], 1)
    return float(text.rstrip("kMG")) * scale


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
    screen = screens(tmp_path, top_command(workload.pid))
    try:
        screen.wait("two threads", lambda lines: lines[1].startswith("threads 2 ") and rows(lines))
        for thread in ("MainThread", "worker"):
            screen.keys("t")
            screen.wait(f"thread {thread}", lambda lines: lines[1].endswith(f"thread {thread}"))
        # The worker sleeps and calls light() between sleeps.
        screen.wait(
            "the worker's functions",
            lambda lines: {"time:sleep", "__main__:light"} <= {row.function for row in rows(lines)},
        )
        screen.keys("t")
        screen.wait("all threads", lambda lines: lines[1].endswith("all threads"))

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


@pytest.mark.parametrize("arguments", [["x"], ["--interval", "0"], ["--list", "12"], ["--bogus"]])
def test_bad_arguments(arguments, tmp_path):
    completed = tracetop("top", *arguments, cwd=tmp_path)
    assert completed.returncode == 2 and "Traceback" not in completed.stderr


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

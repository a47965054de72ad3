"""What a run records, by instrumenter and option, and how the trace ends when the program dies."""

import collections
import json
import signal
import sys

import pytest

from helpers import (
    C_CALL_INSTRUMENTERS,
    PROGRAMS,
    WORKLOADS,
    assert_complete,
    enters,
    python,
    streams,
    tracetop,
    tracetop_lines,
)

FIB_20_CALLS = 21891
FIB_15_CALLS = 1973


def test_every_call_of_fib(tmp_path):
    completed = tracetop("--output", "exp", WORKLOADS / "fib.py", "20", cwd=tmp_path)
    assert completed.stdout == "fib 6765\n"
    assert enters(tmp_path / "exp")["__main__:fib"] == FIB_20_CALLS
    assert_complete(tmp_path / "exp")


def test_nothing_of_tracetops_own_before_the_program(tmp_path):
    """The main thread's first call is the program's module (a Score-P user's first look at traces.otf2 once
    found tracetop's own builtins:vars before it). After it, os.getpid of tracetop's stop is still recorded:
    the stop asks it before switching the recording off, to tell a forked child's copy of the session."""
    completed = tracetop("--output", "exp", PROGRAMS / "fib.py", "5", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    (events,) = [events for _, thread, events, *_ in streams(tmp_path / "exp") if thread["name"] == "MainThread"]
    calls = [event for event in events if event[0] in ("enter", "leave")]
    assert calls[0][:1] + calls[0][2:3] == ("enter", "__main__:<module>"), calls[:3]


def test_threads_are_named(tmp_path):
    completed = tracetop("--output", "exp", WORKLOADS / "threads.py", "4000", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    names = [thread["name"] for _, thread, *_ in streams(tmp_path / "exp")]
    assert sorted(names) == ["MainThread", "worker-0", "worker-1", "worker-2", "worker-3"]
    for worker in range(4):
        assert enters(tmp_path / "exp", f"worker-{worker}")["__main__:chunk"] == 1
    assert_complete(tmp_path / "exp")


@pytest.mark.parametrize(
    "instrumenter",
    [
        "trace",
        pytest.param("monitoring", marks=pytest.mark.skipif(sys.version_info < (3, 12), reason="Python 3.12+")),
    ],
)
def test_other_instrumenters_record_python_calls(instrumenter, tmp_path):
    completed = tracetop("--output", "exp", f"--instrumenter={instrumenter}", WORKLOADS / "fib.py", "15", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert enters(tmp_path / "exp")["__main__:fib"] == FIB_15_CALLS
    assert_complete(tmp_path / "exp")


def test_no_c_calls(tmp_path):
    completed = tracetop("--output", "exp", "--no-c-calls", PROGRAMS / "ending.py", "return", "0.05", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    recorded = enters(tmp_path / "exp")
    assert recorded["__main__:work_for"] == 1
    assert not [name for name in recorded if name.startswith("builtins:")]


def test_c_calls_by_default(tmp_path):
    tracetop("--output", "exp", PROGRAMS / "ending.py", "return", "0.05", cwd=tmp_path)
    assert enters(tmp_path / "exp")["builtins:sum"] >= 1


@pytest.mark.parametrize("instrumenter", C_CALL_INSTRUMENTERS)
def test_c_calls_follow_each_sessions_option(instrumenter, tmp_path):
    """A session without C calls records none of the functions an earlier session has named, and a later one
    with them records them all again."""
    code = (
        "import tracetop\n"
        "def work(): return max(1, 2) + len('ab') + abs(-1)\n"
        "for output, c_calls in (('one', True), ('two', False), ('three', True)):\n"
        f"    with tracetop.start(output=output, c_calls=c_calls, instrumenter={instrumenter!r}):\n"
        "        for _ in range(5): work()\n"
    )
    completed = python("-c", code, cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    for output, c_calls in (("one", True), ("two", False), ("three", True)):
        recorded = enters(tmp_path / output)
        assert recorded["__main__:work"] == 5
        assert [recorded[name] for name in ("builtins:max", "builtins:len", "builtins:abs")] == [5 * c_calls] * 3


@pytest.mark.parametrize("instrumenter", C_CALL_INSTRUMENTERS)
def test_many_c_functions_called_in_turn_are_each_named(instrumenter, tmp_path):
    """More C functions than the hook keeps at hand, some falling where others are kept: each is recorded
    under its own name, every call."""
    completed = tracetop("--output", "exp", f"--instrumenter={instrumenter}", PROGRAMS / "c_functions.py", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    expected = json.loads(completed.stdout)
    assert len(expected) > 250
    (events,) = [events for _, thread, events, *_ in streams(tmp_path / "exp") if thread["name"] == "MainThread"]
    recorded = collections.Counter()
    open_regions = []
    for event in events:
        if event[0] == "enter":
            if open_regions[-1:] == ["__main__:call_in_turn"]:
                recorded[event[2]] += 1
            open_regions.append(event[2])
        elif event[0] == "leave":
            open_regions.pop()
    assert recorded == expected


def test_os_exit_leaves_a_complete_trace(tmp_path):
    completed = tracetop("--output", "exp", PROGRAMS / "ending.py", "os-exit-3", "0.3", cwd=tmp_path)
    assert completed.returncode == 3
    assert enters(tmp_path / "exp")["__main__:work"] >= int(completed.stdout)
    assert_complete(tmp_path / "exp")
    summary = tracetop("summary", "exp", cwd=tmp_path)
    assert (summary.returncode, summary.stderr) == (0, "")
    assert (tmp_path / "exp" / "profile.txt").read_text() == summary.stdout


@pytest.mark.serial  # the writer's deadline (TT_WRITER_PERIOD_MS) is kept where the machine lets its thread run
@pytest.mark.parametrize("how, killed_by", [("sigkill", signal.SIGKILL), ("sigsegv", signal.SIGSEGV)])
def test_a_killed_program_leaves_a_readable_trace(how, killed_by, tmp_path):
    completed = tracetop("--output", "exp", PROGRAMS / "ending.py", how, "0.4", cwd=tmp_path)
    assert completed.returncode == -killed_by
    early_calls = int(completed.stdout)
    assert early_calls > 0
    # What was done 0.1 s and more before the end was written.
    assert enters(tmp_path / "exp")["__main__:work"] >= early_calls
    assert "cut" in {state for *_, state, _ in streams(tmp_path / "exp")}
    summary = tracetop("summary", "exp", cwd=tmp_path)
    assert summary.returncode == 0 and "__main__:work" in summary.stdout
    assert len(tracetop_lines(summary.stderr)) == 1 and "cut" in summary.stderr
    assert "Traceback" not in summary.stderr
    manifest = (tmp_path / "exp" / "MANIFEST.md").read_text()
    assert "ended: not normally" in manifest and "`trace/`" in manifest and "`profile.txt`" not in manifest

"""What tracetop leaves out of a measured process's start: threading (and functools, collections ...) is imported
when the program imports it, not before (src/ext/threadwatch.c). The threads the program starts are measured all
the same, whenever it imports threading, and a child forked after that measures on as before."""

import sys

import pytest

from helpers import (
    INSTRUMENTERS,
    PROGRAMS,
    assert_complete,
    assert_well_nested,
    console_script,
    program_stderr,
    python,
    reader,
    region,
    run,
    tracetop,
)

# What the program would find imported at its start only because tracetop imported it.
HEAVY = ["threading", "functools", "collections", "enum", "re", "argparse", "signal", "shutil"]

SEES = f"""
import sys
print(sorted(name for name in {HEAVY!r} if name in sys.modules))
"""


# The `tracetop` command: `python -m tracetop` has python import runpy, and with it functools and collections.
@pytest.mark.parametrize("how", [[], ["--no-follow"], ["--live"]])
def test_the_program_starts_with_what_it_starts_with_plain(how, tmp_path):
    plain = python("-c", SEES, cwd=tmp_path)
    traced = run(console_script(), "--output", "exp", *how, "-c", SEES, cwd=tmp_path)
    assert plain.returncode == 0 and "threading" not in plain.stdout, plain.stdout
    assert (traced.returncode, traced.stdout, program_stderr(traced.stderr)) == (0, plain.stdout, plain.stderr)


def test_a_followed_child_starts_with_what_it_starts_with_plain(tmp_path):
    parent = f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {SEES!r}], check=True)\n"
    plain = python("-c", SEES, cwd=tmp_path)
    traced = tracetop("--output", "exp", "-c", parent, cwd=tmp_path)
    assert traced.returncode == 0 and traced.stdout == plain.stdout, traced.stderr
    assert len(reader.Trace(str(tmp_path / "exp")).processes) == 2  # the child was measured


@pytest.mark.parametrize("instrumenter", INSTRUMENTERS)
def test_threads_started_after_a_late_import_of_threading_are_measured(instrumenter, tmp_path):
    plain = python(PROGRAMS / "late_threading.py", cwd=tmp_path)
    traced = tracetop("--output", "exp", f"--instrumenter={instrumenter}", PROGRAMS / "late_threading.py", cwd=tmp_path)
    assert plain.stdout.startswith("threading at the start: False\nloader: SourceFileLoader True\n")
    assert (traced.returncode, traced.stdout, program_stderr(traced.stderr)) == (0, plain.stdout, plain.stderr)
    assert_complete(tmp_path / "exp")
    trace = reader.Trace(str(tmp_path / "exp"))
    threads = {thread["name"]: trace.read_stream(0, thread["stream"])[0] for thread in trace.processes[0]["threads"]}
    for name in ("late-0", "late-1", "late-2"):
        # From run() on, as for a thread started while threading was there at the start.
        entered = [event[2] for event in threads[name] if event[0] == "enter"]
        assert entered[:2] == [region("threading", "Thread.run"), "__main__:work"], (name, entered[:5])
    main = [event[2] for event in threads["MainThread"] if event[0] == "enter"]
    assert "threading:<module>" in main and not any("tracetop" in name for name in main)
    # sys.monitoring sees every thread: the one started with _thread, before threading was imported, too.
    if instrumenter == "monitoring" or (instrumenter == "profile" and sys.version_info >= (3, 12)):
        [other] = [name for name in threads if name.startswith("Thread-")]
        assert "__main__:work" in [event[2] for event in threads[other] if event[0] == "enter"]
        assert_well_nested(threads[other])


FORK_AFTER_IMPORT = """
import os, sys
def in_child():
    return sum(range(10))
def fork_here():
    pid = os.fork()
    if pid == 0:
        in_child()
        os._exit(0)
    os.waitpid(pid, 0)
import threading  # after tracetop's at-fork hook: the child's must still run after threading's
fork_here()
print("forked")
"""


def test_a_child_forked_after_a_late_import_of_threading_measures_from_the_fork(tmp_path):
    traced = tracetop("--output", "exp", "-c", FORK_AFTER_IMPORT, cwd=tmp_path)
    assert (traced.returncode, traced.stdout) == (0, "forked\n"), traced.stderr
    assert_complete(tmp_path / "exp")
    trace = reader.Trace(str(tmp_path / "exp"))
    parent, child = trace.processes
    child_events, _, _ = trace.read_stream(1, child["threads"][0]["stream"])
    # Opens with what was open at the fork, then os.fork returns: threading's at-fork work is not recorded.
    assert [event[2] for event in child_events[:3]] == ["__main__:<module>", "__main__:fork_here", "posix:fork"]
    assert child_events[3][::2] == ("leave", "posix:fork")
    assert "__main__:in_child" in [event[2] for event in child_events if event[0] == "enter"]

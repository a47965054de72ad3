"""os.fork under measurement: the child measures on into the parent's experiment, as a process of its own
whose stream continues the forking thread's; SIGTERM completes a trace before it kills."""

import os
import signal
import subprocess
import sys

import pytest

from helpers import (
    INSTRUMENTERS,
    PROGRAMS,
    assert_complete,
    assert_well_nested,
    environment,
    program_stderr,
    python,
    reader,
    region,
    tracetop,
    tracetop_lines,
)


def events(trace, process_index, name=None):
    """The events of one stream (by thread name; the only one when None)."""
    threads = trace.processes[process_index]["threads"]
    (stream,) = [thread["stream"] for thread in threads if name is None or thread["name"] == name]
    recorded, state, problem = trace.read_stream(process_index, stream)
    assert (state, problem) == ("complete", None)
    return recorded


def run_both(tmp_path, *arguments, options=()):
    plain = python(PROGRAMS / "forking.py", *arguments, cwd=tmp_path)
    traced = tracetop("--output", "exp", *options, PROGRAMS / "forking.py", *arguments, cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    assert (traced.returncode, traced.stdout, program_stderr(traced.stderr)) == (0, plain.stdout, plain.stderr)
    return traced


def parent_and_child(experiment):
    trace = reader.Trace(str(experiment))
    assert trace.problems == []
    parent, child = trace.processes  # by start time
    assert child["ppid"] == parent["pid"] and child["name"] == parent["name"]
    return trace


def entered(recorded):
    return [event[2] for event in recorded if event[0] == "enter"]


@pytest.mark.parametrize("how", ["exit", "return"])
def test_the_child_continues_the_forking_stream(how, tmp_path):
    run_both(tmp_path, how)
    assert_complete(tmp_path / "exp")
    trace = parent_and_child(tmp_path / "exp")
    parent, child = events(trace, 0), events(trace, 1)
    # The child's stream opens with what was open when it forked, all entered at one time ...
    stack = ["__main__:<module>", "__main__:main", "__main__:fork_here", "posix:fork"]
    assert [event[2] for event in child[:4]] == stack and {event[1] for event in child[:4]} == {child[0][1]}
    # ... in which it goes on: os.fork returns (tracetop's at-fork work is not recorded), then fork_here calls
    # in_child and returns only after it.
    assert child[4][::2] == ("leave", "posix:fork")
    in_child = child.index(next(event for event in child if event[::2] == ("enter", "__main__:in_child")))
    assert in_child < child.index(next(event for event in child if event[::2] == ("leave", "__main__:fork_here")))
    assert_well_nested(child)
    # ... and has its own calls, none of the parent's: those before the fork are the parent's alone.
    assert "__main__:in_child" in entered(child) and "__main__:before_fork" not in entered(child)
    assert "__main__:in_child" not in entered(parent) and "__main__:before_fork" in entered(parent)
    # One time axis: the child runs within the parent's fork and wait.
    fork_begins = next(event[1] for event in parent if event[:3:2] == ("enter", "posix:fork"))
    wait_ends = next(event[1] for event in parent if event[:3:2] == ("leave", "posix:waitpid"))
    assert fork_begins <= child[0][1] and child[-1][1] <= wait_ends


def test_a_fork_from_a_thread_continues_that_thread(tmp_path):
    run_both(tmp_path, "thread")
    assert_complete(tmp_path / "exp")
    trace = parent_and_child(tmp_path / "exp")
    assert [thread["name"] for thread in trace.processes[1]["threads"]] == ["forker"]
    child = events(trace, 1)
    run = region("threading", "Thread.run")
    assert child[0][2] == run and child[-2][::2] == ("leave", run)
    assert "__main__:in_child" in entered(child)
    assert "__main__:main" not in entered(events(trace, 1))  # the main thread's stream stays the parent's


# Long enough for a loaded machine; a child that tracetop keeps alive would never end.
HANG_TIMEOUT = 120


def run_or_hang(*arguments, cwd):
    """Runs `python ARGUMENTS` in a process group of its own, and fails the test, naming it, when it has not ended
    after HANG_TIMEOUT: a child kept alive keeps its parent in waitpid. The whole group is killed then."""
    process = subprocess.Popen(
        [sys.executable, *map(str, arguments)],
        cwd=cwd,
        env=environment(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=HANG_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail(f"{' '.join(map(str, arguments))} hung: still running after {HANG_TIMEOUT} s")
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def fork_from_thread(tmp_path, how, instrumenter):
    """forking.py HOW plain and under tracetop, which must end as plain, with its output; the experiment's trace."""
    plain = run_or_hang(PROGRAMS / "forking.py", how, cwd=tmp_path)
    traced = run_or_hang(
        "-m",
        "tracetop",
        "run",
        "--output",
        "exp",
        "--instrumenter",
        instrumenter,
        PROGRAMS / "forking.py",
        how,
        cwd=tmp_path,
    )
    assert (plain.returncode, plain.stderr) == (0, "")
    assert plain.stdout.startswith("forker True\n") and "child status 0" in plain.stdout
    assert (traced.returncode, traced.stdout, program_stderr(traced.stderr)) == (0, plain.stdout, "")
    assert_complete(tmp_path / "exp")
    trace = parent_and_child(tmp_path / "exp")
    assert trace.processes[1]["ended"]
    summary = tracetop("summary", "exp", cwd=tmp_path)
    assert summary.returncode == 0, summary.stderr
    child = trace.processes[1]["pid"]
    assert f'process {child} "{PROGRAMS / "forking.py"}" (child of {trace.processes[0]["pid"]}, ended normally)' in (
        summary.stdout
    )
    return trace


def assert_ran_to_its_end(recorded, function):
    """A thread's stream records `function` and the return of its Thread.run."""
    run = region("threading", "Thread.run")
    assert function in entered(recorded) and ("leave", run) in [event[::2] for event in recorded]


@pytest.mark.parametrize("instrumenter", INSTRUMENTERS + ["none"])
def test_a_child_forked_from_a_thread_ends_with_that_thread(instrumenter, tmp_path):
    # In the child the forking thread is the only one, its main one; when it returns, the child ends (status 0),
    # tracetop's own threads there notwithstanding, its trace complete.
    trace = fork_from_thread(tmp_path, "thread-return", instrumenter)
    if instrumenter != "none":
        assert_ran_to_its_end(events(trace, 1, "forker"), "__main__:in_child")


@pytest.mark.parametrize("instrumenter", INSTRUMENTERS)
def test_a_child_forked_from_a_thread_ends_with_its_last_thread(instrumenter, tmp_path):
    # The thread the child starts runs on once the forking one has ended: the child ends with it, its work recorded.
    trace = fork_from_thread(tmp_path, "thread-outlived", instrumenter)
    assert_ran_to_its_end(events(trace, 1, "late"), "__main__:late")


def test_no_follow_measures_the_parent_only(tmp_path):
    run_both(tmp_path, "exit", options=["--no-follow"])
    trace = reader.Trace(str(tmp_path / "exp"))
    assert [process["name"] for process in trace.processes] == [str(PROGRAMS / "forking.py")]
    assert "__main__:in_child" not in entered(events(trace, 0))


def test_a_child_ended_by_sigterm_completes_its_trace(tmp_path):
    traced = run_both(tmp_path, "sigterm")
    assert f"child status {-signal.SIGTERM}" in traced.stdout
    assert_complete(tmp_path / "exp")
    trace = parent_and_child(tmp_path / "exp")
    assert trace.processes[1]["ended"]
    assert "__main__:in_child" in entered(events(trace, 1))


SIGTERM_ITSELF = """
import os, signal, time
print(signal.getsignal(signal.SIGTERM) is signal.SIG_DFL, flush=True)
def work():
    return sum(range(100))
work()
os.kill(os.getpid(), signal.SIGTERM)
time.sleep(10)
print("not reached")
"""


def test_sigterm_ends_a_measured_process_as_it_would_end_it(tmp_path):
    plain = python("-c", SIGTERM_ITSELF, cwd=tmp_path)
    traced = tracetop("--output", "exp", "-c", SIGTERM_ITSELF, cwd=tmp_path)
    assert (plain.returncode, plain.stdout) == (-signal.SIGTERM, "True\n")
    assert (traced.returncode, traced.stdout, program_stderr(traced.stderr)) == (-signal.SIGTERM, "True\n", "")
    assert any("experiment in exp/" in line for line in tracetop_lines(traced.stderr))
    assert_complete(tmp_path / "exp")
    assert "killed by SIGTERM" in (tmp_path / "exp" / "MANIFEST.md").read_text()
    assert "(ended: killed by SIGTERM)" in tracetop("summary", "exp", cwd=tmp_path).stdout
    assert (tmp_path / "exp" / "profile.txt").read_text().startswith("tracetop summary")
    profile = reader.profile(str(tmp_path / "exp"))
    assert {region["name"]: region["visits"] for region in profile["regions"]}["__main__:work"] == 1


OWN_HANDLER = """
import os, signal, sys
def handler(signo, frame):
    print("handled", signo, flush=True)
    sys.exit(3)
signal.signal(signal.SIGTERM, handler)
os.kill(os.getpid(), signal.SIGTERM)
signal.pause()
"""


def test_the_programs_own_sigterm_handler_runs(tmp_path):
    plain = python("-c", OWN_HANDLER, cwd=tmp_path)
    traced = tracetop("--output", "exp", "-c", OWN_HANDLER, cwd=tmp_path)
    assert (plain.returncode, plain.stdout) == (3, f"handled {signal.SIGTERM.value}\n")
    assert (traced.returncode, traced.stdout, program_stderr(traced.stderr)) == (3, plain.stdout, "")
    assert_complete(tmp_path / "exp")

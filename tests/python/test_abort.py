"""A process that dies of a fatal signal at once leaves its trace readable up to the crash and dies as it
would have; children that leave no trace of their own (exec'd, killed as they start) leave a healthy
experiment."""

import signal

import pytest

from helpers import PROGRAMS, program_stderr, python, reader, tracetop


def crashed_process(experiment):
    """The one process of the experiment that did not end, with the regions its threads entered."""
    trace = reader.Trace(str(experiment))
    assert trace.problems == []
    crashed = [(index, process) for index, process in enumerate(trace.processes) if not process["ended"]]
    ((index, process),) = crashed
    entered = []
    for thread in process["threads"]:
        events, state, problem = trace.read_stream(index, thread["stream"])
        entered += [event[2] for event in events if event[0] == "enter"]
    return process, entered


@pytest.mark.parametrize("where", ["main", "thread", "fork", "spawn"])
def test_abort_leaves_the_trace_up_to_the_crash(where, tmp_path):
    plain = python("-X", "faulthandler", PROGRAMS / "aborting.py", where, cwd=tmp_path)
    traced = python(
        "-X", "faulthandler", "-m", "tracetop", "run", "--output", "exp", PROGRAMS / "aborting.py", where, cwd=tmp_path
    )
    if where in ("main", "thread"):
        assert plain.returncode == -signal.SIGABRT
    else:
        assert plain.returncode == 0 and f"child ended with {-signal.SIGABRT}" in plain.stdout
    assert "Fatal Python error: Aborted" in plain.stderr and "Fatal Python error: Aborted" in traced.stderr
    assert (traced.returncode, traced.stdout) == (plain.returncode, plain.stdout)
    process, entered = crashed_process(tmp_path / "exp")
    assert "__main__:square_sum" in entered and entered[-1] == "posix:abort"
    summary = tracetop("summary", "exp", cwd=tmp_path)
    assert summary.returncode == 0 and f"process {process['pid']} " in summary.stdout
    assert "did not end normally" in summary.stdout and "trace cut short" in summary.stderr
    if where == "main":  # every command that reads the trace makes its output, and says what was cut
        for command in (["convert", "exp", "--to", "chrome"], ["score", "exp"], ["report", "exp", "-o", "r.html"]):
            made = tracetop(*command, cwd=tmp_path)
            assert made.returncode == 0 and "warning: trace cut short" in made.stderr, (command, made.stderr)


@pytest.mark.parametrize("how", ["exec", "instant"])
def test_children_that_leave_no_trace_of_their_own(how, tmp_path):
    plain = python(PROGRAMS / "aborting.py", how, cwd=tmp_path)
    traced = tracetop("--output", "exp", PROGRAMS / "aborting.py", how, cwd=tmp_path)
    assert (traced.returncode, traced.stdout, program_stderr(traced.stderr)) == (0, plain.stdout, plain.stderr)
    summary = tracetop("summary", "exp", cwd=tmp_path)
    assert summary.returncode == 0, summary.stderr
    trace = reader.Trace(str(tmp_path / "exp"))
    assert len(trace.processes) == 2
    assert all(f"process {process['pid']} " in summary.stdout for process in trace.processes)
    if how == "exec":  # the child's trace ends complete where it exec'd
        assert [process["ended"] for process in trace.processes] == [True, True]

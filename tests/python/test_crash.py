"""A child process that crashes leaves its own streams readable up to the crash, and the rest of the
experiment intact."""

import signal

import pytest

from helpers import PROGRAMS, program_stderr, python, reader, tracetop, tracetop_lines


@pytest.mark.parametrize(
    "start, crash, signo",
    [
        ("fork", "sigsegv", signal.SIGSEGV),
        ("spawn", "abort", signal.SIGABRT),
        ("subprocess", "sigkill", signal.SIGKILL),
    ],
)
def test_a_crashing_child(start, crash, signo, tmp_path):
    plain = python(PROGRAMS / "crashing.py", start, crash, cwd=tmp_path)
    traced = tracetop("--output", "exp", PROGRAMS / "crashing.py", start, crash, cwd=tmp_path)
    assert f"child ended with {-signo} " in plain.stdout
    assert (traced.returncode, traced.stdout, program_stderr(traced.stderr)) == (0, plain.stdout, plain.stderr)

    trace = reader.Trace(str(tmp_path / "exp"))
    assert trace.problems == []
    parent, crashed = trace.processes
    assert parent["ended"] and not crashed["ended"] and crashed["ppid"] == parent["pid"]
    for index, process in enumerate(trace.processes):
        for thread in process["threads"]:
            events, state, problem = trace.read_stream(index, thread["stream"])
            if process is parent:
                assert (state, problem) == ("complete", None)
            else:  # cut where the writer got to, with what came before the crash
                assert state == "cut" and problem.startswith(f"process {crashed['pid']} thread ")
                entered = [event[2] for event in events if event[0] == "enter"]
                assert entered.count("__main__:square_sum") == 1 and "time:sleep" in entered

    # The parent's profile.txt and `tracetop summary` hold every process, and say once what was cut.
    (warning,) = [line for line in tracetop_lines(traced.stderr) if "warning" in line]
    assert warning.startswith(f"tracetop: warning: trace cut short: process {crashed['pid']} ")
    summary = tracetop("summary", "exp", cwd=tmp_path)
    assert summary.returncode == 0 and summary.stdout == (tmp_path / "exp" / "profile.txt").read_text()
    assert f"process {crashed['pid']} " in summary.stdout and "did not end normally" in summary.stdout
    visits = {region["name"]: region["visits"] for region in reader.profile(str(tmp_path / "exp"))["regions"]}
    assert visits["__main__:square_sum"] == 2  # the parent's, the child's

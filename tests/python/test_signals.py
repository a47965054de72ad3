"""The program's signals are its own: tracetop's threads take none of them, and a measurement started and
stopped in the program leaves no thread behind."""

import signal
import subprocess
import sys

import pytest

from helpers import INSTRUMENTERS, PROGRAMS, environment, program_stderr, python, reader, tracetop


@pytest.mark.parametrize("instrumenter", INSTRUMENTERS)
def test_a_blocked_signal_waits_for_sigwait(instrumenter, tmp_path):
    plain = python(PROGRAMS / "sigwait.py", cwd=tmp_path)
    assert (plain.returncode, plain.stdout) == (0, "took SIGUSR1\n")
    traced = tracetop("--output", "exp", f"--instrumenter={instrumenter}", PROGRAMS / "sigwait.py", cwd=tmp_path)
    assert traced.returncode != -signal.SIGUSR1
    assert (traced.returncode, traced.stdout, program_stderr(traced.stderr)) == (0, plain.stdout, plain.stderr)


@pytest.mark.parametrize("instrumenter", INSTRUMENTERS)
def test_start_and_stop_leave_signals_and_threads_as_they_were(instrumenter, tmp_path):
    measured = python(PROGRAMS / "sigwait.py", "session", "exp", instrumenter, cwd=tmp_path)
    assert measured.returncode != -signal.SIGUSR1
    assert (measured.returncode, measured.stdout) == (0, "took SIGUSR1\nthreads left behind: 0\n")


FINISHING = "tracetop: finishing: "
FIRST_CTRL_C = "tracetop: note: finishing the measurement"


def _interrupted_while_finishing(tmp_path, times):
    """`tracetop run -v --format chrome,perfetto fib.py 24`, sent SIGINT `times` times once it says it finishes:
    each after the line that the one before was taken. (exit status, its stderr's lines)."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tracetop",
            "-v",
            "--output",
            "exp",
            "--format",
            "chrome,perfetto",
            PROGRAMS / "fib.py",
            "24",
        ],
        cwd=tmp_path,
        env=environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines, sent = [], 0
    for line in process.stderr:
        lines.append(line.rstrip("\n"))
        if sent < times and line.startswith(FINISHING if sent == 0 else FIRST_CTRL_C):
            process.send_signal(signal.SIGINT)
            sent += 1
    assert process.wait(timeout=300) is not None and sent == times, lines
    return process.returncode, lines


def test_ctrl_c_while_finishing_is_said_and_finishing_goes_on(tmp_path):
    """Ctrl-C once the program has ended, while tracetop finishes: it says it finishes, and finishes (profile.txt,
    the conversions, MANIFEST.md saying how the program ended), the program's exit status kept."""
    status, lines = _interrupted_while_finishing(tmp_path, 1)
    assert status == 0 and not any("Traceback" in line or "KeyboardInterrupt" in line for line in lines), lines
    assert sum(line.startswith(FIRST_CTRL_C) for line in lines) == 1, lines
    experiment = tmp_path / "exp"
    assert "__main__:fib" in (experiment / "profile.txt").read_text()
    assert (experiment / "trace.chrome.json").stat().st_size and (experiment / "trace.perfetto-trace").stat().st_size
    assert "- ended: " in (manifest := (experiment / "MANIFEST.md").read_text()) and "exit status 0" in manifest
    assert "not normally" not in manifest
    assert trace_is_complete(experiment)


def test_ctrl_c_twice_while_finishing_abandons_what_is_left(tmp_path):
    """A second Ctrl-C abandons what is left of profile.txt and the conversions, named in one line; MANIFEST.md
    still says how the program ended, and the trace is whole."""
    status, lines = _interrupted_while_finishing(tmp_path, 2)
    assert status == 0 and not any("Traceback" in line or "KeyboardInterrupt" in line for line in lines), lines
    experiment = tmp_path / "exp"
    said = [line for line in lines if "abandoned" in line]
    assert len(said) <= 1, lines
    for name in ("profile.txt", "trace.chrome.json", "trace.perfetto-trace"):
        assert (experiment / name).exists() != (bool(said) and f" {name}" in said[0]), (name, lines)
    assert "exit status 0" in (manifest := (experiment / "MANIFEST.md").read_text()) and "not normally" not in manifest
    assert trace_is_complete(experiment)


def trace_is_complete(experiment):
    """Whether the trace reads back whole, each process's end recorded."""
    trace = reader.Trace(str(experiment))
    return not trace.problems and all(process["ended"] for process in trace.processes)

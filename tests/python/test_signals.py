"""The program's signals are its own: tracetop's threads take none of them, and a measurement started and
stopped in the program leaves no thread behind."""

import signal

import pytest

from helpers import INSTRUMENTERS, PROGRAMS, program_stderr, python, tracetop


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

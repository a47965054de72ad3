"""A program's own profile and trace functions (sys.setprofile, sys.settrace, threading.setprofile and
setprofile_all_threads) receive under tracetop exactly the events they receive without it."""

import sys

import pytest

from helpers import INSTRUMENTERS, PROGRAMS, program_stderr, python, tracetop


@pytest.mark.parametrize("instrumenter", [*INSTRUMENTERS, "none"])
@pytest.mark.parametrize("c_calls", ["--c-calls", "--no-c-calls"])
def test_own_profiler_sees_what_it_sees_plain(tmp_path, instrumenter, c_calls):
    plain = python(PROGRAMS / "own_profiler.py", cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    assert "('c_call', 'setprofile')" in plain.stdout  # the program's profiler did record
    traced = tracetop(
        "run", "--output", "exp", f"--instrumenter={instrumenter}", c_calls, PROGRAMS / "own_profiler.py", cwd=tmp_path
    )
    assert traced.returncode == 0, traced.stderr
    assert program_stderr(traced.stderr) == ""
    assert traced.stdout.splitlines() == plain.stdout.splitlines()


@pytest.mark.skipif(sys.version_info < (3, 12), reason="before 3.12 the profile instrumenter is the profile hook")
def test_own_profiler_beside_the_profile_hook(tmp_path):
    """From 3.12 `profile` records through the profile hook with a filter (here one that excludes nothing)."""
    (tmp_path / "nothing.filter").write_text(
        "SCOREP_REGION_NAMES_BEGIN\n  EXCLUDE nothing:here\nSCOREP_REGION_NAMES_END\n"
    )
    plain = python(PROGRAMS / "own_profiler.py", cwd=tmp_path)
    traced = tracetop(
        "run", "--output", "exp", "--filter", "nothing.filter", PROGRAMS / "own_profiler.py", cwd=tmp_path
    )
    assert traced.returncode == 0, traced.stderr
    assert program_stderr(traced.stderr) == ""
    assert traced.stdout.splitlines() == plain.stdout.splitlines()


def test_setprofile_is_sys_own_after_stop(tmp_path):
    """Stopping puts sys.setprofile back; an error of the real setter reaches the program as plain."""
    code = (
        "import sys, tracetop\n"
        "original = sys.setprofile\n"
        "session = tracetop.start(output='exp')\n"
        "try:\n    sys.setprofile()\nexcept TypeError as e:\n    print(e)\n"
        "session.stop()\n"
        "print(sys.setprofile is original)\n"
    )
    plain_error = python(
        "-c", "import sys\ntry:\n    sys.setprofile()\nexcept TypeError as e:\n    print(e)", cwd=tmp_path
    )
    completed = python("-c", code, cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == plain_error.stdout + "True\n"

"""The program's file descriptors are its own: tracetop holds none between the writer's passes (a pass opens
the trace files it writes, and closes them at its end), so a program that lists its descriptors sees what it
sees plain (a descriptor open at every one of several listings; the writer's, open for the moment of one pass,
is not held), and one that closes them all and opens files of its own gets its files, not tracetop's writes
(CPython's test_subprocess.test_pass_fds_redirected: a child lists the descriptors it inherited)."""

import pytest

from helpers import INSTRUMENTERS, PROGRAMS, program_stderr, python, tracetop


@pytest.mark.parametrize("options", [[f"--instrumenter={i}"] for i in INSTRUMENTERS] + [["--live"]])
def test_the_program_sees_its_own_descriptors(options, tmp_path):
    plain = python(PROGRAMS / "descriptors.py", "list", cwd=tmp_path)
    traced = tracetop("--output", "exp", *options, PROGRAMS / "descriptors.py", "list", cwd=tmp_path)
    assert plain.returncode == 0 and plain.stdout.startswith("[0, 1, 2")
    assert (traced.returncode, traced.stdout, program_stderr(traced.stderr)) == (0, plain.stdout, plain.stderr)
    assert tracetop("summary", "exp", cwd=tmp_path).returncode == 0


def test_a_program_that_closes_every_descriptor(tmp_path):
    traced = tracetop("--output", "exp", PROGRAMS / "descriptors.py", "closerange", cwd=tmp_path)
    assert (traced.returncode, traced.stdout) == (0, "intact\n"), traced.stderr
    summary = tracetop("summary", "exp", cwd=tmp_path)
    assert summary.returncode == 0 and "warning" not in summary.stderr, (summary.stderr, traced.stderr)
    assert "descriptors.py:busy" in summary.stdout or "__main__:busy" in summary.stdout

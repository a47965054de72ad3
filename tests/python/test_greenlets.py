"""greenlet (gevent): tracetop does not follow its switches, and says so, where a user reads what was recorded."""

import pytest

from helpers import PROGRAMS, python, tracetop, tracetop_lines

pytest.importorskip("gevent", reason="the Makefile installs gevent in the test environment")

NOT_FOLLOWED = "greenlet switches are not followed"


def test_a_program_using_greenlets_is_told_what_is_not_followed(tmp_path):
    """Under tracetop the program prints what it prints plain; tracetop says, once, as the run ends, in
    MANIFEST.md and in `summary`, that greenlet switches are not followed."""
    plain = python(PROGRAMS / "greenlets.py", cwd=tmp_path)
    measured = tracetop("--output", "exp", PROGRAMS / "greenlets.py", cwd=tmp_path)
    assert (measured.returncode, measured.stdout) == (plain.returncode, plain.stdout) == (0, plain.stdout)
    said = [line for line in tracetop_lines(measured.stderr) if NOT_FOLLOWED in line]
    assert len(said) == 1 and said[0].startswith("tracetop: note: "), measured.stderr
    assert f"- not recorded: {NOT_FOLLOWED}" in (tmp_path / "exp" / "MANIFEST.md").read_text()
    summary = tracetop("summary", "exp", cwd=tmp_path)
    assert summary.returncode == 0, summary.stderr
    assert f"  not recorded: {NOT_FOLLOWED}" in summary.stdout, summary.stdout


def test_a_program_without_greenlets_is_told_nothing_of_them(tmp_path):
    measured = tracetop("--output", "exp", PROGRAMS / "greenlets.py", "20", "--without", cwd=tmp_path)
    assert measured.returncode == 0, measured.stderr
    assert NOT_FOLLOWED not in measured.stderr
    assert NOT_FOLLOWED not in (tmp_path / "exp" / "MANIFEST.md").read_text()
    assert NOT_FOLLOWED not in tracetop("summary", "exp", cwd=tmp_path).stdout

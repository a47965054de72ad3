"""The program's code runs as without tracetop: on 3.12, sys.monitoring's instrumenting turns the code's
superinstructions back into plain instructions, and tracetop gives them back (src/ext/requicken.h) where
no tool instruments them; another tool's line events (sys.settrace) still see every line."""

import sys

import pytest

from helpers import PROGRAMS, assert_complete, enters, python, region, tracetop

# sys.monitoring (the default on 3.12+), and the profile hook, which --filter keeps (on 3.12 CPython runs it
# on sys.monitoring too).
HOOKS = [["--instrumenter=profile"], ["--instrumenter=profile", "--filter", "none.filter"]] + (
    [["--instrumenter=monitoring"]] if sys.version_info >= (3, 12) else []
)


@pytest.mark.parametrize("hook", HOOKS, ids=" ".join)
def test_superinstructions_and_line_events_as_without_tracetop(hook, tmp_path):
    plain = python(PROGRAMS / "superinstructions.py", cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    if sys.version_info[:2] == (3, 12):  # the premise: 3.12 quickens the pairs
        assert "LOAD_FAST__LOAD_FAST" in plain.stdout and "STORE_FAST__LOAD_FAST" in plain.stdout
    (tmp_path / "none.filter").write_text("SCOREP_REGION_NAMES_BEGIN\nEXCLUDE nothing:here\nSCOREP_REGION_NAMES_END\n")
    completed = tracetop("--output", "exp", *hook, PROGRAMS / "superinstructions.py", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == plain.stdout
    calls = enters(tmp_path / "exp")
    assert calls[region("__main__", "work")] == 22 and calls[region("__main__", "fresh")] == 2
    assert_complete(tmp_path / "exp")

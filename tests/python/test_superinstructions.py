"""The program's code runs as without tracetop: on 3.12, sys.monitoring's instrumenting turns the code's
superinstructions back into plain instructions, and tracetop gives them back (src/ext/requicken.h) where
no tool instruments them; another tool's line events (sys.settrace) still see every line."""
import sys

import pytest

from helpers import PROGRAMS, assert_complete, enters, python, region, tracetop

INSTRUMENTERS = ["profile"] + (["monitoring"] if sys.version_info >= (3, 12) else [])


@pytest.mark.parametrize("instrumenter", INSTRUMENTERS)
def test_superinstructions_and_line_events_as_without_tracetop(instrumenter, tmp_path):
    plain = python(PROGRAMS / "superinstructions.py", cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    if sys.version_info[:2] == (3, 12):  # the premise: 3.12 quickens the pairs
        assert "LOAD_FAST__LOAD_FAST" in plain.stdout and "STORE_FAST__LOAD_FAST" in plain.stdout
    completed = tracetop("--output", "exp", f"--instrumenter={instrumenter}", PROGRAMS / "superinstructions.py",
                         cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == plain.stdout
    calls = enters(tmp_path / "exp")
    assert calls[region("__main__", "work")] == 22 and calls[region("__main__", "fresh")] == 2
    assert_complete(tmp_path / "exp")

"""A program that profiles itself with cProfile runs under tracetop as it runs plain. On 3.12+ cProfile takes
sys.monitoring's profiler tool id, and tracetop's default instrumenter records through sys.monitoring there: it
takes a tool id of its own, so both record. (Before 3.12 cProfile sets its C profile function in the place of
tracetop's profile hook on its thread, which then records nothing more there.)"""

import sys

import pytest

from helpers import INSTRUMENTERS, enters, python, tracetop

PROGRAM = """\
import cProfile, io, pstats
def work():
    return sum(range(1000))
profiler = cProfile.Profile()
profiler.enable()
work()
profiler.disable()
out = io.StringIO()
pstats.Stats(profiler, stream=out).print_stats()
print([line.split()[-1] for line in out.getvalue().splitlines() if "work" in line])
"""


@pytest.mark.parametrize("instrumenter", INSTRUMENTERS)
def test_program_profiling_itself(tmp_path, instrumenter):
    (tmp_path / "own.py").write_text(PROGRAM)
    plain = python("own.py", cwd=tmp_path)
    assert plain.returncode == 0 and "work)" in plain.stdout, plain.stderr
    traced = tracetop("--output", "exp", f"--instrumenter={instrumenter}", "own.py", cwd=tmp_path)
    assert traced.returncode == 0, traced.stderr
    assert traced.stdout == plain.stdout
    if instrumenter != "profile" or sys.version_info >= (3, 12):
        assert enters(tmp_path / "exp")["__main__:work"] == 1

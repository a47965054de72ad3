"""A program that profiles itself with cProfile runs under tracetop as it runs plain, and tracetop records
all the while. On 3.12+ cProfile takes sys.monitoring's profiler tool id, and tracetop's default instrumenter
records through sys.monitoring there: it takes a tool id of its own, so both record. Before 3.12 cProfile
sets its C profile function in the place of tracetop's profile hook; tracetop puts its hook back in front of
it, which hands cProfile every event."""

import pytest

from helpers import INSTRUMENTERS, assert_complete, enters, python, tracetop

PROGRAM = """\
import cProfile, io, pstats, sys
calls = 0
def work(n):
    global calls
    calls += 1
    return n if n < 2 else work(n - 1) + work(n - 2)
def more(n):
    return sum(work(i) for i in range(n))
work(5)
profiler = cProfile.Profile()
profiler.enable()
print("getprofile is the profiler:", sys.getprofile() is profiler)
work(10)
profiler.disable()
print("getprofile after:", sys.getprofile())
out = io.StringIO()
pstats.Stats(profiler, stream=out).print_stats()
print([line.split()[0] + " " + line.split()[-1] for line in out.getvalue().splitlines() if "work" in line])
cProfile.run("more(8)", sort="ncalls")
more(10)
print("work called", calls, "times")
"""


def without_times(stdout):
    """The program's output with cProfile's times left out: its call counts and functions stay."""
    lines = []
    for line in stdout.splitlines():
        fields = line.split()
        if "function calls" in line:
            lines.append(line.split(" in ")[0])
        elif len(fields) >= 6 and fields[1].replace(".", "").isdigit():
            lines.append(f"{fields[0]} {' '.join(fields[5:])}")
        else:
            lines.append(line)
    return lines


@pytest.mark.parametrize("instrumenter", INSTRUMENTERS)
def test_program_profiling_itself(tmp_path, instrumenter):
    (tmp_path / "own.py").write_text(PROGRAM)
    plain = python("own.py", cwd=tmp_path)
    assert plain.returncode == 0 and "work)" in plain.stdout, plain.stderr
    traced = tracetop("--output", "exp", f"--instrumenter={instrumenter}", "own.py", cwd=tmp_path)
    assert traced.returncode == 0, traced.stderr
    assert sorted(without_times(traced.stdout)) == sorted(without_times(plain.stdout))  # ties in any order
    assert_complete(tmp_path / "exp")
    assert enters(tmp_path / "exp")["__main__:work"] == int(plain.stdout.split("work called ")[1].split()[0])

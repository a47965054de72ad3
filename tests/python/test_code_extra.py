"""tracetop caches each code object's region in CPython's co_extra slots, and its hooks read the first slot
without a call (src/ext/pyregions.h: tt_code_entry_first). Another tool that asked for a slot before tracetop was imported (a
JIT, a debugger, a second profiler) owns the first one: tracetop's hooks then take their slow path, and the
trace must be the one it records when it has the first slot: the same calls, well nested, the program's output
the same."""

import pytest

from helpers import INSTRUMENTERS, PROGRAMS, assert_complete, enters, python, tracetop

# The slot is asked for before tracetop is imported, then tracetop's command line runs in the same interpreter.
FIRST_SLOT_TAKEN = """
import ctypes, runpy, sys
api = ctypes.pythonapi
request = getattr(api, "PyUnstable_Eval_RequestCodeExtraIndex", None) or api._PyEval_RequestCodeExtraIndex
request.restype, request.argtypes = ctypes.c_ssize_t, [ctypes.c_void_p]
assert "tracetop" not in sys.modules
print("slot", request(None), file=sys.stderr)
sys.argv = ["tracetop", *sys.argv[1:]]
runpy.run_module("tracetop", run_name="__main__", alter_sys=True)
"""


@pytest.mark.parametrize("instrumenter", INSTRUMENTERS)
def test_calls_recorded_as_with_the_first_slot(tmp_path, instrumenter):
    options = [f"--instrumenter={instrumenter}"] if instrumenter else []
    program = PROGRAMS / "other_extra.py"
    plain = python(program, cwd=tmp_path)
    first = tracetop("run", *options, "--output", "first", program, cwd=tmp_path)
    # The other tool's data in fib's slot 0, which a hook reading that slot as its own would take for a region.
    second = python("-c", FIRST_SLOT_TAKEN, "run", *options, "--output", "second", program, "other", cwd=tmp_path)
    assert first.returncode == second.returncode == plain.returncode == 0, second.stderr
    assert "slot 0" in second.stderr  # the other tool has the first slot, tracetop a later one
    assert first.stdout == second.stdout == plain.stdout
    assert_complete(tmp_path / "second")
    # Read as tracetop's own, the other tool's data would make every fast-path call of fib one of region 4660.
    assert enters(tmp_path / "second")["__main__:fib"] == enters(tmp_path / "first")["__main__:fib"] == 8361

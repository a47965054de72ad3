"""view.idx against the trace it indexes: at most half its size (lod_file.h: the spans in compressed blocks, every
other record in one compressed catalog), on runs of nested calls in three threads and on one with --objects.
(A trace of a few dozen calls is not held to it: see bench/README.md, "view.idx size".)"""
import pytest

from helpers import PROGRAMS, tracetop
from test_objects import needs_tracer
from tracetop import _tracetop

NESTED = """
import sys, threading
def leaf(x):
    return abs(x) + len(str(x & 7))
def middle(x):
    return leaf(x) + min(x, 3)
def work(n):
    return sum(middle(i) + 1 for i in range(n))
threads = [threading.Thread(target=work, args=(int(sys.argv[1]),)) for _ in range(2)]
for t in threads:
    t.start()
work(int(sys.argv[1]))
for t in threads:
    t.join()
"""

def ratio(experiment):
    _tracetop.Index(str(experiment))
    trace = sum(f.stat().st_size for f in (experiment / "trace").rglob("*") if f.is_file())
    return (experiment / "view.idx").stat().st_size / trace


def record(where, program, *arguments, options=()):
    completed = tracetop("run", *options, "--output", "exp", program, *arguments, cwd=where)
    assert completed.returncode == 0, completed.stderr
    return where / "exp"


@pytest.mark.parametrize("calls", [20_000, 300_000])
def test_nested_calls_in_threads(tmp_path, calls):
    (tmp_path / "nested.py").write_text(NESTED)
    assert ratio(record(tmp_path, "nested.py", str(calls // 9))) <= 0.5


@needs_tracer
def test_objects(tmp_path):
    """The run of test_viewer_objects.py: 150,000 objects made, their counts recorded every 100 ms."""
    experiment = record(tmp_path, PROGRAMS / "objects_viewer.py", options=("--objects",))
    index = _tracetop.Index(str(experiment))
    assert index.objects(index.begin_ns, index.end_ns + 1, [0])[:4] != b"\0\0\0\0"
    assert ratio(experiment) <= 0.5

"""view.idx against the trace it indexes: at most half its size (lod_file.h: level 0, every call, is the trace's; the
index keeps the coarser levels in compressed blocks, the calls open across a chunk's edge, where each chunk starts,
and every other record in one compressed catalog), on runs of nested calls in three threads and of recursion, quiet
and slowed (a coarse level takes more bytes per item the longer the calls take), a parameter-heavy one and one with
--objects, whose objects records compress with the catalog.
A trace of a few calls has none on disk: made at each open, it costs less than keeping it (lod.c)."""

import os
import shutil
import struct
import subprocess
import sys

import pytest

from helpers import PROGRAMS, environment, needs_object_counting, reader, run, tracetop

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

# Half, issue 14's bound, for every run. Level 0, every call's exact times, is the trace's (lod_file.h): where calls are
# tens of ns apart their times are mostly the clock's noise, which no coding of an index removes, so an index holding
# them took 0.40-0.64 of fib's trace from one run to the next (view.idx 9), more on a loaded machine or under valgrind.
HALF = 0.5


def ratio(experiment):
    """view.idx's size over the trace's (0 when it is not cached)."""
    reader.Index(str(experiment))
    trace = sum(f.stat().st_size for f in (experiment / "trace").rglob("*") if f.is_file())
    cache = experiment / "view.idx"
    return cache.stat().st_size / trace if cache.exists() else 0


def record(where, program, *arguments, options=()):
    completed = tracetop("run", *options, "--output", "exp", program, *arguments, cwd=where)
    assert completed.returncode == 0, completed.stderr
    return where / "exp"


def test_a_few_calls(tmp_path):
    """A program of ten calls (some 30 events with the start-up's, 600 bytes of trace): its index, mostly the names
    and files of the regions, which the trace keeps in its definitions, would take more than half of it (0.75), and
    costs less to make than to keep: it is made at each open, in a few ms."""
    (tmp_path / "few.py").write_text("def f(i):\n    return i\nfor i in range(10):\n    f(i)\n")
    experiment = record(tmp_path, "few.py")
    (experiment / "view.idx").write_bytes(b"an older index")
    assert ratio(experiment) == 0
    index = reader.Index(str(experiment))
    assert index.built and index.cache_problem is None and not (experiment / "view.idx").exists()
    profile = {region["name"]: region["visits"] for region in reader.profile(str(experiment))["regions"]}
    data = index.tree(index.begin_ns, index.end_ns + 1, [0])
    visits = {}
    for _parent, region, count, _, _ in struct.iter_unpack("IIddd", data[8:]):
        name = index.regions[region]["name"]
        visits[name] = visits.get(name, 0) + count
    assert profile["__main__:f"] == 10 and visits == profile


@pytest.mark.parametrize("calls", [20_000, 300_000])
def test_nested_calls_in_threads(tmp_path, calls):
    (tmp_path / "nested.py").write_text(NESTED)
    assert ratio(record(tmp_path, "nested.py", str(calls // 9))) <= HALF


def test_recursion(tmp_path):
    """fib(20), 21,891 calls in 21 depths: a depth's calls last from a call to thousands, and the index codes each
    depth apart (a view's query reads the depths it shows), where the trace's records are the steps between calls."""
    assert ratio(record(tmp_path, PROGRAMS / "fib.py", "20")) <= HALF


@pytest.mark.serial  # it loads every core: the tests beside it would wait on the spinners
@pytest.mark.parametrize("program", ["nested", "fib"])
def test_beside_a_loaded_machine(tmp_path, program):
    """Nested calls, and recursion, while twice as many processes as the machine has cores (16 at most) spin beside
    them: their calls take longer and are cut by the scheduler, and each time takes more bytes in the index."""
    (tmp_path / "nested.py").write_text(NESTED)
    spinners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(min(16, 2 * (os.cpu_count() or 1)))
    ]
    try:
        experiment = (
            record(tmp_path, "nested.py", str(20_000 // 9))
            if program == "nested"
            else record(tmp_path, PROGRAMS / "fib.py", "20")
        )
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    assert ratio(experiment) <= HALF


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="needs valgrind")
def test_nested_calls_slowed_by_valgrind(tmp_path):
    """The same program under valgrind, some 20 times slower: every call's times take more bytes (view.idx 8: 0.49 of
    the trace, 9: 0.43, when it held them), where the trace's short forms hold the most of them in the same bytes."""
    (tmp_path / "nested.py").write_text(NESTED)
    completed = run(
        "valgrind",
        "-q",
        "--trace-children=yes",
        sys.executable,
        "-m",
        "tracetop",
        "run",
        "--output",
        "exp",
        "nested.py",
        str(20_000 // 9),
        cwd=tmp_path,
        env=environment(PYTHONMALLOC="malloc"),
        timeout=600,
    )
    assert completed.returncode == 0, completed.stderr
    assert ratio(tmp_path / "exp") <= HALF


def test_parameters_and_counters(tmp_path):
    """A parameter or counter on most calls (each 32 bytes in the catalog, stored as columns); most of the trace is a
    few thousand calls in few depths, each depth's spans compressed with the catalog."""
    experiment = record(tmp_path, PROGRAMS / "viewer_demo.py", "400")
    index = reader.Index(str(experiment))
    assert sum(lane["params"] for lane in index.lanes) >= 2000
    assert ratio(experiment) <= HALF


# 100 places making objects (an instance of a class of its own and a list each) for a second and a half: a record of
# each every 100 ms (format.h: OBJECTS), as a program that allocates in many functions makes them.
CHURN = """
import sys, time
for i in range(100):
    exec(f"class C{i}: pass\\ndef f{i}(keep):\\n    keep.append((C{i}(), []))", globals())
keep, makers = [], [globals()[f"f{i}"] for i in range(100)]
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    for make in makers:
        make(keep)
    if len(keep) > 20_000:
        keep.clear()
"""


@needs_object_counting
def test_objects(tmp_path):
    """With --objects, the objects records and the tracks of the objects alive (32 bytes each in view.idx 6, then a
    sixth of the trace here) go with every record but the spans in the catalog, compressed: the catalog, with each
    depth's last block of spans, an eighth of its size or less. The spans weigh most in such a run (its calls, slowed
    by the counting, take longer: more bytes per time): view.idx at most half the trace all the same."""
    (tmp_path / "churn.py").write_text(CHURN)
    experiment = record(tmp_path, "churn.py", "1.5", options=("--objects",))
    index = reader.Index(str(experiment))
    records = int.from_bytes(index.objects(index.begin_ns, index.end_ns + 1, [0])[:4], "little")
    assert records >= 200  # places: region and type
    trace = sum(f.stat().st_size for f in (experiment / "trace").rglob("*") if f.is_file())
    header = (experiment / "view.idx").read_bytes()[:152]
    catalog_stored, catalog_raw = struct.unpack_from("QI", header, 56)
    # (How much the catalog holds before compression depends on how fast the churn ran: a loaded machine makes
    # fewer objects records per event.)
    assert catalog_raw >= 8 * catalog_stored, (catalog_raw, catalog_stored, trace)
    assert ratio(experiment) <= HALF

"""The call tree the hook keeps (src/core/calltree.h): every stream that ends has one, written behind its
records as TREE chunks (format.h), and profile.txt and `tracetop summary` made from the trees are byte for byte
what reading the records back gives: the same experiment with its trees cut off reads back to the same text.
A stream cut by a crash has no tree and is read back."""

import signal
import subprocess
import sys

import pytest

from helpers import INSTRUMENTERS, PROGRAMS, WORKLOADS, assert_complete, reader, tracetop
from trace_files import (
    CHUNK_HEADER,
    assert_trees_read_back_the_same,
    record_chunks,
    stream_files,
    tree_chunks,
    tree_heads,
)

# The default instrumenter of this Python (sys.monitoring on 3.12+), and each by name.
INSTRUMENTERS_AND_DEFAULT = [None, *INSTRUMENTERS]


@pytest.mark.parametrize("instrumenter", INSTRUMENTERS_AND_DEFAULT)
@pytest.mark.parametrize("option", ["", "--no-c-calls", "--filter"])
def test_tree_profile_is_the_read_back_profile(tmp_path, instrumenter, option):
    options = [f"--instrumenter={instrumenter}"] if instrumenter else []
    if option == "--filter":
        (tmp_path / "filter").write_text(
            "SCOREP_REGION_NAMES_BEGIN\n  EXCLUDE __main__:filtered\nSCOREP_REGION_NAMES_END\n"
        )
        options += ["--filter", "filter"]
    elif option:
        options.append(option)
    completed = tracetop("run", *options, "--output", "exp", PROGRAMS / "calltree.py", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    experiment = tmp_path / "exp"
    assert_complete(experiment)
    files = stream_files(experiment)
    assert len(files) == 5 and all(tree_chunks(path)[0] >= 1 for path in files)
    assert_trees_read_back_the_same(tmp_path, experiment)
    regions = {r["name"]: r for r in reader.profile(str(experiment))["regions"]}
    assert regions["__main__:fib"]["visits"] == 1973 + 3 * 465 and "gc:collection(gen2)" in regions
    assert ("__main__:filtered" in regions) == (option != "--filter")
    # settrace sees no C calls.
    assert ("builtins:max" in regions) == (option != "--no-c-calls" and instrumenter != "trace")


def test_crashed_run_reads_back_its_cut_streams(tmp_path):
    completed = tracetop("run", "--output", "exp", PROGRAMS / "calltree.py", "crash", cwd=tmp_path)
    assert completed.returncode == -signal.SIGKILL
    experiment = tmp_path / "exp"
    trees = [tree_chunks(path)[0] for path in stream_files(experiment)]
    # The workers ended before the crash: theirs have trees; the main thread's and the spinner's were cut.
    assert sorted(trees) == [0, 0, 1, 1, 1]
    summary = assert_trees_read_back_the_same(tmp_path, experiment, profile_txt=False)
    assert "cut after" in summary.stderr and "did not end normally" in summary.stdout


def damage(path, offset, length=16):
    data = bytearray(path.read_bytes())
    data[offset : offset + length] = bytes(byte ^ 0x5A for byte in data[offset : offset + length])
    path.write_bytes(bytes(data))


def test_run_end_reaches_the_trees_by_the_records_headers(tmp_path):
    """profile.txt at the end of a run (trust_records, experiment.py) reaches each tree over the chunks of records
    by their headers: damage inside a chunk of records leaves it as it was (the tree is all it takes), and a later
    `tracetop summary`, which checks every chunk, and convert say what and where; damage in the first chunk, from
    which the thread's span begins, is said at once. A damaged tree or a cut stream is read back either way."""
    code = "def f(i):\n    return i\nprint(sum(f(i) for i in range(60000)))"
    completed = tracetop("run", "--output", "exp", "-c", code, cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    experiment = tmp_path / "exp"
    profile_txt = (experiment / "profile.txt").read_text()
    [path] = stream_files(experiment)
    records = [chunk.offset for chunk in record_chunks(path)]
    first_tree = tree_chunks(path)[1]
    assert len(records) >= 3 and first_tree
    second = records[1] + CHUNK_HEADER + 100
    damage(path, second)
    assert reader.summary(str(experiment), trust_records=True) == (profile_txt, [], False)
    for command in (["summary", experiment], ["convert", experiment, "--to", "chrome", "-o", "trace.json"]):
        completed = tracetop(*command, cwd=tmp_path)
        assert completed.returncode == 0 and "corrupt: checksum mismatch in chunk 1 at byte" in completed.stderr
    text, problems, corrupt = reader.summary(str(experiment))
    assert corrupt and len(problems) == 1 and text != profile_txt
    damage(path, second)  # undone

    damage(path, records[0] + CHUNK_HEADER + 100)
    text, problems, corrupt = reader.summary(str(experiment), trust_records=True)
    assert corrupt and problems == [reader.summary(str(experiment))[1][0]] and "chunk 0" in problems[0]
    damage(path, records[0] + CHUNK_HEADER + 100)  # undone

    damage(path, first_tree + CHUNK_HEADER)  # the tree: read back, as without trust
    damaged_tree = reader.summary(str(experiment), trust_records=True)
    assert damaged_tree == reader.summary(str(experiment)) and "checksum mismatch" in damaged_tree[1][0]
    with open(path, "r+b") as f:
        f.truncate(first_tree - 1)  # the last chunk of records cut: read back up to the cut
    text, problems, corrupt = reader.summary(str(experiment), trust_records=True)
    assert not corrupt and len(problems) == 1 and "cut" in problems[0]


# The workloads of bench/, at --quick's smaller sizes (processes: followed children, a tree per stream of each).
WORKLOAD_SIZES = {
    "fib": 16,
    "generators": 5,
    "builtins_heavy": 500,
    "exceptions": 1000,
    "threads": 1000,
    "objects": 10,
    "allocations": 2000,
    "processes": 2,
}


@pytest.mark.parametrize("name", sorted(WORKLOAD_SIZES))
def test_workload_tree_profile_is_the_read_back_profile(tmp_path, name):
    completed = tracetop("run", "--output", "exp", WORKLOADS / f"{name}.py", WORKLOAD_SIZES[name], cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert all(tree_chunks(path)[0] >= 1 for path in stream_files(tmp_path / "exp"))
    # Every tree holds all its profile needs (generators' asyncio tasks too): no stream is read back.
    assert tree_heads(tmp_path / "exp") == [0] * len(stream_files(tmp_path / "exp"))
    assert_trees_read_back_the_same(tmp_path, tmp_path / "exp")


def test_tree_larger_than_a_chunks_room(tmp_path):
    """Recursion 50,000 deep: more new call paths than one chunk's room (calltree.h), made as chunks are taken;
    and a sibling ring of 300 callees called in changing order."""
    code = (
        "import sys\nsys.setrecursionlimit(60000)\n"
        "def down(n):\n    return 0 if n == 0 else 1 + down(n - 1)\n"
        "fs = [eval(f'lambda: {i}') for i in range(300)]\n"
        "def spread(k):\n    return sum(fs[(i * k) % 300]() for i in range(300))\n"
        "print(down(50000), sum(spread(k) for k in range(1, 40)))"
    )
    completed = tracetop("run", "--output", "exp", "-c", code, cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    [path] = stream_files(tmp_path / "exp")
    assert tree_chunks(path)[0] >= 2  # 50,000 nodes and more: more than a chunk of them
    assert_trees_read_back_the_same(tmp_path, tmp_path / "exp")
    regions = {r["name"]: r for r in reader.profile(str(tmp_path / "exp"))["regions"]}
    assert regions["__main__:down"]["visits"] == 50001


TASK_CASES = [
    "interleaving",
    "awaiting",
    "nested",
    "cancelled",
    "raising",
    "gathered",
    "alive",
    "threads",
    "driven",
    pytest.param("eager", marks=pytest.mark.skipif(sys.version_info < (3, 12), reason="eager tasks: 3.12+")),
]


@pytest.mark.parametrize("instrumenter", INSTRUMENTERS_AND_DEFAULT)
@pytest.mark.parametrize("case", TASK_CASES)
def test_asyncio_tasks_come_from_the_trees(tmp_path, case, instrumenter):
    """A program with asyncio tasks: its per-task profile (summary's task tables) from the trees the hook kept,
    byte for byte what reading the records back gives, and every stream's tree holds all of it (reads 0: the run
    read no records back for profile.txt)."""
    options = [f"--instrumenter={instrumenter}"] if instrumenter else []
    completed = tracetop("run", *options, "--output", "exp", PROGRAMS / "calltree_tasks.py", case, cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    plain = subprocess.run([sys.executable, PROGRAMS / "calltree_tasks.py", case], capture_output=True, text=True)
    assert completed.stdout == plain.stdout
    experiment = tmp_path / "exp"
    assert_complete(experiment)
    assert tree_heads(experiment) == [0] * len(stream_files(experiment))
    summary = assert_trees_read_back_the_same(tmp_path, experiment)
    if instrumenter != "trace":  # settrace sees coroutines' resumes as calls too: tasks come all the same
        assert "Asyncio tasks:" in summary.stdout

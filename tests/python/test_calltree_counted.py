"""Runs whose profile counts records the hook's call trees do not hold (--objects: OBJECTS; MPI: the messages
sent and the collectives) make profile.txt from the trees and the chunks that hold those records alone (format.h:
TT_CHUNK_COUNTED), not from a read of every record: each thread's profile decodes the records of the flagged chunks
only (records_read), and profile.txt and `tracetop summary` are byte for byte what reading every record back gives
(the same experiment with its trees cut off)."""

import shutil
import sys

import pytest

from helpers import PROGRAMS, assert_complete, environment, program_stderr, reader, run, tracetop
from trace_files import assert_trees_read_back_the_same, record_chunks, stream_files, tree_heads

COUNTED = 8  # TT_CHUNK_COUNTED
COUNTED_KINDS = {"objects", "mpi_send", "mpi_isend", "mpi_collective_end"}  # tt_ev_counted


def assert_counted_chunks_alone(experiment, tmp_path, calls_alone=True):
    """profile.txt and `tracetop summary` are the read-back's (its copy made in tmp_path / "read-back"); every
    stream's profile came from its tree and its flagged chunks, the read-back's from every record; the tree's
    `reads` is the stream's counted records. calls_alone: some chunk holds none of them (the program sees to
    it). Returns the summary."""
    summary = assert_trees_read_back_the_same(tmp_path, experiment)
    trace = reader.Trace(str(experiment))
    streams = {}
    for index, process in enumerate(trace.processes):
        for thread in process["threads"]:
            events, state, _ = trace.read_stream(index, thread["stream"])
            assert state == "complete"
            streams[process["pid"], thread["stream"]] = events
    files = stream_files(experiment)
    by_file = {(int(path.parent.name), int(path.stem)): path for path in files}
    assert sorted(by_file) == sorted(streams)
    reads = dict(zip(sorted(files), tree_heads(experiment)))
    profile = reader.profile(str(experiment))
    read_back = reader.profile(str(tmp_path / "read-back"))
    assert len(profile["threads"]) == len(read_back["threads"]) == len(files)
    skipped = 0
    for thread, back in zip(profile["threads"], read_back["threads"]):
        key = thread["pid"], thread["stream"]
        path, events = by_file[key], streams[key]
        counted = sum(event[0] in COUNTED_KINDS for event in events)
        assert reads[path] == counted
        flags = [chunk.flags for chunk in record_chunks(path)]
        flagged = sum(bool(f & COUNTED) for f in flags)
        # Decoded: the records of the flagged chunks, none of the others (a chunk holds a record at least).
        assert (thread["records_read"] == 0) == (flagged == 0) == (counted == 0)
        assert (thread["records_read"] < thread["events"]) == (flagged < len(flags))
        skipped += len(flags) - flagged
        assert thread["events"] == back["events"] == back["records_read"] == len(events)
    assert skipped > 0 or not calls_alone  # chunks of calls alone were there, and not decoded
    return summary


def test_objects_profile_from_the_trees(tmp_path):
    plain = run(sys.executable, PROGRAMS / "counted_objects.py", cwd=tmp_path)
    completed = tracetop("run", "--objects", "--output", "exp", PROGRAMS / "counted_objects.py", cwd=tmp_path)
    assert (completed.returncode, completed.stdout) == (0, plain.stdout), completed.stderr
    experiment = tmp_path / "exp"
    assert_complete(experiment)
    summary = assert_counted_chunks_alone(experiment, tmp_path)
    assert "Objects:" in summary.stdout


def test_objects_and_asyncio_tasks_from_the_trees(tmp_path):
    """Objects counted in a program with asyncio tasks in threads: the tasks' steps from the trees, the objects
    from the flagged chunks, in the same read."""
    program = PROGRAMS / "calltree_tasks.py"
    plain = run(sys.executable, program, "threads", cwd=tmp_path)
    completed = tracetop("run", "--objects", "--output", "exp", program, "threads", cwd=tmp_path)
    assert (completed.returncode, completed.stdout) == (0, plain.stdout), completed.stderr
    assert_complete(tmp_path / "exp")
    summary = assert_counted_chunks_alone(tmp_path / "exp", tmp_path, calls_alone=False)
    assert "Objects:" in summary.stdout and "Asyncio tasks:" in summary.stdout


MPI_RANKS = 2


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="no mpirun")
def test_mpi_profile_from_the_trees(tmp_path):
    pytest.importorskip("mpi4py")
    env = environment(
        OMPI_ALLOW_RUN_AS_ROOT="1",
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
        OMPI_MCA_rmaps_base_oversubscribe="1",
        OMPI_MCA_odls_base_sigkill_timeout="5",
    )
    program = PROGRAMS / "counted_mpi.py"
    plain = run("mpirun", "-n", MPI_RANKS, sys.executable, program, cwd=tmp_path, env=env, timeout=180)
    traced = run(
        "mpirun",
        "-n",
        MPI_RANKS,
        sys.executable,
        "-m",
        "tracetop",
        "run",
        "--mpi",
        "--output",
        "exp",
        program,
        cwd=tmp_path,
        env=env,
        timeout=180,
    )
    assert plain.returncode == 0, plain.stderr
    assert (traced.returncode, traced.stdout, program_stderr(traced.stderr)) == (0, plain.stdout, plain.stderr)
    experiment = tmp_path / "exp"
    assert_complete(experiment)
    summary = assert_counted_chunks_alone(experiment, tmp_path)
    messages = f"MPI messages sent, by rank: {3 * MPI_RANKS} messages, {8 * 3 * MPI_RANKS} bytes"
    assert messages in summary.stdout and "allreduce" in summary.stdout

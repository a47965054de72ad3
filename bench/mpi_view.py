"""Benchmarks the viewer's MPI communication view (src/analysis/mpi_view.h) on a large MPI job: matching every
message of the trace, and the queries the viewer asks (lines and collectives of a view, the matrix, a pair's
messages, per-communicator statistics), over the whole run and over a hundredth of it.

    python bench/mpi_view.py [--ranks 4] [--messages 200000] [--queries 50]

Makes (once per size, in bench/.cache/) an experiment with `mpirun -n RANKS tracetop run --mpi`: each rank sends
its right neighbour --messages / RANKS messages (nonblocking and blocking in turn) and every 100 of them all ranks
meet in an allreduce. Prints a markdown table on stdout.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = HERE / ".cache"

PROGRAM = textwrap.dedent("""\
    import sys
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    right, left = (rank + 1) % size, (rank - 1) % size
    out, into = bytearray(64), bytearray(64)
    for i in range(int(sys.argv[1])):
        if i % 2:
            request = world.Irecv([into, MPI.BYTE], source=left, tag=i % 5)
            world.Send([out, MPI.BYTE], dest=right, tag=i % 5)
            request.Wait()
        else:
            world.Sendrecv([out, MPI.BYTE], dest=right, sendtag=3, recvbuf=[into, MPI.BYTE], source=left, recvtag=3)
        if i % 100 == 0:
            world.Allreduce(MPI.IN_PLACE, [out, MPI.BYTE], op=MPI.BOR)
    """)


def experiment(ranks, messages):
    where = CACHE / f"mpi-{ranks}x{messages}"
    if (where / "exp").is_dir():
        return where / "exp"
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir(parents=True)
    (where / "ring.py").write_text(PROGRAM)
    env = dict(
        os.environ,
        OMPI_ALLOW_RUN_AS_ROOT="1",
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
        OMPI_MCA_rmaps_base_oversubscribe="1",
    )
    print(f"making an experiment of {ranks} ranks, {messages} messages ...", file=sys.stderr)
    subprocess.run(
        [
            "mpirun",
            "-n",
            str(ranks),
            sys.executable,
            "-m",
            "tracetop",
            "run",
            "--mpi",
            "--output",
            "exp",
            "ring.py",
            str(messages // ranks),
        ],
        cwd=where,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return where / "exp"


def timed(function, times):
    """The median and the largest of `times` runs, in ms."""
    took = []
    for _ in range(times):
        started = time.perf_counter()
        function()
        took.append((time.perf_counter() - started) * 1e3)
    return statistics.median(took), max(took)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=50)
    options = parser.parse_args()
    from tracetop import _reader

    exp = str(experiment(options.ranks, options.messages))
    started = time.perf_counter()
    view = _reader.MpiView(exp)
    build = time.perf_counter() - started
    index = _reader.Index(exp)
    begin, end = index.begin_ns, index.end_ns
    middle = (begin + end) // 2
    hundredth = (middle, middle + (end - begin) // 100)
    rows = [("build (read and match)", f"{build * 1e3:.0f} ms", "")]
    for name, (t0, t1) in (("whole run", (begin, end + 1)), ("a hundredth", hundredth)):
        for what, query in (
            ("lines (3000 at most)", lambda: view.lines(t0, t1, 3000)),
            ("collectives (1000 at most)", lambda: view.collectives(t0, t1, 1000)),
            ("matrix", lambda: view.matrix(t0, t1)),
            ("a pair's messages (200)", lambda: view.pair(0, 1, t0, t1, 0, 200)),
            ("per communicator", lambda: view.comm_stats(t0, t1)),
        ):
            median, largest = timed(query, options.queries)
            rows.append((f"{what}, {name}", f"{median:.2f} ms", f"{largest:.2f} ms"))
    counts = view.counts
    print(
        f"{options.ranks} ranks, {counts['messages']} messages, {counts['collectives']} collective operations, "
        f"unmatched {counts['unmatched_sends']} sends / {counts['unmatched_receives']} receives\n"
    )
    print("| what | median | max |\n|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()

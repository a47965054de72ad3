"""Level 0 of the viewer's index read from the trace's chunks (src/core/lod_file.h, lod_trace.c): over windows that
cross the chunks' edges, with calls open across them at every depth of deep stacks, in three threads, every query
answers exactly the calls the reader gives; a trace changed, cut or damaged after its index was made gives a problem in
one line, never a crash."""

import collections
import os
import shutil
import struct

import pytest

from helpers import reader, streams, tracetop
from index_helpers import all_lanes, decode_spans, decode_tree, raw_spans
from trace_files import CHUNK_HEADER, record_chunks

DEEP = """
import sys, threading
def down(n, work):
    if n == 0:
        return sum(abs(i) for i in range(work))
    return down(n - 1, work) + 1
def run(rounds):
    return sum(down(40, 20) for _ in range(rounds))
threads = [threading.Thread(target=run, args=(int(sys.argv[1]),), name=f"worker-{i}") for i in range(2)]
for t in threads:
    t.start()
run(int(sys.argv[1]))
for t in threads:
    t.join()
"""


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    where = tmp_path_factory.mktemp("deep")
    (where / "deep.py").write_text(DEEP)
    completed = tracetop("--output", "exp", "deep.py", "1200", cwd=where)
    assert completed.returncode == 0, completed.stderr
    return where / "exp"


@pytest.fixture(scope="module")
def calls(experiment):
    """Every call of every stream from the reader: {(pid, stream): [(start, end, name, depth, path)]}."""
    found = {}
    for process, thread, events, _state, _problem in streams(experiment):
        done, stack = [], []
        for event in events:
            if event[0] == "enter":
                stack.append((event[1], event[2]))
            elif event[0] == "leave":
                start, name = stack.pop()
                path = tuple(name for _, name in stack)
                done.append((start, event[1], name, len(stack), path))
        found[(process["pid"], thread["stream"])] = done
    return found


@pytest.fixture(scope="module")
def index(experiment):
    return reader.Index(str(experiment))


def test_the_streams_take_several_chunks_with_calls_open_across_them(experiment, index):
    files = sorted((experiment / "trace").rglob("[0-9]*.tts"))
    assert len(files) == 3 and all(len(record_chunks(path)) >= 4 for path in files)
    assert all(lane["depths"] >= 40 for lane in index.lanes)


def test_every_call_of_every_depth(index, calls):
    for number, lane in enumerate(index.lanes):
        got = [
            (start, end, index.regions[region]["name"], depth)
            for depth in range(lane["depths"])
            for start, end, region, _ in raw_spans(index, number, depth, 0)
        ]
        want = sorted((c[:4] for c in calls[(lane["pid"], lane["stream"])]), key=lambda c: (c[3], c[0]))
        assert got == want


def windows(index, count, width):
    """`count` windows of `width` ns spread over the run, and one of the whole run."""
    step = (index.end_ns - index.begin_ns - width) // count
    return [(index.begin_ns + i * step + 7, index.begin_ns + i * step + 7 + width) for i in range(count)] + [
        (index.begin_ns, index.end_ns + 1)
    ]


def test_windows_answer_the_calls_in_them(index, calls):
    """A level-0 view of a window, wherever it falls among the chunks: per lane and depth, every call that overlaps it
    (a call below a pixel merged with its neighbours, counted), each one alone exactly as the reader has it."""
    everything = list(range(len(index.regions)))  # a search reads level 0 whatever the window
    span = index.end_ns - index.begin_ns
    for t0, t1 in windows(index, 25, span // 40) + windows(index, 25, 60_000):
        width = min(65536, t1 - t0)
        _, spans = decode_spans(index.spans(t0, t1, width, all_lanes(index), everything))
        counted = collections.Counter()
        for s in spans:
            counted[(s["lane"], s["depth"])] += s["calls"]
        for number, lane in enumerate(index.lanes):
            inside = [c for c in calls[(lane["pid"], lane["stream"])] if c[1] > t0 and c[0] < t1]
            exact = {(c[0], c[1], c[2], c[3]) for c in inside}
            assert {depth: counted[(number, depth)] for depth in range(lane["depths"])} == {
                depth: sum(1 for c in inside if c[3] == depth) for depth in range(lane["depths"])
            }
            alone = {
                (s["start"], s["end"], index.regions[s["region"]]["name"], s["depth"])
                for s in spans
                if s["lane"] == number and s["calls"] == 1
            }
            assert alone <= exact


def test_trees_of_windows(index, calls):
    """The call-path tree of a window (read from level 0, every depth at once) against the reader's calls clipped to
    it: every path's visits and time to the ns."""
    span = index.end_ns - index.begin_ns
    for t0, t1 in windows(index, 12, span // 30):
        for number, lane in enumerate(index.lanes):
            want = collections.defaultdict(lambda: [0, 0])
            for start, end, name, _depth, path in calls[(lane["pid"], lane["stream"])]:
                if end > t0 and start < t1:
                    want[path + (name,)][0] += 1
                    want[path + (name,)][1] += min(end, t1) - max(start, t0)
            nodes = decode_tree(index.tree(t0, t1, [number]))
            paths = []
            for node in nodes:
                paths.append(
                    (paths[node["parent"]] if node["parent"] != 0xFFFFFFFF else ())
                    + (index.regions[node["region"]]["name"],)
                )
            got = {paths[i]: [node["visits"], node["inclusive"]] for i, node in enumerate(nodes)}
            assert got == {path: [float(v), float(t)] for path, (v, t) in want.items()}


def test_the_call_at_a_time(index, calls):
    """The call running at a time at a depth, its self time from its callees: a long call's from the chunks it spans
    whole (summed in the index) and those at its edges (read)."""
    for number, lane in enumerate(index.lanes):
        mine = calls[(lane["pid"], lane["stream"])]
        longest = [max((c for c in mine if c[3] == depth), key=lambda c: c[1] - c[0]) for depth in range(4)]
        for start, end, name, depth, _ in mine[:: max(1, len(mine) // 60)] + longest:
            call = index.call_at(number, depth, (start + end) // 2)
            callees = sum(e - s for s, e, _, d, _ in mine if d == depth + 1 and s >= start and e <= end)
            assert (call["start_ns"], call["end_ns"], index.regions[call["region"]]["name"]) == (start, end, name)
            assert call["self_ns"] == end - start - callees


def copy_with_its_index(experiment, tmp_path):
    """A copy whose files keep their times: the index made for the original is the copy's (its signature)."""
    reader.Index(str(experiment))  # made, if no test before made it
    copy = tmp_path / "copy"
    shutil.copytree(experiment, copy)
    assert not reader.Index(str(copy)).built
    return copy


def middle_chunk(copy):
    path = sorted((copy / "trace").rglob("0.tts"))[0]
    found = record_chunks(path)
    return path, found[len(found) // 2]


def damage_middle_chunk(copy):
    """A byte of a chunk of stream 0 flipped, the file's name, size and time kept: the index is still the trace's."""
    path, chunk = middle_chunk(copy)
    times = os.stat(path)
    data = bytearray(path.read_bytes())
    data[chunk.offset + CHUNK_HEADER + chunk.stored // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    os.utime(path, ns=(times.st_atime_ns, times.st_mtime_ns))


def test_a_chunk_damaged_after_the_index_was_made(experiment, tmp_path):
    copy = copy_with_its_index(experiment, tmp_path)
    damage_middle_chunk(copy)
    index = reader.Index(str(copy))
    assert not index.built and index.read_problem is None
    for lane in all_lanes(index):
        for depth in range(index.lanes[lane]["depths"]):
            raw_spans(index, lane, depth, 0)
    problem = index.read_problem
    assert problem.startswith("the trace changed since its index was made: ") and "\n" not in problem
    assert "checksum mismatch" in problem or "is not the one it was" in problem
    # Its calls are left out; every other is read, and the whole run's tree is the index's own.
    assert index.tree(index.begin_ns, index.end_ns + 1, all_lanes(index)) == reader.Index(str(experiment)).tree(
        index.begin_ns, index.end_ns + 1, all_lanes(index)
    )


def test_the_viewer_warns_once_of_calls_it_cannot_read(experiment, tmp_path, capsys):
    from tracetop.viewer.server import DataAPI

    copy = copy_with_its_index(experiment, tmp_path)
    damage_middle_chunk(copy)
    index = reader.Index(str(copy))
    api = DataAPI(str(copy), index)
    capsys.readouterr()
    query = {
        "t0": str(index.begin_ns),
        "t1": str(index.end_ns + 1),
        "width": "1000",
        "lanes": "all",
        "only": ",".join(str(i) for i in range(len(index.regions))),
    }
    for _ in range(2):
        assert api.answer("spans", query)[0]
    warned = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert len(warned) == 1 and "the trace changed since its index was made" in warned[0]


def test_a_trace_cut_after_the_index_was_made(experiment, tmp_path):
    copy = copy_with_its_index(experiment, tmp_path)
    index = reader.Index(str(copy))  # loaded before the cut
    path, chunk = middle_chunk(copy)
    os.truncate(path, chunk.offset + CHUNK_HEADER + chunk.stored // 2)
    lane = next(i for i, lane in enumerate(index.lanes) if lane["stream"] == 0)
    for depth in range(index.lanes[lane]["depths"]):
        raw_spans(index, lane, depth, 0)
    _, spans = decode_spans(
        index.spans(index.begin_ns, index.end_ns + 1, 1000, [lane], list(range(len(index.regions))))
    )
    assert spans
    assert index.read_problem.startswith("the trace changed since its index was made: ")
    assert "cut" in index.read_problem or "is not the one it was" in index.read_problem


def test_a_trace_gone_after_the_index_was_made(experiment, tmp_path):
    copy = copy_with_its_index(experiment, tmp_path)
    index = reader.Index(str(copy))
    shutil.rmtree(copy / "trace")
    raw_spans(index, 0, 5, 0)
    assert index.read_problem.startswith("cannot read the calls from the trace: ")


def test_an_older_index_is_made_anew(experiment, tmp_path):
    """view.idx 9 kept every call; this one's version (10) is not read by it, nor it by this one."""
    copy = copy_with_its_index(experiment, tmp_path)
    data = bytearray((copy / "view.idx").read_bytes())
    assert struct.unpack_from("I", data, 8) == (10,)
    struct.pack_into("I", data, 8, 9)
    (copy / "view.idx").write_bytes(bytes(data))
    index = reader.Index(str(copy))
    assert index.built and struct.unpack_from("I", (copy / "view.idx").read_bytes(), 8) == (10,)

"""The viewer's level-of-detail index (src/core/lod.h) against what the reader gives, on real experiments."""

import collections
import json
import os
import re
import shutil
import struct

import pytest

from helpers import PROGRAMS, enters, python, reader, streams, tracetop
from index_helpers import all_lanes, decode_samples, decode_spans, decode_tree, raw_spans


def reader_calls(experiment):
    """Every call of every stream from the reader: {(pid, stream): [(start, end, name, depth)]}."""
    calls = {}
    for process, thread, events, _state, _problem in streams(experiment):
        found, stack = [], []
        for event in events:
            if event[0] == "enter":
                stack.append((event[1], event[2]))
            elif event[0] == "leave":
                start, name = stack.pop()
                found.append((start, event[1], name, len(stack)))
        calls[(process["pid"], thread["stream"])] = sorted(found, key=lambda c: (c[3], c[0]))
    return calls


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    where = tmp_path_factory.mktemp("index")
    completed = tracetop("--output", "exp", PROGRAMS / "viewer_demo.py", "400", cwd=where)
    assert completed.returncode == 0, completed.stderr
    return where / "exp"


@pytest.fixture(scope="module")
def index(experiment):
    return reader.Index(str(experiment))


@pytest.fixture(scope="module")
def coarse_index(tmp_path_factory):
    """An index with coarse levels: a depth whose level 0 is 4 blocks or fewer has none (lod_build.c), as every depth
    of viewer_demo.py 400's."""
    where = tmp_path_factory.mktemp("coarse")
    completed = tracetop("--output", "exp", PROGRAMS / "viewer_demo.py", "3000", cwd=where)
    assert completed.returncode == 0, completed.stderr
    index = reader.Index(str(where / "exp"))
    assert index.levels > 1
    return index


def test_lanes_are_the_threads(index, experiment):
    names = [lane["name"] for lane in index.lanes]
    assert names == ["MainThread", "worker-0", "worker-1"]
    assert index.problems == [] and index.cache_problem is None
    assert (experiment / "view.idx").is_file()


def test_level_zero_is_every_call_exactly(index, experiment):
    expected = reader_calls(experiment)
    for number, lane in enumerate(index.lanes):
        got = [
            (start, end, index.regions[region]["name"], depth)
            for depth in range(lane["depths"])
            for start, end, region, calls in raw_spans(index, number, depth, 0)
        ]
        assert len(got) == lane["calls"]
        assert got == expected[(lane["pid"], lane["stream"])]


def test_each_level_merges_the_one_below(coarse_index):
    index = coarse_index
    for number, lane in enumerate(index.lanes):
        for depth in range(lane["depths"]):
            below = raw_spans(index, number, depth, 0)
            for level in range(1, index.levels):
                grain = 1 << (5 + level)
                spans = raw_spans(index, number, depth, level)
                assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
                assert sum(s[3] for s in spans) == len(raw_spans(index, number, depth, 0))
                assert all(s[3] == 1 or s[1] - s[0] <= 8 * grain for s in spans)
                assert len(spans) <= len(below)
                # Every item of the level below lies within one item of this level.
                position = 0
                for start, end, _region, _calls in below:
                    while spans[position][1] <= start:
                        position += 1
                    assert spans[position][0] <= start and end <= spans[position][1]
                below = spans


@pytest.mark.parametrize("which", ["index", "coarse_index"])
def test_coarse_levels_keep_every_call_counted(which, request):
    """At every level each depth's items are ordered, do not overlap, cover every call and count it once; without
    coarse levels (a small trace's index), level 0's calls merged as the query reads them."""
    index = request.getfixturevalue(which)
    span = index.end_ns - index.begin_ns
    for width in (1, 10, 100, 1000, 10000):
        level, spans = decode_spans(index.spans(index.begin_ns, index.end_ns + 1, width, all_lanes(index)))
        assert level == index.level_for(index.begin_ns, index.end_ns + 1, width)
        by_depth = collections.defaultdict(list)
        for s in spans:
            by_depth[s["lane"], s["depth"]].append(s)
        for (_lane, _depth), items in by_depth.items():
            assert all(a["end"] <= b["start"] for a, b in zip(items, items[1:]))
            # Items merged at the query's pixel size are at most 3 pixels long, unless they are one call.
            assert all(
                s["calls"] == 1 or s["end"] - s["start"] <= max(3 * span / width, 8 << (5 + level)) for s in items
            )
        for lane_number, lane in enumerate(index.lanes):
            assert sum(s["calls"] for s in spans if s["lane"] == lane_number) == lane["calls"]
        if width <= 100:
            assert (level > 0) == (index.levels > 1) and len(spans) < sum(lane["calls"] for lane in index.lanes)


def test_a_view_reads_only_what_is_in_it(index):
    lane = 1
    start, end, region, calls = max(raw_spans(index, lane, 0, 0), key=lambda s: s[1] - s[0])  # the thread's run()
    middle = (start + end) // 2
    t0, t1 = middle, middle + 50_000
    _, spans = decode_spans(index.spans(t0, t1, 2000, [lane]))
    assert spans and all(s["end"] > t0 and s["start"] < t1 and s["lane"] == lane for s in spans)


def test_search_gives_the_occurrences(index, experiment):
    leaf = [i for i, r in enumerate(index.regions) if r["name"] == "__main__:leaf"]
    _, spans = decode_spans(
        index.spans(index.begin_ns, index.end_ns + 1, 1_000_000 // 1000, all_lanes(index), only=leaf)
    )
    from helpers import enters

    assert sum(s["calls"] for s in spans) == enters(experiment)["__main__:leaf"]
    assert {index.regions[s["region"]]["name"] for s in spans} == {"__main__:leaf"}


def profile_of_tree(index, nodes):
    """Per region name: visits, exclusive, and inclusive counted once per outermost activation; and the calls
    of its nodes and of their children."""
    regions = collections.defaultdict(lambda: [0, 0, 0, 0])
    path = {}
    for number, node in enumerate(nodes):
        ancestors = path.get(node["parent"], ()) if node["parent"] != 0xFFFFFFFF else ()
        name = index.regions[node["region"]]["name"]
        path[number] = ancestors + (name,)
        regions[name][0] += node["visits"]
        regions[name][1] += node["exclusive"]
        regions[name][3] += node["visits"]
        if ancestors:
            regions[index.regions[nodes[node["parent"]]["region"]]["name"]][3] += node["visits"]
        if name not in ancestors:
            regions[name][2] += node["inclusive"]
    return regions


def test_tree_of_the_whole_run_is_the_profile(index, experiment):
    nodes = decode_tree(index.tree(index.begin_ns, index.end_ns + 1, all_lanes(index)))
    assert all(node["parent"] == 0xFFFFFFFF or node["parent"] < number for number, node in enumerate(nodes))
    ours = profile_of_tree(index, nodes)
    profile = reader.profile(str(experiment))
    assert len(ours) == len(profile["regions"])
    for region in profile["regions"]:
        visits, exclusive, inclusive, calls = ours[region["name"]]
        # The index sums each call's ns; the profile ticks per call path, converted once (profile.h): a ns
        # apart per call at most (exclusive: per call of the region and of its callees).
        assert visits == region["visits"], region
        assert abs(exclusive - region["exclusive_ns"]) <= calls, region
        assert abs(inclusive - region["inclusive_ns"]) <= visits, region


def test_tree_of_a_range_clips_the_calls(index, experiment):
    lane = 2
    begin, end = index.lanes[lane]["begin_ns"], index.lanes[lane]["end_ns"]
    t0, t1 = begin + (end - begin) // 3, begin + 2 * (end - begin) // 3
    nodes = decode_tree(index.tree(t0, t1, [lane]))
    expected = collections.defaultdict(lambda: [0, 0])
    calls = reader_calls(experiment)[(index.lanes[lane]["pid"], index.lanes[lane]["stream"])]
    for start, stop, name, _depth in calls:
        if stop > t0 and start < t1:
            expected[name][0] += 1
            expected[name][1] += min(stop, t1) - max(start, t0)
    got = collections.defaultdict(lambda: [0, 0])
    for node in nodes:
        got[index.regions[node["region"]]["name"]][0] += node["visits"]
    # Inclusive time of a region summed over its nodes counts recursion twice; none recurses here.
    for node in nodes:
        got[index.regions[node["region"]]["name"]][1] += node["inclusive"]
    assert dict(got) == dict(expected)
    assert sum(node["exclusive"] for node in nodes) == sum(
        min(stop, t1) - max(start, t0) for start, stop, name, depth in calls if depth == 0 and stop > t0 and start < t1
    )


def test_call_details_with_self_time_and_parameters(index, experiment):
    lane = 1
    calls = reader_calls(experiment)[(index.lanes[lane]["pid"], index.lanes[lane]["stream"])]
    start, end, name, depth = next(c for c in calls if c[2] == "__main__:middle")
    details = index.call_at(lane, depth, (start + end) // 2)
    assert (details["start_ns"], details["end_ns"], index.regions[details["region"]]["name"]) == (start, end, name)
    callees = sum(e - s for s, e, n, d in calls if d == depth + 1 and s >= start and e <= end)
    assert details["self_ns"] == end - start - callees
    assert {p["name"]: p["value"] for p in details["params"]} == {"n": 0, "mode": "even"}
    assert index.call_at(lane, depth, index.end_ns + 10) is None
    assert index.call_at(lane, 999, start) is None


def test_counter_and_parameter_tracks(index, experiment):
    tracks = {(index.lanes[t["lane"]]["name"], t["name"], t["kind"]): number for number, t in enumerate(index.tracks)}
    progress = tracks[("worker-0", "progress_w0", "counter")]
    assert index.tracks[progress]["samples"] == 400
    assert (index.tracks[progress]["min"], index.tracks[progress]["max"]) == (0, 399)
    assert ("worker-1", "n", "parameter") in tracks
    # Zoomed in on each step of the counter, every sample is there on its own, at level 0. (The whole run at
    # 65536 pixels does it too where the samples are further apart than a pixel: not where load stretched it.)
    times = [
        event[1]
        for _, thread, events, _, _ in streams(experiment)
        if thread["name"] == "worker-0"
        for event in events
        if event[0] == "counter" and event[2] == "progress_w0"
    ]
    seen = {}
    for t0, t1 in zip(times, times[1:]):
        level, samples = decode_samples(index.samples(t0, t1 + 1, 65536, [progress]))
        assert level == 0
        seen.update((s["time"], (s["min"], s["max"], s["last"])) for s in samples)
    assert [seen[time] for time in times] == [(value, value, value) for value in range(400)]
    level, coarse = decode_samples(index.samples(index.begin_ns, index.end_ns + 1, 20, [progress]))
    assert len(coarse) < 40 and coarse[0]["min"] == 0 and coarse[-1]["last"] == 399
    assert max(s["max"] for s in coarse) == 399
    assert [name for time, name in index.marks(1)] == ["done w0"]


def test_bad_arguments(index):
    with pytest.raises(ValueError):
        index.spans(10, 5, 100, [0])
    with pytest.raises(ValueError):
        index.spans(0, 5, 0, [0])
    with pytest.raises(ValueError):
        index.tree(0, 5, [-1])
    assert decode_spans(index.spans(0, index.end_ns, 100, [99, 2**40]))[1] == []
    assert decode_tree(index.tree(index.end_ns, index.begin_ns, [0, 1, 2])) == []


def copy_experiment(experiment, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(experiment, copy)
    return copy


def test_cache_is_used_and_renewed(experiment, tmp_path):
    copy = copy_experiment(experiment, tmp_path)
    assert not reader.Index(str(copy)).built  # copied along, still matching
    os.utime(copy / "trace" / os.listdir(copy / "trace")[0] / "0.tts", ns=(1, 1))
    assert reader.Index(str(copy)).built  # the trace changed
    assert not reader.Index(str(copy)).built


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "garbage"])
def test_damaged_cache_is_rebuilt(experiment, tmp_path, damage):
    copy = copy_experiment(experiment, tmp_path)
    cache = copy / "view.idx"
    data = bytearray(cache.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "flip":
        for offset in range(64, len(data), 97):
            data[offset] ^= 0xFF
    elif damage == "empty":
        data = b""
    else:
        data = b"TTLODIDX" + bytes(range(256)) * 10
    cache.write_bytes(bytes(data))
    index = reader.Index(str(copy))
    assert index.built and [lane["name"] for lane in index.lanes] == ["MainThread", "worker-0", "worker-1"]


def test_cache_that_cannot_be_written_keeps_the_index_in_memory(experiment, tmp_path):
    copy = copy_experiment(experiment, tmp_path)
    (copy / "view.idx").unlink()
    (copy / "view.idx").mkdir()  # in the way of the cache file, even for root
    index = reader.Index(str(copy))
    assert index.built and "cannot write" in index.cache_problem
    assert [lane["name"] for lane in index.lanes] == ["MainThread", "worker-0", "worker-1"]


def test_not_an_experiment(tmp_path):
    with pytest.raises(reader.TraceError, match="not a tracetop experiment"):
        reader.Index(str(tmp_path))


def test_deep_recursion(tmp_path):
    """Hundreds of call depths: every one indexed, and the tree counts recursion as the profile does."""
    code = (
        "import sys\nsys.setrecursionlimit(5000)\ndef down(n):\n    return 0 if n == 0 else 1 + down(n - 1)\n"
        "print(sum(down(800) for _ in range(3)))"
    )
    assert tracetop("--output", "exp", "-c", code, cwd=tmp_path).returncode == 0
    index = reader.Index(str(tmp_path / "exp"))
    main = index.lanes[0]
    assert main["depths"] > 800
    nodes = decode_tree(index.tree(index.begin_ns, index.end_ns + 1, [0]))
    ours = profile_of_tree(index, nodes)
    profile = {region["name"]: region for region in reader.profile(str(tmp_path / "exp"))["regions"]}
    down = profile["__main__:down"]
    visits, exclusive, inclusive, calls = ours["__main__:down"]
    assert visits == down["visits"] == 2403
    # A ns apart per call at most (test_tree_of_the_whole_run_is_the_profile).
    assert abs(exclusive - down["exclusive_ns"]) <= calls and abs(inclusive - down["inclusive_ns"]) <= visits
    _, spans = decode_spans(index.spans(index.begin_ns, index.end_ns + 1, 800, [0]))
    assert max(s["depth"] for s in spans) == main["depths"] - 1


def test_a_killed_programs_trace_is_indexed_up_to_its_cut(tmp_path):
    completed = tracetop("--output", "exp", PROGRAMS / "ending.py", "sigkill", "0.3", cwd=tmp_path)
    assert completed.returncode < 0
    index = reader.Index(str(tmp_path / "exp"))
    assert index.problems and all("cut" in problem for problem in index.problems)
    leaf = [i for i, r in enumerate(index.regions) if r["name"] == "__main__:work"]
    _, spans = decode_spans(index.spans(index.begin_ns, index.end_ns + 1, 100, [0], only=leaf))
    # Every call the trace holds up to its cut (the last may be cut open). How many that is depends on how far
    # the writer had come when the kill came: on a loaded machine, not all of those done 0.1 s before it.
    recorded = enters(tmp_path / "exp")["__main__:work"]
    assert int(completed.stdout) > 0 and recorded > 0
    assert sum(s["calls"] for s in spans) >= recorded - 1
    # The viewer and the report say what was cut, once, and go on.
    report = tracetop("report", "exp", "-o", "r.html", cwd=tmp_path)
    assert report.returncode == 0
    warnings = [line for line in report.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "cut" in warnings[0]
    page = (tmp_path / "r.html").read_text()
    data = json.loads(page.split('<script type="application/json" id="data">', 1)[1].split("</script>", 1)[0])
    assert data["problems"] == index.problems


def test_damaged_spans_end_the_reading_there(tmp_path):
    """Damage inside the compressed spans, where loading does not look: queries read up to it, no further. (Level 0
    is the trace's, lod_file.h: the blocks outside the catalog are coarse levels' of long runs of calls.)"""
    code = "f = abs\nfor i in range(300000): f(i)"
    assert tracetop("--output", "exp", "-c", code, cwd=tmp_path).returncode == 0
    experiment = tmp_path / "exp"
    index = reader.Index(str(experiment))
    assert index.levels > 1  # and the index is in the experiment, to copy
    copy = copy_experiment(experiment, tmp_path)
    cache = copy / "view.idx"
    data = bytearray(cache.read_bytes())
    header_size = 152  # lod_file.h: lod_header; its catalog_off at 48
    (catalog,) = struct.unpack_from("Q", data, 48)
    assert catalog > header_size  # the first block written outside the catalog starts right after the header
    data[header_size : header_size + 11] = b"\xff" * 11  # no zstd frame starts so
    cache.write_bytes(bytes(data))
    damaged = reader.Index(str(copy))
    assert not damaged.built and damaged.lanes == index.lanes
    places = [
        (lane, depth, level)
        for lane, info in enumerate(index.lanes)
        for depth in range(info["depths"])
        for level in range(1, index.levels)
    ]
    read = {place: len(raw_spans(damaged, *place)) for place in places}
    whole = {place: len(raw_spans(index, *place)) for place in places}
    cut = [place for place in places if read[place] < whole[place]]
    # The reading of one depth's level ends at its first block (and of the levels above it that are that one).
    assert cut and {place[:2] for place in cut} == {cut[0][:2]} and all(read[place] == 0 for place in cut)
    lane, depth, level = cut[0]
    width = 2000
    grain = 64 << (level - 1)
    view = (index.begin_ns, index.begin_ns + grain * width)
    assert damaged.level_for(*view, width) == level
    _, spans = decode_spans(damaged.spans(*view, width, all_lanes(damaged)))
    assert all(s["region"] < len(damaged.regions) for s in spans)
    assert not any((s["lane"], s["depth"]) == (lane, depth) for s in spans)
    # Level 0, the trace's, is whole: every call, found by a search.
    everything = list(range(len(damaged.regions)))
    assert damaged.spans(damaged.begin_ns, damaged.end_ns + 1, 1000, all_lanes(damaged), everything) == index.spans(
        index.begin_ns, index.end_ns + 1, 1000, all_lanes(index), everything
    )
    start, end, _, _ = raw_spans(index, lane, depth, 0)[0]
    assert damaged.call_at(lane, depth, (start + end) // 2) == index.call_at(lane, depth, (start + end) // 2)


def test_a_long_build_says_how_it_goes(tmp_path):
    """With progress=0 (any build is long), lines on stderr say how many events were read, then how many spans
    were merged into the coarser levels, then that the index is written: each phase says when it begins, so
    none goes by silent; without, nothing."""
    completed = tracetop("--output", "exp", "-c", "f = abs\nfor i in range(400000): f(i)", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    build = f"import {reader.__name__} as reader; reader.Index('exp', progress={{}})"
    quiet = python("-c", build.format("None"), cwd=tmp_path)
    assert quiet.returncode == 0 and quiet.stderr == ""
    os.remove(tmp_path / "exp" / "view.idx")
    said = python("-c", build.format("0"), cwd=tmp_path)
    assert said.returncode == 0, said.stderr
    assert re.fullmatch(
        r"(tracetop: indexing exp: \d+\.\d M events read \(\d+ s\)\n)+"
        r"(tracetop: indexing exp: \d+\.\d M spans merged into coarser levels \(\d+ s\)\n)+"
        r"tracetop: indexing exp: writing the index \(\d+ s\)\n",
        said.stderr,
    ), said.stderr

"""Switching the measurement off and on is a gap, not time: the calls open across `tracetop ctl PID off`, then
`on`, keep only their measured parts, in the profile and the summary, the exports and the viewer's index.

programs/off_gap.py: four threads loop on worker(), which sleeps 50 ms itself and calls batch() each turn
(--no-c-calls: the sleeps are the functions' own time). It is switched off for OFF_SECONDS in the middle:
worker()'s own time per turn must be batch()'s per call, the same sleep in the same threads at the same times
(where a run left on, beside it, sleeps as long only where the machine's load is the same all along)."""

import json
import re
import shutil
import subprocess
import sys
import time

import pytest

from helpers import PROGRAMS, assert_complete, environment, reader, streams, tracetop
from index_helpers import all_lanes, decode_tree, raw_spans

OFF_SECONDS = 2
ON_SECONDS = 3  # before the switch and after: some 60 turns a thread, each worker() cut at most once by either end
THREADS = 5  # the main thread and four workers, all running across the gap
WORKER, BATCH = "__main__:worker", "__main__:batch"


def ctl(pid, state, directory):
    completed = tracetop("ctl", str(pid), state, cwd=directory)
    assert completed.returncode == 0, completed.stderr


def start(directory):
    process = subprocess.Popen(
        [sys.executable, "-m", "tracetop", "--live", "--no-c-calls", "--output", "exp", PROGRAMS / "off_gap.py"],
        cwd=directory,
        env=environment(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout.readline() == "ready\n"
    return process


def end(process, directory):
    _, stderr = process.communicate("\n", timeout=120)
    assert process.returncode == 0, stderr
    experiment = directory / "exp"
    assert_complete(experiment)
    return experiment


@pytest.fixture(scope="module")
def switched(tmp_path_factory):
    """The program measured ON_SECONDS, switched off for OFF_SECONDS, then on for ON_SECONDS: its experiment."""
    directory = tmp_path_factory.mktemp("switched")
    process = start(directory)
    time.sleep(ON_SECONDS)
    ctl(process.pid, "off", directory)
    time.sleep(OFF_SECONDS)
    ctl(process.pid, "on", directory)
    time.sleep(ON_SECONDS)
    return end(process, directory)


def regions(experiment):
    return {region["name"]: region for region in reader.profile(str(experiment))["regions"]}


def own_per_turn(experiment):
    """worker()'s own time per turn (one batch() call), ns."""
    found = regions(experiment)
    return found[WORKER]["exclusive_ns"] / found[BATCH]["visits"]


def batch_per_call(experiment):
    """batch()'s own time per call, ns: the sleep worker() sleeps too, each turn."""
    found = regions(experiment)
    return found[BATCH]["exclusive_ns"] / found[BATCH]["visits"]


def gaps(experiment):
    """{thread name: (off, on)}: where each stream's gap begins and ends (ns)."""
    found = {}
    for _process, thread, events, _state, _problem in streams(experiment):
        times = {event[0]: event[1] for event in events if event[0] in ("recording_off", "recording_on")}
        found[thread["name"]] = (times["recording_off"], times["recording_on"])
    return found


def test_the_gap_is_no_calls_time(switched):
    # Had the gap been charged to the calls open across it, worker() would own 2 s a thread more, some 35 ms a
    # turn (+70%); a loaded machine stretches single sleeps, and the averages of 60 turns a thread differ by less.
    assert own_per_turn(switched) == pytest.approx(batch_per_call(switched), rel=0.2)
    profile = reader.profile(str(switched))
    # The process's gap, at least as long as the switch was off, which each thread's marks; "measured" leaves it
    # out of every thread's span, and the calls' own times add up to it.
    ((begin, end),) = reader.Trace(str(switched)).processes[0]["gaps"]
    assert end - begin >= OFF_SECONDS * 1e9
    assert all(begin <= off and on == end for off, on in gaps(switched).values())
    spans = sum(thread["end_ns"] - thread["begin_ns"] for thread in profile["threads"])
    assert profile["total_ns"] == spans - THREADS * (end - begin)
    own = sum(region["exclusive_ns"] for region in profile["regions"])
    assert own == pytest.approx(profile["total_ns"], rel=0.01)
    # Each worker's calls open across the gap are entered once: a visit is a call, not a part of one.
    found = regions(switched)
    assert found[WORKER]["visits"] == 4 and found["threading:Thread.run"]["visits"] == 4
    assert set(gaps(switched)) == {"MainThread", "worker-0", "worker-1", "worker-2", "worker-3"}


def test_summary_says_the_measured_time(switched):
    completed = tracetop("summary", switched, cwd=switched.parent)
    assert completed.returncode == 0, completed.stderr
    measured = re.search(r", ([\d.]+) (s|ms) measured\n", completed.stdout)
    profile = reader.profile(str(switched))
    assert float(measured.group(1)) == pytest.approx(profile["total_ns"] / 1e9, abs=0.001)
    row = re.search(r"^\s+([\d.]+)\s+[\d.]+%\s+[\d.]+\s+(\d+)\s+__main__:worker\s", completed.stdout, re.M)
    assert float(row.group(1)) == pytest.approx(regions(switched)[WORKER]["exclusive_ns"] / 1e9, abs=0.001)
    assert int(row.group(2)) == 4


def test_chrome_draws_the_parts(switched, tmp_path):
    completed = tracetop("convert", switched, "--to", "chrome", "-o", tmp_path / "trace.json", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    document = json.loads((tmp_path / "trace.json").read_text())
    events = document["traceEvents"] if isinstance(document, dict) else document
    switches = {}
    for event in events:
        if event.get("ph") == "i" and event.get("name", "").startswith("measurement "):
            switches.setdefault(event["tid"], {})[event["name"]] = event["ts"]
    calls = [event for event in events if event.get("ph") == "X" and event["name"] in (WORKER, BATCH)]
    assert len(switches) == THREADS
    for call in calls:
        off, on = switches[call["tid"]]["measurement off"], switches[call["tid"]]["measurement on"]
        assert not (call["ts"] < off and call["ts"] + call["dur"] > on), call
    # A worker's call in two parts, the second one marked; its own time per turn as batch()'s per call.
    workers = [call for call in calls if call["name"] == WORKER]
    assert len(workers) == 8 and sum(call.get("args", {}).get("resumed", False) for call in workers) == 4
    batches = [call for call in calls if call["name"] == BATCH and not call.get("args", {}).get("resumed")]
    own = sum(call["dur"] for call in workers) - sum(call["dur"] for call in calls if call["name"] == BATCH)
    assert own * 1000 / len(batches) == pytest.approx(batch_per_call(switched), rel=0.2)


def test_perfetto_draws_the_parts(switched, tmp_path):
    pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")
    from test_perfetto import replay

    completed = tracetop("convert", switched, "--to", "perfetto", "-o", tmp_path / "gap.pftrace", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    slices, _counters, _marks, threads = replay(tmp_path / "gap.pftrace")
    names = {tid: name for _pid, tid, name in threads.values()}
    found = gaps(switched)
    workers = []
    for _pid, tid, name, begin, end, args in slices:
        off, on = found[names[tid]]
        assert not (begin < off and end > on), (name, begin, end)
        if name == WORKER:
            workers.append(args.get("resumed"))
    assert sorted(workers, key=bool) == [None] * 4 + [1] * 4


@pytest.mark.skipif(shutil.which("otf2-print") is None, reason="otf2-print (otf2-tools) is missing")
def test_otf2_regions_do_not_span_the_gap(switched, tmp_path):
    completed = tracetop("convert", switched, "--to", "otf2", "-o", tmp_path / "gap.otf2", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    printed = subprocess.run(
        ["otf2-print", tmp_path / "gap.otf2"], capture_output=True, text=True, timeout=120, check=True
    )
    open_regions, switches = {}, []
    for line in printed.stdout.splitlines():
        fields = line.split(None, 3)
        if len(fields) < 4 or not fields[1].isdigit():
            continue
        kind, location = fields[0], int(fields[1])
        if kind == "ENTER":
            open_regions[location] = open_regions.get(location, 0) + 1
        elif kind == "LEAVE":
            open_regions[location] -= 1
        elif kind == "MEASUREMENT_ON_OFF":
            switches.append((location, fields[3].strip()))
            if fields[3].strip() == "Mode: OFF":
                assert open_regions.get(location, 0) == 0, line
    assert sorted(mode for _location, mode in switches) == ["Mode: OFF"] * THREADS + ["Mode: ON"] * THREADS


def test_viewer_index_has_the_parts(switched):
    index = reader.Index(str(switched))
    found = gaps(switched)
    for number, lane in enumerate(index.lanes):
        off, on = found[lane["name"]]
        for depth in range(lane["depths"]):
            for start, end, _region, _calls in raw_spans(index, number, depth, 0):
                assert not (start < off and end > on)
    nodes = decode_tree(index.tree(index.begin_ns, index.end_ns + 1, all_lanes(index)))
    visits = {}
    for node in nodes:
        name = index.regions[node["region"]]["name"]
        visits[name] = visits.get(name, 0) + node["visits"]
    assert visits[WORKER] == 4
    assert visits[BATCH] == regions(switched)[BATCH]["visits"]

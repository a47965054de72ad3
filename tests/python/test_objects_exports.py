"""The objects counted by `tracetop run --objects`, exported: OTF2 metrics (read back by otf2-print), Perfetto
and Chrome counter tracks of the objects alive per type (decoded as their viewers read them), and CUBE metrics
per call path (read back by pycubexr). Each equals what the native trace's records add up to, computed here
independently, and the known numbers of programs/objects_exports.py, in each of its two processes."""

import collections
import json
import re
import shutil
import subprocess

import pytest

from convert_helpers import convert
from helpers import PROGRAMS, assert_complete, needs_object_counting, reader, tracetop

pytestmark = needs_object_counting

PROGRAM = PROGRAMS / "objects_exports.py"
ITEM, MOVED, KEPT = "__main__:Item", "__main__:Moved", "__main__:Kept"


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    directory = tmp_path_factory.mktemp("objects_exports")
    completed = tracetop("run", "--objects", "--output", "exp", PROGRAM, "--child", cwd=directory)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "done 700\n" * 2
    assert_complete(directory / "exp")
    assert len(reader.Trace(str(directory / "exp")).processes) == 2
    return directory / "exp"


def records(experiment):
    """Every OBJECTS record of the native trace: (pid, time, creating region or None, type, size, created,
    destroyed)."""
    trace = reader.Trace(str(experiment))
    for index, process in enumerate(trace.processes):
        for thread in process["threads"]:
            events, state, _ = trace.read_stream(index, thread["stream"])
            assert state == "complete"
            for event in events:
                if event[0] == "objects":
                    yield (process["pid"], *event[1:])


def native_series(experiment):
    """{(pid, type): [(time, created, destroyed, alive)]}: per type of a process, at each time its records were
    written, the objects created and destroyed since counting began, over all the process's threads."""
    changes = collections.defaultdict(lambda: [0, 0])
    for pid, time, _, type_name, _, created, destroyed in records(experiment):
        changes[pid, type_name, time][0] += created
        changes[pid, type_name, time][1] += destroyed
    series, totals = collections.defaultdict(list), collections.defaultdict(lambda: [0, 0])
    for (pid, type_name, time), (created, destroyed) in sorted(changes.items(), key=lambda item: item[0][2]):
        total = totals[pid, type_name]
        total[0] += created
        total[1] += destroyed
        series[pid, type_name].append((time, total[0], total[1], max(total[0] - total[1], 0)))
    return series


def alive_series(series):
    """{(pid, type): [(time, alive)]}."""
    return {key: [(time, alive) for time, _, _, alive in points] for key, points in series.items()}


def assert_known_numbers(alive):
    """The program's own classes, alive over time in each of its two processes: all of them at once, then none;
    the leaked ones at the end."""
    pids = {pid for pid, _ in alive}
    assert len(pids) == 2
    for pid in pids:
        assert max(value for _, value in alive[pid, ITEM]) == 30_000
        assert alive[pid, ITEM][-1][1] == 0
        assert max(value for _, value in alive[pid, MOVED]) == 10_000
        assert alive[pid, MOVED][-1][1] == 0
        assert alive[pid, KEPT][-1][1] == 700
        assert max(value for _, value in alive[pid, "list"]) >= 20_000


def test_native_series_has_the_known_numbers(experiment):
    series = native_series(experiment)
    for pid in {pid for pid, _ in series}:
        assert series[pid, ITEM][-1][1:3] == (30_000, 30_000)
        assert series[pid, MOVED][-1][1:3] == (10_000, 10_000)
        assert series[pid, KEPT][-1][1:3] == (700, 0)
    assert_known_numbers(alive_series(series))


@pytest.mark.skipif(shutil.which("otf2-print") is None, reason="otf2-print (otf2-tools) is missing")
def test_otf2_metrics(experiment):
    convert(experiment, "otf2")
    anchor = experiment / "traces.otf2"
    definitions = subprocess.run(["otf2-print", "-G", anchor], capture_output=True, text=True, timeout=120)
    assert definitions.returncode == 0, definitions.stderr
    # A metric location per process beside its threads: location -> pid.
    locations = {
        int(location): int(pid)
        for location, pid in re.findall(
            r'^LOCATION\s+(\d+)\s+Name: "objects" <\d+>, Type: METRIC, .* Group: "process (\d+) ',
            definitions.stdout,
            re.M,
        )
    }
    assert len(locations) == 2, definitions.stdout
    shown = subprocess.run(["otf2-print", anchor], capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    series = collections.defaultdict(list)
    for line in shown.stdout.splitlines():
        event = re.match(r"^METRIC\s+(\d+)\s+(\d+)\s+Metric: \d+, 3 Values: (.*)$", line)
        if not event:
            continue
        values = re.findall(r'\("objects (created|destroyed|alive): (.+?)" <\d+>; UINT64; (\d+)\)', event.group(3))
        assert [member for member, _, _ in values] == ["created", "destroyed", "alive"], line
        assert len({type_name for _, type_name, _ in values}) == 1
        key = locations[int(event.group(1))], values[0][1]
        series[key].append((int(event.group(2)), *(int(value) for _, _, value in values)))
    assert series == native_series(experiment)
    for pid in locations.values():
        assert series[pid, ITEM][-1][1:] == (30_000, 30_000, 0)
        assert series[pid, KEPT][-1][1:] == (700, 0, 700)
    assert_known_numbers({key: [(t, alive) for t, _, _, alive in points] for key, points in series.items()})


def test_perfetto_counter_tracks(experiment):
    trace_pb2 = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")
    convert(experiment, "perfetto")
    trace = trace_pb2.Trace()
    trace.ParseFromString((experiment / "trace.perfetto-trace").read_bytes())
    processes, tracks, alive = {}, {}, collections.defaultdict(list)
    for packet in trace.packet:
        if packet.HasField("track_descriptor"):
            descriptor = packet.track_descriptor
            if descriptor.HasField("process"):
                processes[descriptor.uuid] = descriptor.process.pid
            elif descriptor.HasField("counter") and descriptor.name.startswith("objects alive: "):
                assert descriptor.parent_uuid in processes
                tracks[descriptor.uuid] = processes[descriptor.parent_uuid], descriptor.name[len("objects alive: ") :]
        elif packet.track_event.track_uuid in tracks:
            assert packet.track_event.type == trace_pb2.TrackEvent.TYPE_COUNTER
            alive[tracks[packet.track_event.track_uuid]].append(
                (packet.timestamp, int(packet.track_event.double_counter_value))
            )
    assert alive == alive_series(native_series(experiment))
    assert_known_numbers(alive)


def test_chrome_counters(experiment):
    convert(experiment, "chrome")
    events = json.loads((experiment / "trace.chrome.json").read_text())["traceEvents"]
    alive = collections.defaultdict(list)
    for event in events:
        if event["ph"] == "C" and event.get("cat") == "objects":
            assert event["name"].startswith("objects: ")
            key = event["pid"], event["name"][len("objects: ") :]
            alive[key].append((round(event["ts"] * 1000), event["args"]["alive"]))
    assert alive == alive_series(native_series(experiment))
    assert_known_numbers(alive)


def test_cube_metrics_per_call_path(experiment):
    pycubexr = pytest.importorskip("pycubexr")
    convert(experiment, "cubex")
    # Per creating region, over all types and both processes (CUBE merges regions by name, as summary does):
    # created, bytes created, alive at the end (per place, as summary).
    places = collections.defaultdict(lambda: [0, 0, 0])
    for _, _, region, type_name, size, created, destroyed in records(experiment):
        place = places[region or "<program>", type_name]
        place[0] += created
        place[1] += destroyed
        place[2] = size
    native = collections.defaultdict(lambda: [0, 0, 0])
    for (region, _), (created, destroyed, size) in places.items():
        native[region][0] += created
        native[region][1] += created * size
        native[region][2] += max(created - destroyed, 0)
    assert places["__main__:make_items", ITEM][:2] == [60_000, 60_000]
    assert places["__main__:make_lists", "list"][:2] == [40_000, 40_000]

    with pycubexr.CubexParser(experiment / "profile.cubex") as parser:
        metrics = ["objects_created", "bytes_created", "objects_alive"]
        values = [parser.get_metric_values(parser.get_metric_by_name(name)) for name in metrics]
        per_path, per_region = {}, collections.defaultdict(lambda: [0, 0, 0])
        for cnode in parser.all_cnodes():
            path, node = [], cnode
            while node is not None:
                path.insert(0, parser.get_region(node).name)
                node = node.parent
            shown = [sum(int(v) for v in metric.cnode_values(cnode)) for metric in values]
            per_path[tuple(path)] = shown
            for k in range(3):
                per_region[path[-1]][k] += shown[k]
    # Every region's objects, and those made outside any call (on <program>), are there exactly.
    assert {region: counts for region, counts in per_region.items() if any(counts)} == {
        region: counts for region, counts in native.items() if any(counts)
    }
    # make_items is called once from first() and once from second() in each process: each path has half of its
    # objects.
    paths = {path[-2]: counts for path, counts in per_path.items() if path[-1] == "__main__:make_items"}
    assert set(paths) == {"__main__:first", "__main__:second"}
    total = native["__main__:make_items"][0]
    assert paths["__main__:first"][0] + paths["__main__:second"][0] == total >= 60_000
    assert abs(paths["__main__:first"][0] - paths["__main__:second"][0]) <= 1
    (lists,) = [counts for path, counts in per_path.items() if path[-1] == "__main__:make_lists"]
    assert lists == native["__main__:make_lists"] and lists[0] >= 40_000 and lists[2] == 0
    leaked = sum(counts[2] for region, counts in per_region.items() if region.startswith("__main__:leak"))
    assert leaked >= 1_400


def test_no_object_metrics_without_objects(tmp_path):
    completed = tracetop("run", "--output", "exp", PROGRAM, "--child", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    experiment = tmp_path / "exp"
    convert(experiment, "chrome")
    events = json.loads((experiment / "trace.chrome.json").read_text())["traceEvents"]
    assert not [event for event in events if event.get("cat") == "objects"]
    pycubexr = pytest.importorskip("pycubexr")
    convert(experiment, "cubex")
    with pycubexr.CubexParser(experiment / "profile.cubex") as parser:
        names = {metric.name for metric in parser.get_metrics()}
    assert "visits" in names and not names & {"objects_created", "bytes_created", "objects_alive"}

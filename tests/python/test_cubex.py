"""CUBE4 (.cubex) read back by pycubexr: visits and exclusive time per call path and thread equal what the
native trace says, and per region what `summary`'s profile says; one root, the artificial <program>."""

import collections

import pytest

from convert_helpers import convert, measure
from helpers import reader

pycubexr = pytest.importorskip("pycubexr")


@pytest.fixture(scope="module")
def cube(tmp_path_factory):
    experiment = measure(tmp_path_factory.mktemp("cubex"))
    convert(experiment, "cubex")
    with pycubexr.CubexParser(experiment / "profile.cubex") as parser:
        yield experiment, parser


def native_paths(experiment):
    """{(thread name, call path): [visits, exclusive ns]} from the native trace's events."""
    trace = reader.Trace(str(experiment))
    paths = collections.defaultdict(lambda: [0, 0])
    for index, process in enumerate(trace.processes):
        for thread in process["threads"]:
            events, _, _ = trace.read_stream(index, thread["stream"])
            stack = []  # (path, time entered, time in callees)
            for event in events:
                if event[0] == "enter":
                    path = (stack[-1][0] if stack else ()) + (event[2],)
                    stack.append([path, event[1], 0])
                    paths[thread["name"], path][0] += 1
                elif event[0] == "leave":
                    path, begin, inner = stack.pop()
                    paths[thread["name"], path][1] += event[1] - begin - inner
                    if stack:
                        stack[-1][2] += event[1] - begin
    return paths


def cube_paths(parser):
    locations = [location.name for location in parser.get_locations()]
    visits = parser.get_metric_values(parser.get_metric_by_name("visits"))
    time = parser.get_metric_values(parser.get_metric_by_name("time"))
    paths = {}
    for cnode in parser.all_cnodes():
        path, node = [], cnode
        while node.parent is not None:
            path.insert(0, parser.get_region(node).name)
            node = node.parent
        for index, name in enumerate(locations):
            paths[name, tuple(path)] = [int(visits.cnode_values(cnode)[index]), float(time.cnode_values(cnode)[index])]
    return paths


def test_call_paths(cube):
    experiment, parser = cube
    native = native_paths(experiment)
    shown = cube_paths(parser)
    assert {location.name for location in parser.get_locations()} == {"MainThread", "worker"}
    for key, (visits, ns) in native.items():
        assert shown[key][0] == visits, key
        # The profile's times are ticks summed per call path, converted once (profile.h); these, each call's
        # difference of two converted times: a ns apart per call of the path or of its callees.
        calls = visits + sum(v for other, (v, _) in native.items() if other[0] == key[0] and other[1][:-1] == key[1])
        assert shown[key][1] == pytest.approx(ns / 1e9, abs=1e-9 * (calls + 1)), key
    # Paths of one thread have no values on the other; the root holds each thread's time outside calls.
    assert all(values == [0, 0.0] for key, values in shown.items() if key[1] and key not in native)
    roots = [cnode for cnode in parser.get_root_cnodes()]
    assert [parser.get_region(root).name for root in roots] == ["<program>"]


def test_regions_match_summary(cube):
    experiment, parser = cube
    profile = reader.profile(str(experiment))
    visits = parser.get_metric_values(parser.get_metric_by_name("visits"))
    time = parser.get_metric_values(parser.get_metric_by_name("time"))
    per_region = collections.defaultdict(lambda: [0, 0.0])
    for cnode in parser.all_cnodes():
        name = parser.get_region(cnode).name
        per_region[name][0] += int(visits.value(cnode))
        per_region[name][1] += float(time.value(cnode))
    for region in profile["regions"]:
        assert per_region[region["name"]][0] == region["visits"]
        assert per_region[region["name"]][1] == pytest.approx(region["exclusive_ns"] / 1e9, abs=1e-8)
    spans = sum(thread["end_ns"] - thread["begin_ns"] for thread in profile["threads"])
    total = sum(float(time.value(cnode)) for cnode in parser.all_cnodes())
    assert total == pytest.approx(spans / 1e9, abs=1e-8)
    fib = parser.get_region_by_name("__main__:fib")
    assert fib.mod.endswith("convert_subject.py") and fib.begin == 8 and fib.paradigm == "user"

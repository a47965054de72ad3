"""The API while measuring: user regions, parameters, switches, and measuring part of a program."""

import json

import pytest

from helpers import PROGRAMS, assert_complete, enters, python, reader, streams, tracetop

USER_REGIONS = {"user:load": 3, "__main__:decorated": 4, "user:named": 2, "user:manual": 5, "__main__:Box.method": 1}


def run_program(name, tmp_path, *options):
    completed = tracetop("--output", "exp", *options, PROGRAMS / name, cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    return tmp_path / "exp"


def test_user_regions(tmp_path):
    experiment = run_program("regions.py", tmp_path)
    recorded = enters(experiment)
    for name in ("user:load", "user:named", "user:manual"):
        assert recorded[name] == USER_REGIONS[name]
    # With the automatic instrumentation, a function decorated without a name is entered once per call: the
    # instrumenter records it, and the decorator's region, named alike, stays out.
    assert recorded["__main__:decorated"] == USER_REGIONS["__main__:decorated"]
    assert_complete(experiment)


@pytest.mark.parametrize("option", ["--noinstrumenter", "--instrumenter=none"])
def test_without_instrumentation_only_user_regions(option, tmp_path):
    experiment = run_program("regions.py", tmp_path, option)
    assert enters(experiment) == USER_REGIONS
    assert_complete(experiment)


def test_decorated_regions_keep_file_and_line(tmp_path):
    experiment = run_program("regions.py", tmp_path, "--instrumenter=none")
    code = compile((PROGRAMS / "regions.py").read_text(), str(PROGRAMS / "regions.py"), "exec")
    decorated = next(const for const in code.co_consts if getattr(const, "co_name", None) == "decorated")
    regions = {region["name"]: region for region in reader.Trace(str(experiment)).processes[0]["regions"]}
    assert regions["__main__:decorated"]["file"] == str(PROGRAMS / "regions.py")
    assert regions["__main__:decorated"]["line"] == decorated.co_firstlineno


def test_parameters_counters_marks(tmp_path):
    experiment = run_program("regions.py", tmp_path, "--instrumenter=none")
    ((_, _, events, _, _),) = streams(experiment)
    found = {event[:1] + event[2:] for event in events if event[0] not in ("enter", "leave", "stream_end")}
    assert found == {
        ("param_int", "n", -5),
        ("param_uint", "u", 7),
        ("param_string", "mode", "fast"),
        ("counter", "queue_len", 17),
        ("counter", "ratio", 0.5),
        ("mark", "checkpoint"),
    }


def test_recording_off_leaves_a_gap(tmp_path):
    experiment = run_program("recording_gap.py", tmp_path)
    recorded = enters(experiment)
    assert recorded["__main__:f"] == 5
    assert recorded["user:outer"] == 1
    assert "user:hidden" not in recorded
    assert_complete(experiment)


def test_instrumenter_switches(tmp_path):
    experiment = run_program("instrumenter_switch.py", tmp_path)
    recorded = enters(experiment)
    assert recorded["__main__:f"] == 4
    assert recorded["__main__:quiet"] == 0
    assert recorded["user:inside"] == 1
    assert_complete(experiment)


def test_measuring_part_of_a_program(tmp_path):
    completed = python(PROGRAMS / "partial.py", "exp", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    experiment = tmp_path / "exp"
    assert completed.stdout == f"{experiment}\n"
    assert enters(experiment, "early")["__main__:work"] == 3
    assert enters(experiment, "late")["__main__:work"] == 4
    assert enters(experiment, "MainThread")["__main__:work"] == 1
    assert_complete(experiment)
    assert {"MANIFEST.md", "config.txt", "profile.txt", "trace"} <= {path.name for path in experiment.iterdir()}
    assert completed.stderr.startswith("tracetop: experiment in exp/")


def test_start_with_options(tmp_path):
    completed = python(PROGRAMS / "session_options.py", "exp", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    said = json.loads(completed.stdout)
    assert said["stats"] == [
        "bytes",
        "chunks",
        "dropped",
        "events",
        "keep_errno",
        "lost",
        "lost_errno",
        "stall",
        "stalled_ns",
        "stalls",
        "streams",
        "wait_ns",
        "waits",
    ]
    assert said["again"] is True
    assert "already" in said["second"]
    config = (tmp_path / "exp" / "config.txt").read_text().splitlines()
    assert {"TRACETOP_TOTAL_MEMORY=2097152", "TRACETOP_C_CALLS=false", "TRACETOP_ENABLE_PROFILING=false"} <= set(config)
    assert not (tmp_path / "exp" / "profile.txt").exists()
    assert not (tmp_path / "exp-second").exists()

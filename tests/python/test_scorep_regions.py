"""User regions of the Score-P bindings' API exact in every pattern the bindings allow, under every instrumenter:
begun in one function and ended in another (start()/stop()), nested and crossing, decorators without a name (one
ENTER per call), scorep.instrumenter.enable("name")/disable("name") as context managers and decorators, and ends
of regions that are not open (one warning). Checked from the trace, the profile and, as a Score-P user reads it,
traces.otf2."""

import shutil
import subprocess

import pytest

from helpers import (
    INSTRUMENTERS,
    PROGRAMS,
    assert_complete,
    enters,
    environment,
    reader,
    streams,
    tracetop,
    tracetop_lines,
)
from trace_files import assert_trees_read_back_the_same

# Every instrumenter, and none: the Score-P user's --noinstrumenter (user regions and switched blocks alone).
RUNS = [[f"--instrumenter={instrumenter}"] for instrumenter in INSTRUMENTERS] + [["--noinstrumenter"]]
RUN_IDS = [options[0].removeprefix("--") for options in RUNS]

needs_otf2_print = pytest.mark.skipif(shutil.which("otf2-print") is None, reason="otf2-print (otf2-tools) is missing")


def run(program, tmp_path, options, **variables):
    completed = tracetop(*options, "--output", "exp", PROGRAMS / program, cwd=tmp_path, env=environment(**variables))
    assert completed.returncode == 0, completed.stderr
    return completed, tmp_path / "exp"


def said(completed):
    """tracetop's lines on stderr but the last (where the experiment is)."""
    return tracetop_lines(completed.stderr)[:-1]


def opened_around(experiment):
    """Per region, for each of its ENTER records that is a new visit (not a part after a split), the regions open
    around it, outermost first."""
    ((_, _, events, _, _),) = streams(experiment)
    stack, around = [], {}
    for event in events:
        if event[0] == "enter":
            if len(event) < 4:  # a fourth item: a part that goes on after a split, no new visit
                around.setdefault(event[2], []).append(tuple(stack))
            stack.append(event[2])
        elif event[0] == "leave":
            stack.pop()
    return around


def spans(experiment):
    """Per region, the (enter, leave) times of each of its parts, in order."""
    ((_, _, events, _, _),) = streams(experiment)
    stack, found = [], {}
    for event in events:
        if event[0] == "enter":
            stack.append((event[2], event[1]))
        elif event[0] == "leave":
            name, entered = stack.pop()
            found.setdefault(name, []).append((entered, event[1]))
    return found


def work_around(experiment):
    return opened_around(experiment)["__main__:work"]


def profile_regions(experiment):
    return {region["name"]: region for region in reader.profile(str(experiment))["regions"]}


def otf2_calls(experiment):
    """(ENTER or LEAVE, region) of traces.otf2 as otf2-print gives them, for the program's regions."""
    printed = subprocess.run(["otf2-print", experiment / "traces.otf2"], capture_output=True, text=True, timeout=60)
    assert printed.returncode == 0, printed.stderr
    calls = []
    for line in printed.stdout.splitlines():
        kind = line.split(" ", 1)[0]
        if kind in ("ENTER", "LEAVE") and '"' in line:
            calls.append((kind, line.split('"')[1]))
    return calls


def otf2_open_around(calls, name):
    """The regions open around each ENTER of `name` in otf2_calls' list, which must be well nested."""
    stack, around = [], []
    for kind, region in calls:
        if kind == "ENTER":
            if region == name:
                around.append(tuple(stack))
            stack.append(region)
        else:
            assert stack and stack[-1] == region, f"LEAVE {region} does not close {stack[-1:]}"
            stack.pop()
    assert not stack
    return around


# ---- begun in one function, ended in another ----


@pytest.mark.parametrize("options", RUNS, ids=RUN_IDS)
def test_a_region_begun_in_start_and_ended_in_stop(tmp_path, options):
    completed, experiment = run("scorep_phase.py", tmp_path, options)
    assert said(completed) == []
    assert_complete(experiment)
    calls_recorded = options != ["--noinstrumenter"]
    recorded = enters(experiment)
    assert recorded["user:phase"] == 1
    assert [recorded[f"__main__:{name}"] for name in ("start", "work", "stop")] == [int(calls_recorded)] * 3
    regions = profile_regions(experiment)
    assert regions["user:phase"]["visits"] == 1
    # In the trace, phase is split where start() returns: its part inside start() and the part that goes on in
    # the caller, which begins where the first ends.
    phase = spans(experiment)["user:phase"]
    assert len(phase) == (2 if calls_recorded else 1)
    assert phase[0][1] == phase[-1][0] or not calls_recorded
    if calls_recorded:
        # work() nests in phase, not in start(), in the trace and in the profile; start() holds only itself.
        (around_work,) = opened_around(experiment)["__main__:work"]
        assert "user:phase" in around_work and "__main__:start" not in around_work
        assert regions["user:phase"]["inclusive_ns"] >= regions["__main__:work"]["inclusive_ns"]
        ((start_entered, start_left),) = spans(experiment)["__main__:start"]
        ((work_entered, _),) = spans(experiment)["__main__:work"]
        assert start_left <= work_entered
        assert regions["__main__:start"]["inclusive_ns"] <= work_entered - start_entered
        assert regions["__main__:start"]["visits"] == regions["__main__:stop"]["visits"] == 1
    # The profile made from the call trees is the one the records give.
    assert_trees_read_back_the_same(tmp_path, experiment)


@pytest.mark.parametrize("options", RUNS, ids=RUN_IDS)
def test_a_region_begun_while_the_instrumenter_is_off_goes_on(tmp_path, options):
    """start() called with the instrumenter off returns unseen: its region stays open after the switch back on."""
    completed, experiment = run("scorep_phase_switched.py", tmp_path, options)
    assert said(completed) == []
    assert_complete(experiment)
    recorded = enters(experiment)
    assert (recorded["user:phase"], recorded["__main__:start"]) == (1, 0)
    if options != ["--noinstrumenter"]:
        (around_work,) = work_around(experiment)
        assert "user:phase" in around_work
        assert recorded["__main__:stop"] == 1
    assert profile_regions(experiment)["user:phase"]["visits"] == 1


@needs_otf2_print
def test_start_and_stop_in_traces_otf2(tmp_path):
    _, experiment = run("scorep_phase.py", tmp_path, [], SCOREP_ENABLE_TRACING="true")
    calls = otf2_calls(experiment)
    (around_work,) = otf2_open_around(calls, "__main__:work")
    assert "user:phase" in around_work and "__main__:start" not in around_work
    # OTF2 has no mark for a part that goes on: phase is entered where it begins and again where start() returns.
    assert calls.count(("ENTER", "user:phase")) == 2 and calls.count(("ENTER", "__main__:start")) == 1


@pytest.mark.parametrize("options", RUNS, ids=RUN_IDS)
def test_regions_nested_and_crossing_and_unmatched_ends(tmp_path, options):
    completed, experiment = run("scorep_nested_regions.py", tmp_path, options)
    assert completed.stdout == "done\n"
    # The two ends of regions never begun: one line says so.
    assert said(completed) == [
        "tracetop: warning: region_end('test_region') ends no open region; ignored (further unmatched ends are "
        "ignored silently)"
    ]
    assert_complete(experiment)
    recorded = enters(experiment)
    assert [recorded[f"user:{name}"] for name in ("outer", "inner", "block", "crossing")] == [1, 1, 1, 1]
    assert "user:test_region" not in recorded and "user:test_region_2" not in recorded
    regions = profile_regions(experiment)
    assert [regions[f"user:{name}"]["visits"] for name in ("outer", "inner", "block", "crossing")] == [1, 1, 1, 1]
    if options != ["--noinstrumenter"]:
        first, second, third = (
            [name for name in around if name.startswith("user:")] for around in work_around(experiment)
        )
        assert (first, second, third) == (["user:outer", "user:inner"], ["user:outer"], ["user:crossing"])
        # begin() and end() hold only themselves, one visit per call: none of the work is theirs.
        assert all({"__main__:begin", "__main__:end"}.isdisjoint(around) for around in work_around(experiment))
        assert (regions["__main__:begin"]["visits"], regions["__main__:end"]["visits"]) == (3, 5)
    assert_trees_read_back_the_same(tmp_path, experiment)


# ---- decorators without a name ----


@pytest.mark.parametrize("options", RUNS, ids=RUN_IDS)
def test_a_decorator_without_a_name_enters_once_per_call(tmp_path, options):
    """The bindings' decorator case: called with the instrumenter as run, switched off, and on inside that."""
    completed, experiment = run("scorep_decorator.py", tmp_path, options)
    assert said(completed) == []
    assert_complete(experiment)
    assert enters(experiment)["__main__:foo"] == 3
    assert profile_regions(experiment)["__main__:foo"]["visits"] == 3


@needs_otf2_print
@pytest.mark.parametrize("options", RUNS, ids=RUN_IDS)
def test_a_decorator_without_a_name_in_traces_otf2(tmp_path, options):
    _, experiment = run("scorep_decorator.py", tmp_path, options, SCOREP_ENABLE_TRACING="true")
    calls = otf2_calls(experiment)
    # As the bindings' own test counts them: an ENTER and a LEAVE per call.
    assert sum(1 for call in calls if call[1] == "__main__:foo") == 6
    assert len(otf2_open_around(calls, "__main__:foo")) == 3


# ---- scorep.instrumenter.enable("name") and disable("name") ----


@needs_otf2_print
def test_named_switches_in_traces_otf2(tmp_path):
    _, experiment = run("scorep_switch_regions.py", tmp_path, ["--noinstrumenter"], SCOREP_ENABLE_TRACING="true")
    calls = otf2_calls(experiment)
    around_work = otf2_open_around(calls, "__main__:work")
    assert [around[:1] for around in around_work] == [
        ("user_instrumenter:block_on",),
        ("user_instrumenter:decorated_on",),
    ]
    assert calls.count(("ENTER", "user_instrumenter:block_on")) == 1


@pytest.mark.parametrize("options", RUNS, ids=RUN_IDS)
def test_named_switches_close_their_region(tmp_path, options):
    completed, experiment = run("scorep_switch_regions.py", tmp_path, options)
    assert said(completed) == []
    assert_complete(experiment)
    recorded = enters(experiment)
    work = work_around(experiment)
    switched = [name for name in recorded if name.startswith("user_instrumenter:")]
    if options == ["--noinstrumenter"]:
        # The two that switch the instrumenter on mark their block; what follows them is recorded in none.
        assert sorted(switched) == ["user_instrumenter:block_on", "user_instrumenter:decorated_on"]
        assert work == [("user_instrumenter:block_on",), ("user_instrumenter:decorated_on", "__main__:switched_on")]
    else:
        # The instrumenter on already: the two that switch it off mark their block, inside which nothing is recorded.
        assert sorted(switched) == ["user_instrumenter:block_off", "user_instrumenter:decorated_off"]
        assert len(work) == 4 and all(not any(name.startswith("user_") for name in around) for around in work)
    assert all(recorded[name] == 1 for name in switched)

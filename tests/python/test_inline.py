"""What the result under a measured Jupyter cell reads from C: the compact timeline (reader.overview)
and the CPU and memory sampler (_tracetop.usage_*)."""

import time

import pytest

from helpers import PROGRAMS, _tracetop, reader, streams, tracetop


@pytest.fixture(scope="module")
def phases(tmp_path_factory):
    directory = tmp_path_factory.mktemp("phases")
    completed = tracetop("--output", "exp", PROGRAMS / "phases.py", cwd=directory)
    assert completed.returncode == 0, completed.stderr
    experiment = directory / "exp"
    [thread] = [thread for thread in reader.profile(str(experiment))["threads"] if thread["events"]]
    return str(experiment), thread["begin_ns"], thread["end_ns"]


@pytest.fixture(scope="module")
def second_entered(phases):
    """When second() began, as the trace has it (a loaded machine may stretch either phase)."""
    experiment = phases[0]
    [(_, _, events, _, _)] = list(streams(experiment))
    [time] = [event[1] for event in events if event[0] == "enter" and event[2] == "__main__:second"]
    return time


def test_overview_shows_each_level_where_it_ran(phases, second_entered):
    experiment, begin, end = phases
    [lane] = reader.overview(experiment, begin, end, width=20, depth=4)
    assert lane["thread"] == "MainThread"
    outermost, level1, level2, level3 = lane["rows"]
    assert outermost == [(0, 19, "__main__:<module>")]
    # first() and second() split the run where second() began, each with its inner() and sleep below it.
    names = [name for _, _, name in level1]
    assert names[0] == "__main__:first" and names[-1] == "__main__:second"
    first, second = level1[0], level1[-1]
    assert first[0] == 0 and second[0] == first[1] + 1 and second[1] == 19
    assert abs(second[0] - (second_entered - begin) * 20 / (end - begin)) <= 1
    assert {name for _, _, name in level2} == {"__main__:inner"}
    assert {name for _, _, name in level3} == {"time:sleep"}


def test_overview_of_part_of_the_run(phases, second_entered):
    experiment, begin, end = phases
    [lane] = reader.overview(experiment, second_entered + (end - second_entered) // 4, end, width=10, depth=2)
    assert lane["rows"][1] == [(0, 9, "__main__:second")]


def test_overview_arguments(phases):
    experiment, begin, end = phases
    with pytest.raises(ValueError):
        reader.overview(experiment, end, begin)
    with pytest.raises(ValueError):
        reader.overview(experiment, begin, end, width=0)
    with pytest.raises(reader.TraceError):
        reader.overview(experiment + "-missing", begin, end)


def test_usage_sampler_follows_cpu_and_memory():
    _tracetop.usage_start(0.005)
    with pytest.raises(_tracetop.TraceError):
        _tracetop.usage_start(0.005)
    held = bytearray(64 << 20)  # zeroed pages: resident once written
    for offset in range(0, len(held), 4096):
        held[offset] = 1
    until = time.process_time() + 0.1
    while time.process_time() < until:
        pass
    samples = _tracetop.usage_stop()
    times = [sample[0] for sample in samples]
    assert len(samples) >= 3 and times == sorted(times) and times[-1] >= 0.1
    assert samples[-1][1] - samples[0][1] >= 0.09  # CPU seconds, the busy loop's at least
    assert max(sample[2] for sample in samples) - samples[0][2] >= 60 << 20
    with pytest.raises(_tracetop.TraceError):
        _tracetop.usage_stop()
    del held

"""What tracetop keeps in the measured process does not grow with the asyncio tasks a program makes: a program
that makes and awaits one task at a time uses as much memory after 300,000 tasks as after 50,000, and the trace
still names every task, each with its step."""

import pytest

from helpers import PROGRAMS, python, reader, tracetop

PROGRAM = PROGRAMS / "many_tasks.py"


def peak_kb(completed):
    """The peak resident memory the program saw at its end (kB), from its last line."""
    last = completed.stdout.splitlines()[-1].split()
    assert last[0] == "peak_kb", completed.stdout
    return int(last[1])


def measured(where, count, *options):
    plain = python(PROGRAM, str(count), cwd=where)
    completed = tracetop("--output", "exp", *options, PROGRAM, str(count), cwd=where)
    assert completed.returncode == plain.returncode == 0, completed.stderr
    assert completed.stdout.splitlines()[0] == plain.stdout.splitlines()[0] == f"done {count}"
    return peak_kb(completed), where / "exp"


def test_memory_is_the_same_after_300k_tasks_as_after_50k(tmp_path):
    (tmp_path / "few").mkdir()
    (tmp_path / "many").mkdir()
    few, _ = measured(tmp_path / "few", 50_000)
    many, experiment = measured(tmp_path / "many", 300_000)
    # Before, each task kept about 0.4 kB for good (100 MB more at 300k); what remains is the allocator's noise.
    assert many - few < 10 * 1024, (few, many)
    lanes = {lane["name"]: lane for lane in reader.TaskLanes(str(experiment)).lanes}
    workers = [lanes.get(f"w{k}") for k in range(300_000)]
    assert all(lane is not None and lane["steps"] == 1 for lane in workers)


@pytest.mark.parametrize("count", [500, 3_000])
def test_summary_counts_every_task_s_steps_within_and_past_the_tree_s_limit(tmp_path, count):
    """The call tree follows the steps of a session's first tasks alone (calltree.h: TT_CALLTREE_TASKS_MAX,
    1024); past them the summary takes the tasks from the records: either way its count of tasks and steps is
    the lanes' (which the records give)."""
    _, experiment = measured(tmp_path, count)
    lanes = reader.TaskLanes(str(experiment)).lanes
    assert {f"w{k}" for k in range(count)} <= {lane["name"] for lane in lanes}
    text = tracetop("summary", "exp", cwd=tmp_path).stdout
    head = text.split("\nAsyncio tasks: ")[1].split(",")
    assert head[0] == f"{len(lanes)} tasks"
    assert head[1].strip() == f"{sum(lane['steps'] for lane in lanes)} steps"
    assert "__main__:work" in (experiment / "profile.txt").read_text()

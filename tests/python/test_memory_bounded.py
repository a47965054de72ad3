"""What tracetop keeps in the measured process does not grow with the asyncio tasks or the threads a program
makes, one after another: beyond the memory budget (--memory) it keeps what the tasks and threads alive at once
need, and the trace still has every task and every thread."""

import pytest

from helpers import PROGRAMS, assert_complete, enters, python, reader, streams, tracetop

PROGRAM = PROGRAMS / "many_tasks.py"
THREADS = PROGRAMS / "many_threads.py"


def peak_kb(completed):
    """The peak resident memory the program saw at its end (kB), from its last line."""
    last = completed.stdout.splitlines()[-1].split()
    assert last[0] == "peak_kb", completed.stdout
    return int(last[1])


def measured(where, count, *options, program=PROGRAM):
    plain = python(program, str(count), cwd=where)
    completed = tracetop("--output", "exp", *options, program, str(count), cwd=where)
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


def test_memory_is_the_same_after_4000_threads_as_after_1000(tmp_path):
    """A thread's stream is freed once its thread ended and its records are on disk. A small budget, so that
    the chunks the writer has not yet taken back weigh little beside what each thread used to keep (2 kB)."""
    (tmp_path / "few").mkdir()
    (tmp_path / "many").mkdir()
    few, _ = measured(tmp_path / "few", 1_000, "--memory", "2M", program=THREADS)
    many, experiment = measured(tmp_path / "many", 4_000, "--memory", "2M", program=THREADS)
    assert many - few < 3 * 1024, (few, many)
    names = {thread["name"] for _, thread, *_ in streams(experiment)}
    assert {f"request-{k}" for k in range(4_000)} <= names
    assert enters(experiment)["__main__:work"] == 4_000
    assert_complete(experiment)

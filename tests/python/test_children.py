"""Child processes are measured into their parent's experiment: multiprocessing with each start method (Pool,
Process, concurrent.futures), subprocess running Python, os.fork; each process with its own streams and its
parent recorded, the program's output unchanged."""

import re

import pytest

from helpers import (
    PROGRAMS,
    WORKLOADS,
    assert_complete,
    environment,
    program_stderr,
    python,
    reader,
    tracetop,
    tracetop_lines,
)


def processes(experiment):
    """[(process, {region: enters})] of every process of the experiment, all threads together."""
    trace = reader.Trace(str(experiment))
    assert trace.problems == []
    result = []
    for index, process in enumerate(trace.processes):
        counts = {}
        for thread in process["threads"]:
            for name, count in trace.count_enters(index, thread["stream"]).items():
                counts[name] = counts.get(name, 0) + count
        result.append((process, counts))
    return result


def same_as_python(tmp_path, *arguments, options=(), env=None):
    plain = python(*arguments, cwd=tmp_path, env=env)
    traced = tracetop("--output", "exp", *options, *arguments, cwd=tmp_path, env=env)
    assert plain.returncode == 0, plain.stderr
    assert (traced.returncode, traced.stdout, program_stderr(traced.stderr)) == (0, plain.stdout, plain.stderr)
    assert not any("warning" in line for line in tracetop_lines(traced.stderr)), traced.stderr
    return traced


def test_processes_workload(tmp_path):
    same_as_python(tmp_path, WORKLOADS / "processes.py")
    assert_complete(tmp_path / "exp")
    (parent, in_parent), *children = processes(tmp_path / "exp")
    assert in_parent["__main__:run"] == 1 and "__main__:square_sum" not in in_parent
    assert all(child["ppid"] == parent["pid"] and child["ended"] for child, _ in children)
    # A pool worker may be ended before it asks for work: it is known by multiprocessing's start of a process.
    workers = [counts for child, counts in children if "multiprocessing.process:BaseProcess._bootstrap" in counts]
    started = [counts for child, counts in children if child["name"] == "-c"]
    forked = [counts for child, counts in children if counts not in workers + started]
    assert len(workers) == 2 and sum(counts.get("__main__:square_sum", 0) for counts in workers) == 8
    assert len(started) == 1 and "__main__:square_sum" not in started[0]
    # The forked child's stream continues the parent's: it entered run() when the parent did.
    assert len(forked) == 1 and forked[0]["__main__:square_sum"] == 1 and forked[0]["__main__:run"] == 1

    # The summary (profile.txt) has every process, merged and one by one; and the profile of each alone.
    profile = (tmp_path / "exp" / "profile.txt").read_text()
    assert profile.startswith("tracetop summary \N{EM DASH} 5 processes")
    # A pool worker still waiting for work when the pool ends is terminated (SIGTERM), the others exit.
    ends = re.findall(rf"\(child of {parent['pid']}, (ended normally|ended: killed by SIGTERM)\)", profile)
    assert len(ends) == 4 and ends.count("ended: killed by SIGTERM") <= 2, ends
    table = profile.split("\nProcesses\n")[1].splitlines()[1:6]
    assert sorted(int(row.split()[0]) for row in table) == sorted(
        process["pid"] for process, _ in processes(tmp_path / "exp")
    )
    merged = reader.profile(str(tmp_path / "exp"))
    assert {region["name"]: region["visits"] for region in merged["regions"]}["__main__:square_sum"] == 9
    assert (
        len(merged["processes"]) == 5 and sum(process["events"] for process in merged["processes"]) == merged["events"]
    )
    (forked_pid,) = [child["pid"] for child, counts in children if counts is forked[0]]
    alone = reader.profile(str(tmp_path / "exp"), pid=forked_pid)
    assert [process["pid"] for process in alone["processes"]] == [forked_pid]
    assert {region["name"]: region["visits"] for region in alone["regions"]}["__main__:square_sum"] == 1
    summary = tracetop("summary", "--process", forked_pid, "exp", cwd=tmp_path)
    assert summary.returncode == 0 and summary.stdout.startswith("tracetop summary \N{EM DASH} 1 of 5 processes")


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_multiprocessing_start_method(method, tmp_path):
    traced = same_as_python(tmp_path, PROGRAMS / "pools.py", method)
    assert_complete(tmp_path / "exp")
    (parent, in_parent), *children = processes(tmp_path / "exp")
    # The closing line's counts are the parent's own, and say so: the children's are in the experiment too.
    assert re.search(
        rf"^tracetop: experiment in exp/ \(this process: {parent['events']} events, [\d.]+ \w+; "
        rf"{len(children)} other processes measured\); see: ",
        traced.stderr,
        re.M,
    ), traced.stderr
    assert "__main__:square_sum" not in in_parent
    # Pool workers (2), the Process (1) and executor workers (1 or 2, started as work comes); a worker may find
    # no work left for it.
    pool_workers = [counts for _, counts in children if "multiprocessing.pool:worker" in counts]
    executor_workers = [counts for _, counts in children if "concurrent.futures.process:_process_worker" in counts]
    assert len(pool_workers) == 2 and len(children) - len(executor_workers) == 3
    assert sum(counts.get("__main__:square_sum", 0) for _, counts in children) == 8 + 1 + 4
    # Forked and spawned workers are the parent's children; the fork server's are the fork server's, which,
    # like the resource tracker, runs none of the program and is not measured.
    assert all((child["ppid"] == parent["pid"]) == (method != "forkserver") for child, _ in children)
    assert all(child["ended"] for child, _ in children)


def test_python_subprocesses_see_what_python_gives_them(tmp_path):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text("import os\nos.environ['SITECUSTOMIZED'] = 'yes'\n")
    env = environment(PYTHONPATH=str(tmp_path / "site"))
    traced = same_as_python(tmp_path, PROGRAMS / "children.py", env=env)
    assert traced.stdout.count('"sitecustomize": "yes"') == 4  # the program's own sitecustomize still runs
    assert_complete(tmp_path / "exp")
    # Each child once: the one forked to run a preexec_fn is measured after it execs.
    (parent, _), *children = processes(tmp_path / "exp")
    assert [child["name"] for child, _ in children] == ["-c", "-m seen"] + [str(PROGRAMS / "seen.py")] * 2
    assert all(child["ppid"] == parent["pid"] for child, _ in children)
    assert all(counts["builtins:print"] == 1 for _, counts in children)


def test_no_follow_measures_no_child(tmp_path):
    same_as_python(tmp_path, WORKLOADS / "processes.py", options=["--no-follow"])
    ((_, counts),) = processes(tmp_path / "exp")
    assert "__main__:square_sum" not in counts


AFTER_STOP = """
import subprocess, sys, tracetop
with tracetop.start(output="exp"):
    subprocess.run([sys.executable, "-c", "pass"])
subprocess.run([sys.executable, "-c", "pass"])
"""


def test_children_started_after_the_measurement_are_not_measured(tmp_path):
    completed = python("-c", AFTER_STOP, cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert [process["name"] for process, _ in processes(tmp_path / "exp")] == ["-c", "-c"]


def test_a_tracetop_command_in_a_child_is_not_measured_into_the_parent(tmp_path):
    code = (
        "import subprocess, sys; subprocess.run([sys.executable, '-m', 'tracetop', '--output', 'inner', '-c', 'pass'])"
    )
    completed = tracetop("--output", "exp", "-c", code, cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert len(processes(tmp_path / "exp")) == 1
    assert len(processes(tmp_path / "inner")) == 1


def test_children_are_measured_as_the_parent_is(tmp_path):
    """With the parent's configuration: here its filter, named relative to where the parent started."""
    (tmp_path / "f.filter").write_text(
        "SCOREP_REGION_NAMES_BEGIN\nEXCLUDE __main__:square_sum\nSCOREP_REGION_NAMES_END\n"
    )
    same_as_python(tmp_path, PROGRAMS / "pools.py", "spawn", options=["--filter", "f.filter"])
    (parent, _), *children = processes(tmp_path / "exp")
    assert len(children) >= 4 and not any("__main__:square_sum" in counts for _, counts in children)
    assert sum(counts.get("builtins:sum", 0) for _, counts in children) >= 8 + 1 + 4  # what square_sum calls

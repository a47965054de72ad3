"""What the Python tests share: run programs with and without tracetop in subprocesses, read what they
recorded. Tests run with tracetop installed in the interpreter that runs pytest."""

import collections
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tracetop import _reader

PROGRAMS = Path(__file__).parent / "programs"
WORKLOADS = Path(__file__).resolve().parents[2].parent / "shared" / "workloads"

# Variables that would change what tracetop does, removed for every test program.
_OUR_VARIABLES = ("TRACETOP_", "SCOREP_")


def environment(**variables):
    """The environment of this process without tracetop's variables, plus `variables`."""
    clean = {name: value for name, value in os.environ.items() if not name.startswith(_OUR_VARIABLES)}
    return {**clean, **variables}


def run(*command, cwd, env=None, input="", timeout=120):
    return subprocess.run([str(part) for part in command], cwd=cwd, env=env or environment(), input=input,
                          capture_output=True, text=True, timeout=timeout)


def python(*arguments, **how):
    """Runs `python ARGUMENTS`, as the test programs run without tracetop."""
    return run(sys.executable, *arguments, **how)


def tracetop(*arguments, **how):
    """Runs `python -m tracetop ARGUMENTS`."""
    return python("-m", "tracetop", *arguments, **how)


def region(module, qualname):
    """A Python function's region name: MODULE:QUALNAME, and before Python 3.11, whose code objects carry no
    qualified name, MODULE:NAME."""
    return f"{module}:{qualname if sys.version_info >= (3, 11) else qualname.rpartition('.')[2]}"


def program_stderr(stderr):
    """What the program wrote on stderr, without tracetop's own lines."""
    return "".join(line for line in stderr.splitlines(keepends=True) if not line.startswith("tracetop: "))


def tracetop_lines(stderr):
    return [line for line in stderr.splitlines() if line.startswith("tracetop: ")]


def streams(experiment):
    """(process, thread, events, state, problem) for every stream of the experiment."""
    trace = _reader.Trace(str(experiment))
    for index, process in enumerate(trace.processes):
        for thread in process["threads"]:
            events, state, problem = trace.read_stream(index, thread["stream"])
            yield process, thread, events, state, problem


def enters(experiment, thread_name=None):
    """How often each region was entered, over all streams (or those of threads named `thread_name`)."""
    trace = _reader.Trace(str(experiment))
    counts = collections.Counter()
    for index, process in enumerate(trace.processes):
        for thread in process["threads"]:
            if thread_name is None or thread["name"] == thread_name:
                counts.update(trace.count_enters(index, thread["stream"]))
    return counts


def assert_well_nested(events):
    open_regions = []
    for event in events:
        if event[0] == "enter":
            open_regions.append(event[2])
        elif event[0] == "leave":
            assert open_regions and open_regions[-1] == event[2], f"{event} does not close {open_regions[-1:]}"
            open_regions.pop()
    assert not open_regions, f"still open at the end: {open_regions}"


def assert_complete(experiment):
    """Every stream of the experiment ended properly, and is well nested."""
    for process, thread, events, state, problem in streams(experiment):
        assert (state, problem) == ("complete", None), f"{process['pid']}/{thread['name']}"
        assert_well_nested(events)


def workload(name):
    path = WORKLOADS / name
    if not path.exists():
        pytest.skip(f"{path} is not here")
    return path


def console_script():
    """The installed `tracetop` command beside this interpreter, or skip."""
    found = shutil.which("tracetop", path=os.path.dirname(sys.executable))
    if found is None:
        pytest.skip("no tracetop console script beside this interpreter")
    return found

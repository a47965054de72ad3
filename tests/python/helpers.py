"""What the Python tests share: run programs with and without tracetop in subprocesses, read what they
recorded, and what this Python can measure. Tests run with tracetop installed in the interpreter that runs
pytest. Test files import tracetop's extensions from here alone, never themselves."""

import collections
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from tracetop import _reader as reader

# What runs inside the measured process (active(), usage_start(), gil_unavailable()), and what reads its traces
# (Trace, Index, profile, summary, score, convert, overview, MpiView, TaskLanes, LiveWatch).
from tracetop import _tracetop  # noqa: F401 (for the tests)

# The programs the tests run, and the workloads that bench/ times (programs/workloads/README.md).
PROGRAMS = Path(__file__).parent / "programs"
WORKLOADS = PROGRAMS / "workloads"

# Every instrumenter of this Python; those of them that see calls of C functions (settrace sees none).
INSTRUMENTERS = ["profile", "trace"] + (["monitoring"] if sys.version_info >= (3, 12) else [])
C_CALL_INSTRUMENTERS = [instrumenter for instrumenter in INSTRUMENTERS if instrumenter != "trace"]

# Objects are counted by CPython's reference tracer from 3.13, before by wedges in a shared libpython.
COUNTS_OBJECTS = not sysconfig.get_config_var("Py_GIL_DISABLED") and (
    sys.version_info >= (3, 13) or bool(sysconfig.get_config_var("Py_ENABLE_SHARED"))
)
needs_object_counting = pytest.mark.skipif(not COUNTS_OBJECTS, reason="this Python cannot count objects")

# Variables that would change what tracetop does, removed for every test program.
_OUR_VARIABLES = ("TRACETOP_", "SCOREP_")
# The terminal's size that pytest-xdist sets in its workers: ncurses would keep top's screen at that size,
# whatever size its window is given.
_TERMINAL_SIZE = ("COLUMNS", "LINES")


def environment(**variables):
    """The environment of this process without tracetop's variables, plus `variables`."""
    clean = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(_OUR_VARIABLES) and name not in _TERMINAL_SIZE
    }
    return {**clean, **variables}


def run(*command, cwd, env=None, input="", timeout=300):
    return subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=env or environment(),
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


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


# A line of how a long piece of work goes (src/ext/progress.c): "tracetop: WHAT: HOW FAR (N s)".
_PROGRESS = re.compile(r"tracetop: [^\n]*: [^\n]* \(\d+ s\)\n")


def without_progress(stderr):
    """What a command wrote on stderr without its progress lines, said once a piece of work has taken a second:
    on a loaded machine any piece of work may take that long."""
    return "".join(line for line in stderr.splitlines(keepends=True) if not _PROGRESS.fullmatch(line))


def streams(experiment):
    """(process, thread, events, state, problem) for every stream of the experiment."""
    trace = reader.Trace(str(experiment))
    for index, process in enumerate(trace.processes):
        for thread in process["threads"]:
            events, state, problem = trace.read_stream(index, thread["stream"])
            yield process, thread, events, state, problem


def enters(experiment, thread_name=None):
    """How often each region was entered, over all streams (or those of threads named `thread_name`)."""
    trace = reader.Trace(str(experiment))
    counts = collections.Counter()
    for index, process in enumerate(trace.processes):
        for thread in process["threads"]:
            if thread_name is None or thread["name"] == thread_name:
                counts.update(trace.count_enters(index, thread["stream"]))
    return counts


def object_counts(experiment):
    """{(creating region, type): [created, destroyed]} over every stream."""
    totals = collections.defaultdict(lambda: [0, 0])
    for _process, _thread, events, _state, _problem in streams(experiment):
        for event in events:
            if event[0] == "objects":
                region, type_name, size, created, destroyed = event[2:]
                totals[region, type_name][0] += created
                totals[region, type_name][1] += destroyed
    return totals


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


def console_script():
    """The installed `tracetop` command beside this interpreter, or skip."""
    found = shutil.which("tracetop", path=os.path.dirname(sys.executable))
    if found is None:
        pytest.skip("no tracetop console script beside this interpreter")
    return found

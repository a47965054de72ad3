"""What the converter tests share: an experiment of programs/convert_subject.py, and the native trace's
calls to compare each format with."""

import collections

from helpers import PROGRAMS, assert_complete, reader, tracetop

SUBJECT = PROGRAMS / "convert_subject.py"


def measure(directory, *options):
    """Runs the subject under tracetop into directory/exp; returns the experiment's path."""
    completed = tracetop("--output", "exp", *options, SUBJECT, cwd=directory)
    assert completed.returncode == 0, completed.stderr
    assert_complete(directory / "exp")
    return directory / "exp"


def convert(experiment, format, *options):
    completed = tracetop("convert", experiment, "--to", format, *options, cwd=experiment.parent)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == ""
    return completed


Call = collections.namedtuple("Call", "pid tid name begin end params")


def native_calls(experiment):
    """Every call of the native trace, with the parameters set directly inside it (a garbage collection's:
    collected and uncollectable); and the counters and marks:
    (calls, counters [(pid, tid, name, time, value)], marks [(pid, tid, name, time)])."""
    trace = reader.Trace(str(experiment))
    calls, counters, marks = [], [], []
    for index, process in enumerate(trace.processes):
        for thread in process["threads"]:
            events, state, _ = trace.read_stream(index, thread["stream"])
            assert state == "complete"
            key = (process["pid"], thread["native_tid"])
            stack = []
            for event in events:
                kind, time = event[0], event[1]
                if kind == "enter":
                    stack.append((event[2], time, {}))
                elif kind == "leave":
                    name, begin, params = stack.pop()
                    calls.append(Call(*key, name, begin, time, params))
                elif kind.startswith("param_") and stack:
                    stack[-1][2][event[2]] = event[3]
                elif kind == "gc" and stack:
                    stack[-1][2].update(collected=event[3], uncollectable=event[4])
                elif kind == "counter":
                    counters.append((*key, event[2], time, event[3]))
                elif kind == "mark":
                    marks.append((*key, event[2], time))
    return calls, counters, marks

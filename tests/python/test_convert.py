"""`tracetop convert` to chrome, speedscope, pstats and collapsed stacks, each read back by its consumer (json
for Trace Event JSON and speedscope's format, pstats.Stats, a flamegraph-style fold) and checked against the
native trace and `summary`'s profile; `tracetop run --format`; bad input."""

import collections
import decimal
import json
import os
import pstats
import re

import pytest

from convert_helpers import convert, measure, native_calls
from helpers import WORKLOADS, reader, tracetop, without_progress


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    return measure(tmp_path_factory.mktemp("convert"))


def ns(value):
    """A time in microseconds, read exactly from the JSON, in ns."""
    return int(value * 1000)


def test_chrome(experiment):
    convert(experiment, "chrome")
    with open(experiment / "trace.chrome.json") as file:
        document = json.load(file, parse_float=decimal.Decimal)
    events = document["traceEvents"]
    calls, counters, marks = native_calls(experiment)

    complete = sorted(
        (e["pid"], e["tid"], e["name"], ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e.get("args", {}))
        for e in events
        if e["ph"] == "X"
    )
    assert complete == sorted((c.pid, c.tid, c.name, c.begin, c.end, c.params) for c in calls)
    assert {c.name: c.params for c in calls if c.name == "__main__:work" and c.tid == c.pid}["__main__:work"] == {
        "n": -7,
        "size": 7,
        "mode": 'fa"st\u00e9',
    }
    assert sorted(
        (e["pid"], e["tid"], e["name"], ns(e["ts"]), float(e["args"][e["name"]])) for e in events if e["ph"] == "C"
    ) == sorted(counters)
    assert sorted(
        (e["pid"], e["tid"], e["name"], ns(e["ts"])) for e in events if e["ph"] == "i" and e.get("cat") == "mark"
    ) == sorted(marks)
    assert [e["args"] for e in events if e["ph"] == "X" and e["name"] == "__main__:main"] == [{"outside": 1}]

    trace = reader.Trace(str(experiment))
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    expected = {(p["pid"], t["native_tid"]): t["name"] for p in trace.processes for t in p["threads"]}
    assert names == expected and sorted(names.values()) == ["MainThread", "worker"]


def test_speedscope(experiment):
    convert(experiment, "speedscope")
    with open(experiment / "profile.speedscope.json") as file:
        document = json.load(file)
    frames = document["shared"]["frames"]
    calls, _, _ = native_calls(experiment)
    trace = reader.Trace(str(experiment))
    pid = trace.processes[0]["pid"]
    tids = {f"{pid} {t['name']}": t["native_tid"] for t in trace.processes[0]["threads"]}
    assert sorted(p["name"] for p in document["profiles"]) == sorted(tids)
    for profile in document["profiles"]:
        assert profile["type"] == "evented" and profile["unit"] == "nanoseconds"
        stack, opened = [], collections.Counter()
        for event in profile["events"]:
            if event["type"] == "O":
                stack.append(event)
                opened[frames[event["frame"]]["name"]] += 1
            else:
                begin = stack.pop()
                assert begin["frame"] == event["frame"] and begin["at"] <= event["at"]
        assert not stack
        assert profile["startValue"] == profile["events"][0]["at"]
        assert profile["endValue"] == profile["events"][-1]["at"]
        tid = tids[profile["name"]]
        assert opened == collections.Counter(c.name for c in calls if c.tid == tid)
    fib = next(f for f in frames if f["name"] == "__main__:fib")
    assert fib["file"].endswith("convert_subject.py") and fib["line"] == 8


def test_pstats(experiment):
    convert(experiment, "pstats")
    stats = pstats.Stats(str(experiment / "profile.pstats"))
    profile = reader.profile(str(experiment))
    by_name = {func[2]: value for func, value in stats.stats.items()}
    assert len(by_name) == len(stats.stats) == len(profile["regions"])
    for region in profile["regions"]:
        primitive, calls, tottime, cumtime, callers = by_name[region["name"]]
        assert calls == region["visits"]
        assert tottime == pytest.approx(region["exclusive_ns"] / 1e9, abs=1e-9)
        assert cumtime == pytest.approx(region["inclusive_ns"] / 1e9, abs=1e-9)
        assert sum(caller[0] for caller in callers.values()) <= calls
    fib = next(func for func in stats.stats if func[2] == "__main__:fib")
    assert fib[0].endswith("convert_subject.py") and fib[1] == 8
    primitive, calls, _, _, callers = stats.stats[fib]
    assert (primitive, calls) == (2, 41 + 109)  # fib(7) and fib(9), and their recursive calls
    assert callers[fib][0] == calls - primitive
    work = next(func for func in stats.stats if func[2] == "__main__:work")
    assert callers[work][:2] == (2, 2)
    assert stats.total_calls == sum(region["visits"] for region in profile["regions"])
    stats.sort_stats("cumulative").print_stats(0)  # what snakeviz and gprof2dot do with it works


def test_collapsed(experiment):
    convert(experiment, "collapsed")
    exclusive = collections.Counter()
    total = 0
    for line in (experiment / "profile.collapsed").read_text().splitlines():
        stack, count = line.rsplit(" ", 1)
        exclusive[stack.split(";")[-1]] += int(count)
        total += int(count)
    profile = reader.profile(str(experiment))
    assert exclusive == {r["name"]: r["exclusive_ns"] for r in profile["regions"] if r["exclusive_ns"]}
    assert (
        "__main__:main;user:phase;__main__:work;__main__:fib;__main__:fib"
        in (experiment / "profile.collapsed").read_text()
    )


def test_run_format(tmp_path):
    experiment = measure(tmp_path, "--format", "chrome,pstats")
    assert (experiment / "trace.chrome.json").is_file() and (experiment / "profile.pstats").is_file()
    manifest = (experiment / "MANIFEST.md").read_text()
    assert "`trace.chrome.json`" in manifest and "`profile.pstats`" in manifest


def test_output_elsewhere(experiment, tmp_path):
    assert convert(experiment, "collapsed").returncode == 0  # the default place, to compare with
    completed = convert(experiment, "collapsed", "-o", tmp_path / "stacks.txt")
    assert without_progress(completed.stderr).startswith(f"tracetop: wrote {tmp_path / 'stacks.txt'} (")
    assert (tmp_path / "stacks.txt").read_text() == (experiment / "profile.collapsed").read_text()


def assert_one_line(completed, message):
    assert completed.returncode == 2
    assert completed.stderr == f"tracetop: error: {message}\n"
    assert completed.stdout == ""


def test_unknown_format(experiment):
    completed = tracetop("convert", experiment, "--to", "pdf", cwd=experiment.parent)
    assert_one_line(completed, f"unknown format 'pdf' (known: {', '.join(reader.FORMATS)})")


@pytest.mark.parametrize("format", ["cubex", "perfetto", "chrome", "speedscope", "pstats", "collapsed"])
def test_unwritable_output(experiment, tmp_path, format):
    target = tmp_path / "missing" / "out"
    completed = tracetop("convert", experiment, "--to", format, "-o", target, cwd=tmp_path)
    assert_one_line(completed, f"cannot write {target}: No such file or directory")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_read_only_directory(experiment, tmp_path):
    (tmp_path / "ro").mkdir(mode=0o500)
    completed = tracetop("convert", experiment, "--to", "chrome", "-o", tmp_path / "ro" / "x.json", cwd=tmp_path)
    assert completed.returncode == 2 and "Permission denied" in completed.stderr


def test_full_disk(experiment, tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    completed = tracetop("convert", experiment, "--to", "chrome", "-o", "/dev/full", cwd=tmp_path)
    assert_one_line(completed, "cannot write /dev/full: No space left on device")


def test_missing_experiment(tmp_path):
    completed = tracetop("convert", "nowhere", "--to", "chrome", cwd=tmp_path)
    assert completed.returncode == 2 and len(completed.stderr.splitlines()) == 1
    assert completed.stderr.startswith("tracetop: error: nowhere")


@pytest.mark.parametrize("format", list(reader.FORMATS))
def test_cut_trace_converts_what_is_there(tmp_path, format):
    """A trace cut short converts up to where it stops: the file is written, one warning says what was cut."""
    experiment = measure(tmp_path)
    main_stream = experiment / "trace" / str(reader.Trace(str(experiment)).processes[0]["pid"]) / "0.tts"
    with open(main_stream, "r+b") as file:
        file.truncate(main_stream.stat().st_size - 100)
    completed = tracetop("convert", experiment, "--to", format, cwd=tmp_path)
    assert completed.returncode == 0  # the output was made: what was cut is a warning
    wrote, warning = without_progress(completed.stderr).splitlines()
    assert wrote.startswith(f"tracetop: wrote {experiment / reader.default_name(format)} (")
    assert warning.startswith("tracetop: warning: trace cut short: process ") and '"MainThread"' in warning
    assert (experiment / reader.default_name(format)).stat().st_size > 0


def test_a_json_file_too_large_for_its_viewer_is_warned_of(tmp_path):
    """The estimate of a JSON file's size is within a factor of two of the size written, and beyond what the
    format's viewer opens (here a limit of 100 kB) it makes a warning; other formats never do. The program makes a
    dozen chunks per thread, as the traces a warning is for make thousands: a range is estimated chunk by chunk."""
    from tracetop.commands.convert import json_too_large

    completed = tracetop("--output", "exp", WORKLOADS / "threads.py", "200000", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    for format in ("chrome", "speedscope"):
        warning = json_too_large(str(tmp_path / "exp"), format, limit=100_000)
        estimate = float(re.search(r"about ([\d.]+) MiB", warning).group(1)) * (1 << 20)
        written = tracetop("convert", "exp", "--to", format, cwd=tmp_path)
        assert written.returncode == 0, written.stderr
        assert not any("warning" in line for line in written.stderr.splitlines())  # under the real limit
        size = (tmp_path / "exp" / reader.default_name(format)).stat().st_size
        assert size / 2 < estimate < size * 2, (format, estimate, size)
    assert json_too_large(str(tmp_path / "exp"), "perfetto", limit=0) is None
    # A part of the trace is estimated as that part: one thread, a fifth of the run (a whole-run estimate would
    # warn of a file several times the size the part makes). Each estimate is off by what the whole run's is (the
    # bytes per trace byte of this program), and a range's by how unevenly the calls fall in the chunks at its
    # edges: within 2x of it.
    estimate = json_too_large(str(tmp_path / "exp"), "chrome", limit=1)
    whole = (
        float(re.search(r"about ([\d.]+) MiB", estimate).group(1))
        * (1 << 20)
        / (tmp_path / "exp" / reader.default_name("chrome")).stat().st_size
    )
    end = max(process["end_time"] for process in reader.Trace(str(tmp_path / "exp")).processes)
    for part in (
        ["--thread", "worker-1"],
        *(["--from", f"{end * a:.0f}ns", "--until", f"{end * (a + 0.2):.0f}ns"] for a in (0, 0.4, 0.8)),
    ):
        options = (
            dict(thread=part[1]) if part[0] == "--thread" else dict(start=int(part[1][:-2]), stop=int(part[3][:-2]))
        )
        warning = json_too_large(str(tmp_path / "exp"), "chrome", limit=1, **options)
        estimate = float(re.search(r"about ([\d.]+) (KiB|MiB)", warning).group(1)) * (
            1 << (10 if "KiB" in warning else 20)
        )
        written = tracetop("convert", "exp", "--to", "chrome", "-o", "part.json", *part, cwd=tmp_path)
        assert written.returncode == 0, written.stderr
        off = estimate / (tmp_path / "part.json").stat().st_size
        assert whole / 2 < off < whole * 2, (part, off, whole)


def test_one_thread_alone(tmp_path):
    """--thread keeps the calls of that thread, all of them, and nothing of the others; a thread that is not in
    the trace is one line and nothing written."""
    from helpers import enters

    completed = tracetop("--output", "exp", WORKLOADS / "threads.py", "20000", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    written = tracetop("convert", "exp", "--to", "chrome", "--thread", "worker-1", "-o", "w1.json", cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    events = json.loads((tmp_path / "w1.json").read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    calls = [event for event in events if event["ph"] in ("X", "B")]
    assert len({event["tid"] for event in calls}) == 1
    counted = collections.Counter(event["name"] for event in calls)
    assert counted == {name: count for name, count in enters(tmp_path / "exp", "worker-1").items()}
    missing = tracetop("convert", "exp", "--to", "chrome", "--thread", "worker-9", "-o", "w9.json", cwd=tmp_path)
    assert missing.returncode == 2 and not (tmp_path / "w9.json").exists()
    assert missing.stderr.startswith("tracetop: error: no thread worker-9 in exp")


def chrome_calls(path):
    events = json.loads(path.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    return [event for event in events if event["ph"] == "X"]


def test_a_time_range(tmp_path):
    """--from/--until keep the calls that overlap the range, each cut to it: the same calls as the whole trace
    has there, and the calls running at its edges begin and end exactly on them."""
    completed = tracetop("--output", "exp", WORKLOADS / "threads.py", "20000", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    whole = tracetop("convert", "exp", "--to", "chrome", "-o", "whole.json", cwd=tmp_path)
    assert whole.returncode == 0, whole.stderr
    calls = chrome_calls(tmp_path / "whole.json")
    begin, end = min(call["ts"] for call in calls), max(call["ts"] + call["dur"] for call in calls)
    start, stop = begin + (end - begin) * 0.4, begin + (end - begin) * 0.6  # µs since the epoch
    ranged = tracetop(
        "convert",
        "exp",
        "--to",
        "chrome",
        "-o",
        "range.json",
        "--from",
        f"{start:.3f}us",
        "--until",
        f"{stop:.3f}us",
        cwd=tmp_path,
    )
    assert ranged.returncode == 0, ranged.stderr
    inside = chrome_calls(tmp_path / "range.json")
    read = int(
        re.fullmatch(r"tracetop: wrote range.json \((\d+) events read, [\d.]+ \w+\)", ranged.stderr.strip()).group(1)
    )
    assert read > 2 * len(inside)  # the trace up to the range's end is read: more than the calls written
    expected = collections.Counter(
        (call["name"], call["tid"]) for call in calls if call["ts"] < stop and call["ts"] + call["dur"] > start
    )
    assert collections.Counter((call["name"], call["tid"]) for call in inside) == expected
    assert all(start - 0.001 <= call["ts"] and call["ts"] + call["dur"] <= stop + 0.001 for call in inside)
    assert any(call["ts"] == pytest.approx(start, abs=0.002) and call["name"] == "__main__:run" for call in inside)
    assert any(call["ts"] + call["dur"] == pytest.approx(stop, abs=0.002) for call in inside)
    # Every format reads through the same cursors: the profile of the range has its calls too.
    collapsed = tracetop(
        "convert",
        "exp",
        "--to",
        "collapsed",
        "-o",
        "range.txt",
        "--from",
        f"{start:.3f}us",
        "--until",
        f"{stop:.3f}us",
        cwd=tmp_path,
    )
    assert collapsed.returncode == 0 and "collatz_len" in (tmp_path / "range.txt").read_text()
    backwards = tracetop("convert", "exp", "--to", "chrome", "--from", "2s", "--until", "1s", cwd=tmp_path)
    assert backwards.returncode == 2 and "--until must come after --from" in backwards.stderr


def test_a_long_conversion_says_how_it_goes(tmp_path):
    """With progress=0 (any conversion is long), lines on stderr say how much of the trace was read."""
    from helpers import python

    completed = tracetop("--output", "exp", WORKLOADS / "threads.py", "20000", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    run = f"import {reader.__name__} as reader; reader.convert('exp', 'collapsed', 'out.txt', progress={{}})"
    quiet = python("-c", run.format("None"), cwd=tmp_path)
    assert quiet.returncode == 0 and quiet.stderr == ""
    said = python("-c", run.format("0"), cwd=tmp_path)
    assert said.returncode == 0, said.stderr
    assert re.fullmatch(r"(tracetop: converting exp to collapsed: \d+% of the trace read \(\d+ s\)\n)+", said.stderr), (
        said.stderr
    )


def folded(path):
    """Exclusive ns per stack of a collapsed-stacks file."""
    return {stack: int(count) for stack, count in (line.rsplit(" ", 1) for line in path.read_text().splitlines())}


def test_a_filter_leaves_out_the_calls_it_excludes(experiment, tmp_path):
    """--filter drops the calls of the regions it excludes, as a measurement with the filter would not have
    recorded them: what they called stays, under their caller, and their own time goes to that caller."""
    (tmp_path / "no-work.filter").write_text(
        "SCOREP_REGION_NAMES_BEGIN\n  EXCLUDE __main__:work\nSCOREP_REGION_NAMES_END\n"
    )
    whole = convert(experiment, "collapsed", "-o", tmp_path / "whole.txt")
    assert whole.returncode == 0, whole.stderr
    filtered = convert(
        experiment, "collapsed", "-o", tmp_path / "filtered.txt", "--filter", tmp_path / "no-work.filter"
    )
    assert filtered.returncode == 0, filtered.stderr
    before, after = folded(tmp_path / "whole.txt"), folded(tmp_path / "filtered.txt")
    assert any("__main__:work" in stack for stack in before)
    assert not any("__main__:work" in stack for stack in after)
    expected = collections.Counter()
    for stack, ns in before.items():
        expected[";".join(frame for frame in stack.split(";") if frame != "__main__:work")] += ns
    assert after == dict(expected)
    # The same through another converter: every call of fib is there, none of work.
    convert(experiment, "chrome", "-o", tmp_path / "whole.json")
    convert(experiment, "chrome", "-o", tmp_path / "filtered.json", "--filter", tmp_path / "no-work.filter")
    names = collections.Counter(call["name"] for call in chrome_calls(tmp_path / "whole.json"))
    kept = collections.Counter(call["name"] for call in chrome_calls(tmp_path / "filtered.json"))
    assert names["__main__:work"] > 0 and kept == names - collections.Counter({"__main__:work": names["__main__:work"]})


def test_a_bad_filter_file_is_one_line(experiment, tmp_path):
    (tmp_path / "bad.filter").write_text("SCOREP_REGION_NAMES_BEGIN\n  INCLUDE\n  EXCLUDE __main__:work\n")
    completed = tracetop(
        "convert",
        experiment,
        "--to",
        "chrome",
        "-o",
        tmp_path / "out.json",
        "--filter",
        tmp_path / "bad.filter",
        cwd=tmp_path,
    )
    assert completed.returncode == 2 and completed.stdout == ""
    assert (
        completed.stderr.startswith(f"tracetop: error: {tmp_path / 'bad.filter'}:")
        and completed.stderr.count("\n") == 1
    ), completed.stderr
    assert not (tmp_path / "out.json").exists()
    missing = tracetop(
        "convert",
        experiment,
        "--to",
        "chrome",
        "-o",
        tmp_path / "out.json",
        "--filter",
        tmp_path / "none.filter",
        cwd=tmp_path,
    )
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "none.filter" in missing.stderr

"""`tracetop score`: sizes per region and group, a suggested filter that drops the cheap frequent calls and
keeps the expensive ones, and a prediction of the filtered trace's size within 10 % of what a run with that
filter writes."""

import os
import re

import pytest

from helpers import PROGRAMS, enters, python, reader, tracetop

PROGRAM = PROGRAMS / "score_subject.py"


def trace_bytes(experiment):
    return sum(
        os.path.getsize(os.path.join(root, name)) for root, _, names in os.walk(experiment / "trace") for name in names
    )


def run(tmp_path, name, *options):
    completed = tracetop("--output", name, *options, PROGRAM, "16", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == python(PROGRAM, "16", cwd=tmp_path).stdout
    return tmp_path / name


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    return run(tmp_path_factory.mktemp("score"), "exp")


def score(experiment, *options):
    completed = tracetop("score", experiment, *options, cwd=experiment.parent)
    assert completed.returncode == 0, completed.stderr
    return completed


def table(stdout):
    """The region rows: {region: (flt, type, native bytes, otf2 bytes, visits, time/visit us)}."""
    rows = {}
    for line in stdout.split("Regions by native bytes")[1].splitlines()[2:]:
        match = re.match(r"^\s*(-?)\s+(\w+)\s+(\d+)\s+(\d+)\s+(\d+)\s+\S+\s+\S+\s+(\S+)\s+(.+)$", line)
        if match:
            flt, kind, native, otf2, visits, per_visit, name = match.groups()
            rows[name] = (flt, kind, int(native), int(otf2), int(visits), float(per_visit))
    return rows


def test_report(experiment):
    stdout = score(experiment, "--top", "1000").stdout
    rows = table(stdout)
    counts = enters(experiment)
    assert {name: row[4] for name, row in rows.items()} == dict(counts)
    assert rows["__main__:fib"][1] == "PY" and rows["math:sqrt"][1] == "C"
    # An ENTER and a LEAVE of at least two bytes each, per visit.
    assert rows["__main__:fib"][2] >= 4 * rows["__main__:fib"][4]
    groups = dict(
        (kind, int(native))
        for kind, native in re.findall(r"^\s+(ALL|PY|C|USR|GC|EVT)\s+(\d+)\s", stdout.split("Regions")[0], re.M)
    )
    # Garbage collections are a group of their own, when the run had any.
    assert groups["ALL"] == groups["PY"] + groups["C"] + groups.get("GC", 0) + groups["EVT"]
    on_disk = re.search(r"native trace:\s+(.*) \(on disk: (.*)\)", stdout)
    assert on_disk.group(1) == on_disk.group(2)


def test_suggested_filter_predicts_the_filtered_trace(experiment, tmp_path):
    # A visit of fib or sqrt takes a few microseconds, one of slow two milliseconds: 500 us per visit parts them
    # however a loaded machine stretches the cheap ones.
    completed = score(experiment, "--suggest-filter", tmp_path / "suggested.filter", "--max-time-per-visit", "500")
    text = (tmp_path / "suggested.filter").read_text()
    excluded = set(re.findall(r"^    (\S+)  #", text, re.M))
    assert {"__main__:fib", "math:sqrt"} <= excluded
    assert "__main__:slow" not in excluded and "time:sleep" not in excluded
    assert re.search(r"^With the suggested filter: native trace .* \(\d+\.\d % of it\)", completed.stdout, re.M)
    rows = table(completed.stdout)
    assert rows["__main__:fib"][0] == "-" and rows["__main__:slow"][0] == ""

    filtered = run(tmp_path, "filtered", "--filter", tmp_path / "suggested.filter")
    assert not excluded & set(enters(filtered))
    result = _score(experiment, tmp_path / "suggested.filter")
    actual = trace_bytes(filtered)
    assert abs(result["native_bytes"] - actual) <= 0.10 * actual, (result["native_bytes"], actual)
    assert result["native_bytes"] < 0.5 * trace_bytes(experiment)


def test_filter_of_the_user(experiment, tmp_path):
    (tmp_path / "f.filter").write_text("SCOREP_REGION_NAMES_BEGIN EXCLUDE __main__:fib SCOREP_REGION_NAMES_END\n")
    rows = table(score(experiment, "--filter", tmp_path / "f.filter", "--top", "1000").stdout)
    assert [name for name, row in rows.items() if row[0] == "-"] == ["__main__:fib"]
    filtered = run(tmp_path, "filtered", "--filter", tmp_path / "f.filter")
    predicted = _score(experiment, tmp_path / "f.filter")["native_bytes"]
    actual = trace_bytes(filtered)
    assert abs(predicted - actual) <= 0.10 * actual, (predicted, actual)


def test_unfiltered_model_matches_the_trace(experiment):
    result = _score(experiment, None)
    assert abs(result["recorded_native_bytes"] - result["trace_bytes"]) <= 0.01 * result["trace_bytes"]
    assert result["trace_bytes"] == trace_bytes(experiment)


def _score(experiment, filter_file):
    return reader.score(str(experiment), filter=None if filter_file is None else str(filter_file))


def test_bad_input(experiment, tmp_path):
    (tmp_path / "bad.filter").write_text("SCOREP_REGION_NAMES_BEGIN\nfoo\n")
    completed = tracetop("score", experiment, "--filter", tmp_path / "bad.filter", cwd=tmp_path)
    assert completed.returncode == 2
    assert (
        completed.stderr
        == f"tracetop: error: {tmp_path / 'bad.filter'}:2: a pattern before INCLUDE or EXCLUDE: 'foo'\n"
    )
    completed = tracetop("score", experiment, "--suggest-filter", tmp_path / "no" / "x.filter", cwd=tmp_path)
    assert completed.returncode == 2
    assert (
        completed.stderr == f"tracetop: error: cannot write {tmp_path / 'no' / 'x.filter'}: No such file or directory\n"
    )
    completed = tracetop("score", tmp_path / "nothing", cwd=tmp_path)
    assert completed.returncode == 2 and len(completed.stderr.splitlines()) == 1


def test_a_long_scoring_says_how_it_goes(experiment):
    """With progress=0 (any scoring is long), lines on stderr say how much of the trace was read; without,
    nothing (as `convert`'s)."""
    run = f"import {reader.__name__} as reader; reader.score({str(experiment)!r}, progress={{}})"
    quiet = python("-c", run.format("None"), cwd=experiment.parent)
    assert quiet.returncode == 0 and quiet.stderr == ""
    said = python("-c", run.format("0"), cwd=experiment.parent)
    assert said.returncode == 0, said.stderr
    assert re.fullmatch(
        rf"(tracetop: scoring {re.escape(str(experiment))}: \d+% of the trace read \(\d+ s\)\n)+", said.stderr
    ), said.stderr

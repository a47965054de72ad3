"""OTF2 through libotf2, read back by otf2-print and otf2-marker (Debian's otf2-tools): the ENTER events per
region, parameters, metrics and markers match the native trace; `run --format otf2`; replacing; bad output."""

import collections
import re
import shutil
import subprocess

import pytest

from convert_helpers import convert, measure, native_calls
from helpers import tracetop

pytestmark = pytest.mark.skipif(shutil.which("otf2-print") is None, reason="otf2-print (otf2-tools) is missing")

EVENT = re.compile(r"^(\w+)\s+(\d+)\s+(\d+)\s+(.*)$")


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    experiment = measure(tmp_path_factory.mktemp("otf2"))
    convert(experiment, "otf2")
    return experiment


def otf2_print(*arguments):
    completed = subprocess.run(["otf2-print", *map(str, arguments)], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def events(anchor):
    """(kind, location, time, attributes) of every event otf2-print shows."""
    for line in otf2_print(anchor).splitlines():
        match = EVENT.match(line)
        if match and match.group(1).isupper():
            yield match.group(1), int(match.group(2)), int(match.group(3)), match.group(4)


def test_enters_per_region(experiment):
    calls, counters, marks = native_calls(experiment)
    shown = list(events(experiment / "traces.otf2"))
    enters = collections.Counter(re.match(r'Region: "(.*)" <\d+>', a).group(1) for k, _, _, a in shown if k == "ENTER")
    assert enters == collections.Counter(call.name for call in calls)
    leaves = collections.Counter(re.match(r'Region: "(.*)" <\d+>', a).group(1) for k, _, _, a in shown if k == "LEAVE")
    assert leaves == enters
    assert sorted(t for k, _, t, _ in shown if k == "ENTER") == sorted(call.begin for call in calls)
    metrics = sorted((t, float(re.search(r"DOUBLE; ([^)]+)\)", a).group(1))) for k, _, t, a in shown if k == "METRIC")
    assert metrics == sorted((time, value) for _, _, _, time, value in counters)
    parameters = [a for k, _, _, a in shown if k.startswith("PARAMETER_")]
    assert sum('Parameter: "n" <' in a and "Value: -7" in a for a in parameters) == 1
    assert sum('Parameter: "size" <' in a and "Value: 9" in a for a in parameters) == 1
    assert sum('"mode"' in a for a in parameters) == 2


def test_definitions(experiment):
    definitions = otf2_print("-G", experiment / "traces.otf2")
    locations = re.findall(
        r'^LOCATION\s+\d+\s+Name: "([^"]*)" <\d+>, Type: CPU_THREAD, # Events: (\d+)', definitions, re.M
    )
    assert sorted(name for name, _ in locations) == ["MainThread", "worker"]
    assert sum(int(count) for _, count in locations) == len(list(events(experiment / "traces.otf2")))
    assert len(re.findall(r"^LOCATION_GROUP .* Type: PROCESS", definitions, re.M)) == 1
    fib = re.search(r'^REGION .*Name: "__main__:fib".*$', definitions, re.M).group(0)
    assert "Role: FUNCTION" in fib and "Paradigm: USER" in fib and 'convert_subject.py"' in fib and "Begin: 8" in fib
    clock = re.search(r"^CLOCK_PROPERTIES .*$", definitions, re.M).group(0)
    assert "Ticks per Seconds: 1000000000, Global Offset: 0" in clock and "Date: 20" in clock


def test_markers(experiment):
    completed = subprocess.run(["otf2-marker", str(experiment / "traces.otf2")], capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr
    _, _, marks = native_calls(experiment)
    shown = re.findall(
        r'^MARKER\s+Time: (\d+), Duration 0, Scope: LOCATION:\d+, Text: "checkpoint"', completed.stdout, re.M
    )
    assert sorted(map(int, shown)) == sorted(time for _, _, _, time in marks)


def test_convert_again_replaces(experiment, tmp_path):
    convert(experiment, "otf2", "-o", tmp_path / "copy.otf2")
    convert(experiment, "otf2", "-o", tmp_path / "copy.otf2")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy", "copy.def", "copy.marker", "copy.otf2"]
    assert otf2_print(tmp_path / "copy.otf2") == otf2_print(experiment / "traces.otf2")


def test_run_format_otf2(tmp_path):
    experiment = measure(tmp_path, "--format=otf2")
    assert list(events(experiment / "traces.otf2"))
    assert "`traces.otf2`" in (experiment / "MANIFEST.md").read_text()


@pytest.mark.parametrize(
    "output, message",
    [
        ("trace.json", "an OTF2 archive is named by its anchor file, NAME.otf2: not trace.json"),
        ("missing/x.otf2", "cannot write missing/x.otf2: No such file or directory"),
    ],
)
def test_bad_output(experiment, output, message):
    completed = tracetop("convert", experiment, "--to", "otf2", "-o", output, cwd=experiment.parent)
    assert completed.returncode == 2
    assert completed.stderr == f"tracetop: error: {message}\n"


@pytest.mark.parametrize("earlier_anchor", [False, True])
def test_an_archive_named_after_the_experiment_never_touches_it(experiment, tmp_path, earlier_anchor):
    """`convert EXP -o EXP.otf2` would make EXP the archive's folder of locations: one line, exit 2, and the
    experiment as it was, whether or not an anchor of that name is there already (which replacing an earlier
    archive would have removed its parts for)."""
    copy = tmp_path / "bx"
    shutil.copytree(experiment, copy)
    before = sorted(str(path.relative_to(copy)) for path in copy.rglob("*"))
    if earlier_anchor:
        (tmp_path / "bx.otf2").write_text("")
    completed = tracetop("convert", "bx", "--to", "otf2", "-o", "bx.otf2", cwd=tmp_path)
    assert completed.returncode == 2, completed.stderr
    assert completed.stderr == (
        "tracetop: error: cannot write bx.otf2: the archive's ./bx is there already and is not an earlier "
        "archive's; give -o another name\n"
    )
    assert sorted(str(path.relative_to(copy)) for path in copy.rglob("*")) == before
    assert tracetop("summary", "bx", cwd=tmp_path).returncode == 0


def test_large_location_is_flushed_as_it_is_written(tmp_path):
    """Past a few MiB of events libotf2 must flush a location's buffer (the converter's memory callbacks make it):
    400,000 events in one location still read back whole."""
    (tmp_path / "loop.py").write_text(
        "def tiny(i):\n    return i\n\n\nfor i in range(100000):\n    tiny(i)\n    abs(i)\n"
    )
    completed = tracetop("--output", "exp", "loop.py", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    convert(tmp_path / "exp", "otf2")
    assert sum(f.stat().st_size for f in (tmp_path / "exp" / "traces").glob("*.evt")) > 4 << 20  # 4 chunks of 1 MiB
    enters = collections.Counter()
    for line in otf2_print(tmp_path / "exp" / "traces.otf2").splitlines():
        if line.startswith("ENTER "):
            enters[re.search(r'Region: "(.*)" <\d+>', line).group(1)] += 1
    assert enters["__main__:tiny"] == 100000 and enters["builtins:abs"] == 100000

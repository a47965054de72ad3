"""`--keep SIZE`: a ring of each process's most recent SIZE of events on disk (format.h: a ring). A busy program
of four threads with deep stacks writes many times SIZE; its event files take SIZE and a chunk per stream of
blocks at most, the profile counts what the program says it called, the streams read from their first chunk kept
begin with the calls open there and are well nested, and every reader (summary, convert, the viewer's index, score)
reads them. Through TRACETOP_KEEP and with --live too; a run without --keep writes the format it did; a bad SIZE is
refused; --no-trace leaves no trace behind, with or without --live."""

import json
import re
import struct

import pytest

from helpers import PROGRAMS, assert_well_nested, environment, reader, streams, tracetop
from trace_files import CHUNK_HEADER, FILE_HEADER, stream_files

PROGRAM = PROGRAMS / "keep_busy.py"
KEEP = 2 << 20
CHUNK = 64 << 10  # TT_CHUNK_PAYLOAD_SIZE
ROUNDS = 60000  # some 14 MiB of events: 7 times KEEP
VERSION_RING, VERSION_PLAIN = 6, 5  # TT_FORMAT_VERSION_RING, TT_FORMAT_VERSION_PLAIN


def run(directory, *options, rounds=ROUNDS, env=None):
    completed = tracetop("run", "--output", "exp", *options, PROGRAM, str(rounds), cwd=directory, env=env)
    assert completed.returncode == 0, completed.stderr
    counts = dict(item.split("=") for item in completed.stdout.split()[1:])
    return directory / "exp", {name: int(count) for name, count in counts.items()}, completed


@pytest.fixture(scope="module")
def kept(tmp_path_factory):
    return run(tmp_path_factory.mktemp("keep"), "--keep", "2M")


def blocks(paths):
    return sum(path.stat().st_blocks * 512 for path in paths)


def version(path):
    return struct.unpack_from("<I", path.read_bytes(), 8)[0]


def first_seq(path):
    """The seq of a stream file's first chunk, past the zeros of the chunks dropped."""
    data = path.read_bytes()
    at = FILE_HEADER
    while at < len(data) and data[at] == 0:
        at += 1
    return struct.unpack_from("<I", data, at + 4)[0]


def test_the_event_files_take_what_is_kept(kept):
    experiment, _, completed = kept
    files = stream_files(experiment)
    assert sum(path.stat().st_size for path in files) > 4 * KEEP, "the run wrote too little to drop anything"
    defs = next(experiment.glob("trace/*/defs.tts"))
    assert blocks([*files, defs]) <= KEEP + len(files) * (CHUNK + CHUNK_HEADER)
    assert {version(path) for path in [*files, defs]} == {VERSION_RING}
    assert any(first_seq(path) > 0 for path in files)
    assert "warning" not in completed.stderr


def test_summary_counts_the_whole_run(kept):
    experiment, counts, _ = kept
    completed = tracetop("summary", experiment, cwd=experiment.parent)
    assert completed.returncode == 0 and completed.stderr == "", completed.stderr
    dropped = re.search(
        r"^  dropped by --keep 2\.0 MiB: the oldest (\d+) chunks of events, up to the first", completed.stdout, re.M
    )
    assert dropped and int(dropped.group(1)) == sum(first_seq(path) for path in stream_files(experiment))
    visits = {}
    for line in completed.stdout.splitlines():
        fields = line.split()
        if len(fields) >= 5 and fields[4] in ("__main__:work", "__main__:descend", "__main__:leaf"):
            visits[fields[4].partition(":")[2]] = int(fields[3])
    assert visits == counts
    manifest = (experiment / "MANIFEST.md").read_text()
    assert f"- dropped by --keep: the oldest {dropped.group(1)} chunks of events" in manifest
    assert f"TRACETOP_KEEP={KEEP}" in (experiment / "config.txt").read_text()


def test_streams_begin_with_the_calls_open(kept):
    experiment, _, _ = kept
    opened_in = 0
    for _process, thread, events, state, problem in streams(experiment):
        assert (state, problem) == ("complete", None), thread["name"]
        assert_well_nested(events)
        opened = [event for event in events if event[0] == "enter" and event[-1] is True]
        assert events[: len(opened)] == opened  # where they are: first, and nowhere else (no gap here)
        if opened:
            # A worker's first chunk kept begins inside work(), in its chain of descend() calls, all open at one time.
            names = [event[2] for event in opened]
            assert names[:2] == ["threading:Thread.run", "__main__:work"], names
            assert set(names[2:]) <= {"__main__:descend", "__main__:leaf"} and len({event[1] for event in opened}) == 1
            opened_in += 1
    assert opened_in >= 2


def test_convert_and_index_read_the_ring(kept, tmp_path):
    experiment, counts, _ = kept
    out = tmp_path / "t.json"
    completed = tracetop("convert", experiment, "--to", "chrome", "-o", out, cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    calls = [e for e in json.loads(out.read_text())["traceEvents"] if e["ph"] == "X"]
    leaves = sum(1 for e in calls if e["name"] == "__main__:leaf")
    assert 0 < leaves < counts["leaf"]  # the oldest were dropped
    index = reader.Index(str(experiment))
    assert index.problems == [] and len(index.lanes) == 5
    score = tracetop("score", experiment, cwd=tmp_path)
    assert score.returncode == 0, score.stderr


def test_through_the_environment_and_live(tmp_path):
    experiment, counts, _ = run(tmp_path, "--live", "--objects", env=environment(TRACETOP_KEEP="1M"))
    files = stream_files(experiment)
    assert sum(path.stat().st_size for path in files) > 4 << 20
    assert blocks([*files, *experiment.glob("trace/*/defs.tts")]) <= (1 << 20) + len(files) * (CHUNK + CHUNK_HEADER)
    summary = tracetop("summary", experiment, cwd=tmp_path)
    assert summary.returncode == 0 and "dropped by --keep 1.0 MiB" in summary.stdout, summary.stderr
    assert f"{counts['leaf']}  __main__:leaf" in summary.stdout


def test_without_keep_the_format_is_as_it_was(tmp_path):
    experiment, _, _ = run(tmp_path, rounds=2000)
    files = stream_files(experiment)
    assert {version(path) for path in files} == {VERSION_PLAIN}
    assert all(first_seq(path) == 0 for path in files)
    assert "KEEP=0" in (experiment / "config.txt").read_text()


@pytest.mark.parametrize(
    "options, env",
    [
        (["--keep", "12x"], {}),
        (["--keep", "512k"], {}),
        ([], {"TRACETOP_KEEP": "lots"}),
    ],
)
def test_a_bad_size_is_refused(options, env, tmp_path):
    completed = tracetop("run", *options, "-c", "pass", cwd=tmp_path, env=environment(**env))
    assert completed.returncode == 2
    assert "Traceback" not in completed.stderr
    last = completed.stderr.splitlines()[-1]
    assert ("--keep" in last or "TRACETOP_KEEP" in last) and ("size" in last or "minimum" in last), last
    if env:
        assert len(completed.stderr.splitlines()) == 1
    assert not (tmp_path / "exp").exists()


@pytest.mark.parametrize("options", [[], ["--live"], ["--keep", "1M"]])
def test_no_trace_leaves_only_the_profile(options, tmp_path):
    experiment, counts, _ = run(tmp_path, "--no-trace", *options, rounds=2000)
    assert not (experiment / "trace").exists() and not (experiment / "view.idx").exists()
    assert f"{counts['leaf']}  __main__:leaf" in (experiment / "profile.txt").read_text()

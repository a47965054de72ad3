"""Event chunks the writer compresses (src/core/writer.c: only to pay back what a trace holds besides its
records, past 0.05 byte per record): a program of many call paths after many imports has some, and every reader
reads them as the records they are: the cursor (complete, well nested, every event), the profile from the trees
and from the records read back, a conversion, `tracetop score`'s model of the trace on disk and convert's
estimate of a JSON file from the records as decoded, not as stored."""

import json

from tracetop.commands.convert import JSON_BYTES_PER_TRACE_BYTE, json_too_large
from tracetop.sizes import format_size

from helpers import PROGRAMS, assert_complete, enters, reader, tracetop
from trace_files import CODEC_ZSTD, assert_trees_read_back_the_same, record_chunks, stream_files


def trace_bytes(experiment):
    return sum(path.stat().st_size for path in (experiment / "trace").rglob("*.tts"))


def test_compressed_events_are_read_as_their_records(tmp_path):
    completed = tracetop("run", "--output", "exp", PROGRAMS / "many_paths.py", "3", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    experiment = tmp_path / "exp"
    [path] = stream_files(experiment)
    events = record_chunks(path)
    compressed = [chunk for chunk in events if chunk.codec == CODEC_ZSTD]
    assert compressed and all(chunk.stored < chunk.raw for chunk in compressed)

    assert_complete(experiment)
    trace = reader.Trace(str(experiment))
    [process] = trace.processes
    read, state, _ = trace.read_stream(0, 0)
    assert state == "complete" and len(read) == process["events"]
    assert_trees_read_back_the_same(tmp_path, experiment)

    calls = sum(enters(experiment).values())
    written = tracetop("convert", "exp", "--to", "chrome", "-o", "calls.json", cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    chrome = json.loads((tmp_path / "calls.json").read_text())
    chrome = chrome["traceEvents"] if isinstance(chrome, dict) else chrome
    assert sum(event["ph"] == "X" for event in chrome) == calls

    # score's model of the trace as recorded is the trace on disk, compressed chunks and all.
    score = reader.score(str(experiment))
    assert score["trace_bytes"] == trace_bytes(experiment)
    assert abs(score["recorded_native_bytes"] - score["trace_bytes"]) <= 0.01 * score["trace_bytes"]
    # convert's estimate takes the records as decoded: what the JSON file is made from.
    raw = sum(chunk.raw for chunk in events)
    assert trace.record_bytes(0, 0) == raw > sum(chunk.stored for chunk in events)
    warning = json_too_large(str(experiment), "chrome", limit=1)
    assert f"about {format_size(raw * JSON_BYTES_PER_TRACE_BYTE['chrome'])}," in warning


def test_a_small_trace_is_not_compressed(tmp_path):
    """A trace a few KiB over its allowance stays as it is (fib's records would compress to a third)."""
    completed = tracetop("run", "--output", "exp", PROGRAMS / "score_subject.py", "16", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    for path in stream_files(tmp_path / "exp"):
        assert all(chunk.codec != CODEC_ZSTD for chunk in record_chunks(path))

"""Event chunks the writer compresses (src/record/writer.c: only to pay back what a trace holds besides its
records, past 0.05 byte per record): a program of many call paths after many imports has some, and every reader
reads them as the records they are: the cursor (complete, well nested, every event), the profile from the trees
and from the records read back, a conversion, `tracetop score`'s model of the trace on disk and convert's
estimate of a JSON file from the records as decoded, not as stored."""
import json
import struct

from helpers import PROGRAMS, assert_complete, enters, tracetop
from test_calltree import assert_trees_read_back_the_same, stream_files

from tracetop import _reader
from tracetop.commands.convert import JSON_BYTES_PER_TRACE_BYTE, json_too_large
from tracetop.sizes import format_size

CHUNK_HEADER = 32
CODEC_ZSTD = 1
TREE = 2  # TT_CHUNK_TREE


def chunk_headers(path):
    """(stored_size, raw_size, codec, flags) of each chunk of a trace file, as format.h gives its header."""
    data = path.read_bytes()
    offset, headers = 16, []
    while offset + CHUNK_HEADER <= len(data):
        stored, raw, codec, flags = struct.unpack_from("<IIBB", data, offset + 16)
        headers.append((stored, raw, codec, flags))
        offset += CHUNK_HEADER + stored
    return headers


def trace_bytes(experiment):
    return sum(path.stat().st_size for path in (experiment / "trace").rglob("*.tts"))


def test_compressed_events_are_read_as_their_records(tmp_path):
    completed = tracetop("run", "--output", "exp", PROGRAMS / "many_paths.py", "3", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    experiment = tmp_path / "exp"
    [path] = stream_files(experiment)
    events = [h for h in chunk_headers(path) if not h[3] & TREE]
    compressed = [h for h in events if h[2] == CODEC_ZSTD]
    assert compressed and all(stored < raw for stored, raw, _, _ in compressed)

    assert_complete(experiment)
    trace = _reader.Trace(str(experiment))
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
    score = _reader.score(str(experiment))
    assert score["trace_bytes"] == trace_bytes(experiment)
    assert abs(score["recorded_native_bytes"] - score["trace_bytes"]) <= 0.01 * score["trace_bytes"]
    # convert's estimate takes the records as decoded: what the JSON file is made from.
    raw = sum(raw for _, raw, _, _ in events)
    assert trace.record_bytes(0, 0) == raw > sum(stored for stored, _, _, _ in events)
    warning = json_too_large(str(experiment), "chrome", limit=1)
    assert f"about {format_size(raw * JSON_BYTES_PER_TRACE_BYTE['chrome'])}," in warning


def test_a_small_trace_is_not_compressed(tmp_path):
    """A trace a few KiB over its allowance stays as it is (fib's records would compress to a third)."""
    completed = tracetop("run", "--output", "exp", PROGRAMS / "score_subject.py", "16", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    for path in stream_files(tmp_path / "exp"):
        assert all(codec != CODEC_ZSTD for _, _, codec, flags in chunk_headers(path) if not flags & TREE)

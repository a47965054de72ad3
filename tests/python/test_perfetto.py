"""Perfetto protobuf, decoded with the protos that ship in the `perfetto` package and replayed as Perfetto
does (track descriptors, interned names per sequence, slices from BEGIN/END): the slices, their args, counters
and marks equal the native trace's."""

import pytest

from convert_helpers import convert, measure, native_calls

trace_pb2 = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")
TrackEvent = trace_pb2.TrackEvent


def replay(path):
    """(slices, counters, marks) as a Perfetto importer sees them."""
    trace = trace_pb2.Trace()
    trace.ParseFromString(path.read_bytes())
    processes, threads, counter_tracks = {}, {}, {}
    names, stacks = {}, {}  # per sequence: iid -> name; open slices
    slices, counters, marks = [], [], []
    for packet in trace.packet:
        if packet.HasField("track_descriptor"):
            descriptor = packet.track_descriptor
            if descriptor.HasField("process"):
                processes[descriptor.uuid] = descriptor.process.pid
            elif descriptor.HasField("thread"):
                assert processes[descriptor.parent_uuid] == descriptor.thread.pid
                threads[descriptor.uuid] = (descriptor.thread.pid, descriptor.thread.tid, descriptor.thread.thread_name)
            elif descriptor.HasField("counter"):
                counter_tracks[descriptor.uuid] = (processes[descriptor.parent_uuid], descriptor.name)
            continue
        sequence = packet.trusted_packet_sequence_id
        if packet.sequence_flags & trace_pb2.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED:
            names[sequence] = {}
        assert packet.sequence_flags & trace_pb2.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
        for entry in packet.interned_data.event_names:
            names[sequence][entry.iid] = entry.name
        event = packet.track_event
        name = names[sequence][event.name_iid] if event.name_iid else event.name
        if event.type == TrackEvent.TYPE_COUNTER:
            pid, counter = counter_tracks[event.track_uuid]
            counters.append((pid, counter, packet.timestamp, event.double_counter_value))
            continue
        pid, tid, _ = threads[event.track_uuid]
        stack = stacks.setdefault(event.track_uuid, [])
        if event.type == TrackEvent.TYPE_SLICE_BEGIN:
            stack.append((name, packet.timestamp))
        elif event.type == TrackEvent.TYPE_SLICE_END:
            begun, begin = stack.pop()
            args = {}
            for annotation in event.debug_annotations:
                args[annotation.name] = getattr(annotation, annotation.WhichOneof("value"))
            slices.append((pid, tid, begun, begin, packet.timestamp, args))
        elif event.type == TrackEvent.TYPE_INSTANT and "mark" in event.categories:
            marks.append((pid, tid, name, packet.timestamp))
    assert not any(stacks.values())
    return slices, counters, marks, threads


def test_perfetto(tmp_path):
    experiment = measure(tmp_path)
    convert(experiment, "perfetto")
    slices, counters, marks, threads = replay(experiment / "trace.perfetto-trace")
    calls, native_counters, native_marks = native_calls(experiment)
    assert sorted(slices, key=repr) == sorted(
        ((c.pid, c.tid, c.name, c.begin, c.end, c.params) for c in calls), key=repr
    )
    assert sorted(counters) == sorted((pid, name, time, value) for pid, _, name, time, value in native_counters)
    assert sorted(marks) == sorted(native_marks)
    assert sorted(name for _, _, name in threads.values()) == ["MainThread", "worker"]

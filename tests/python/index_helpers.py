"""The viewer's level-of-detail index (src/core/lod.h) as its Python type gives it: the packed arrays of
Index.spans, tree, samples and raw_spans decoded into Python values."""

import struct
from array import array


def decode_spans(data):
    count, level = struct.unpack_from("II", data)
    doubles = array("d", data[8 : 8 + 16 * count])
    ints = array("I", data[8 + 16 * count :])
    start, end = doubles[:count], doubles[count:]
    region, calls, lane, depth = (ints[i * count : (i + 1) * count] for i in range(4))
    return level, [
        dict(start=int(start[i]), end=int(end[i]), region=region[i], calls=calls[i], lane=lane[i], depth=depth[i])
        for i in range(count)
    ]


def decode_tree(data):
    count, _ = struct.unpack_from("II", data)
    return [
        dict(
            zip(("parent", "region", "visits", "inclusive", "exclusive"), struct.unpack_from("IIddd", data, 8 + 32 * i))
        )
        for i in range(count)
    ]


def decode_samples(data):
    count, level = struct.unpack_from("II", data)
    doubles = array("d", data[8 : 8 + 32 * count])
    tracks = array("I", data[8 + 32 * count : 8 + 36 * count])
    return level, [
        dict(
            time=int(doubles[i]),
            min=doubles[count + i],
            max=doubles[2 * count + i],
            last=doubles[3 * count + i],
            track=tracks[i],
        )
        for i in range(count)
    ]


def raw_spans(index, lane, depth, level):
    data = index.raw_spans(lane, depth, level)
    return [struct.unpack_from("QQII", data, offset) for offset in range(0, len(data), 24)]


def all_lanes(index):
    return list(range(len(index.lanes)))

"""An experiment's stream files as format.h lays them out, read byte by byte: a 16-byte file header, then
chunks of a 32-byte header and a payload, the call tree's chunks (TREE) behind the records'. And the check
that a profile made from the trees is the one that reading the records back gives."""

import collections
import shutil
import struct
import subprocess

from helpers import tracetop

FILE_HEADER = 16
CHUNK_HEADER = 32
TREE = 2  # TT_CHUNK_TREE
CODEC_ZSTD = 1  # TT_CODEC_ZSTD
DEF_TREE = 20  # TT_DEF_TREE

# A chunk's header: the payload's offset is offset + CHUNK_HEADER, its length `stored`; `raw` once decoded.
Chunk = collections.namedtuple("Chunk", "offset stored raw codec flags")


def stream_files(experiment):
    return sorted(p for p in (experiment / "trace").glob("*/*.tts") if p.name != "defs.tts")


def chunks(path):
    """Every chunk of a stream file, from its header (u32 stored_size at 16, u32 raw_size, u8 codec, u8 flags)."""
    data = path.read_bytes()
    offset, found = FILE_HEADER, []
    while offset + CHUNK_HEADER <= len(data):
        stored, raw, codec, flags = struct.unpack_from("<IIBB", data, offset + 16)
        found.append(Chunk(offset, stored, raw, codec, flags))
        offset += CHUNK_HEADER + stored
    return found


def record_chunks(path):
    """The chunks of records of a stream file, its TREE chunks left out."""
    return [chunk for chunk in chunks(path) if not chunk.flags & TREE]


def tree_chunks(path):
    """The number of TREE chunks of a stream file, and the offset of the first (None without)."""
    trees = [chunk.offset for chunk in chunks(path) if chunk.flags & TREE]
    return len(trees), trees[0] if trees else None


def without_trees(experiment, copy):
    """A copy of the experiment whose streams end after their records, as an older tracetop wrote them."""
    shutil.copytree(experiment, copy)
    for path in stream_files(copy):
        _, first = tree_chunks(path)
        if first is not None:
            with open(path, "r+b") as f:
                f.truncate(first)
    return copy


def assert_trees_read_back_the_same(tmp_path, experiment, profile_txt=True):
    """`tracetop summary` of the experiment, byte for byte that of its copy without trees (in tmp_path/read-back),
    and profile.txt the same; returns the summary's run."""
    summary = tracetop("summary", experiment, cwd=tmp_path)
    assert summary.returncode == 0, summary.stderr
    if profile_txt:
        assert (experiment / "profile.txt").read_text() == summary.stdout
    read_back = tracetop("summary", without_trees(experiment, tmp_path / "read-back"), cwd=tmp_path)
    assert (read_back.returncode, read_back.stdout, read_back.stderr) == (0, summary.stdout, summary.stderr)
    return summary


def tree_heads(experiment):
    """Per stream file its TREE record's `reads` (format.h): records a profile must still read from the data, 0
    when the tree holds all it needs (asyncio steps included); None for a stream without a tree."""
    heads = []
    for path in stream_files(experiment):
        first = next((chunk for chunk in chunks(path) if chunk.flags & TREE), None)
        if first is None:
            heads.append(None)
            continue
        with open(path, "rb") as f:
            f.seek(first.offset + CHUNK_HEADER)
            payload = f.read(first.stored)
        if first.codec == CODEC_ZSTD:  # the writer compresses a tree's chunks as it does definitions
            payload = subprocess.run(["zstd", "-dcq"], input=payload, capture_output=True, check=True).stdout
        assert payload[0] == DEF_TREE
        fields, value, shift = [], 0, 0
        for byte in payload[1:]:
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                fields.append(value)
                value, shift = 0, 0
                if len(fields) == 4:
                    break
        heads.append(fields[3])
    return heads

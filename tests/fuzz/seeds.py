"""Seed corpora for the fuzz harnesses (tests/fuzz), made from a real trace.

    python seeds.py TRACETOP CORPUS_DIR

Runs a few small programs of tests/python/programs under TRACETOP (one
again counting objects, for OBJECTS records) and writes, in
CORPUS_DIR/{trace,filter,lod}, inputs as fuzz.h describes them: a
process's defs.tts and stream files joined by the separator, with zstd
chunks stored decoded (so that mutations reach the records), the filter
files of the tests, and the viewer's index of the trace.
"""

import os
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SEPARATOR = b"\n--tracetop-fuzz--\n"
# (program, options of `tracetop run`): of tests/python/programs, or of this directory
PROGRAMS = [
    ("regions.py", []),
    ("phases.py", []),
    ("deep_threads.py", []),
    ("regions.py", ["--objects"]),
    ("viewer_demo.py", []),
    ("viewer_demo.py", ["--objects"]),  # these two: large enough to keep a view.idx
    ("many_calls.py", []),
]  # and this one's has coarse levels


def decoded(data):
    """The file with each zstd chunk stored as it decodes (codec 0)."""
    out, at = bytearray(data[:16]), 16
    while at + 32 <= len(data):
        seq, base, stored, raw, codec, flags = struct.unpack_from("<4xIQIIBB", data, at)
        payload = data[at + 32 : at + 32 + stored]
        if codec == 1:
            payload = subprocess.run(["zstd", "-d", "-c"], input=payload, capture_output=True, check=True).stdout
        out += struct.pack("<IIQIIBBH", 0x4B434854, seq, base, len(payload), len(payload), 0, flags, 0) + bytes(4)
        out += payload
        at += 32 + stored
    return bytes(out)


def main(tracetop, corpus):
    for kind in ("trace", "filter", "lod"):
        os.makedirs(os.path.join(corpus, kind), exist_ok=True)
    work = tempfile.mkdtemp()
    try:
        for program, options in PROGRAMS:
            name = "".join([program, *options])
            exp = os.path.join(work, name)
            path = os.path.join(HERE, program)
            if not os.path.exists(path):
                path = os.path.join(ROOT, "tests/python/programs", program)
            subprocess.run([tracetop, "run", *options, "--output", exp, path], check=True, stdout=subprocess.DEVNULL)
            trace = os.path.join(exp, "trace")
            for pid in os.listdir(trace):
                proc = os.path.join(trace, pid)
                streams = sorted((f for f in os.listdir(proc) if f[0].isdigit()), key=lambda f: int(f.split(".")[0]))
                files = [open(os.path.join(proc, f), "rb").read() for f in ["defs.tts"] + streams]
                with open(os.path.join(corpus, "trace", f"{name}-{pid}"), "wb") as out:
                    out.write(SEPARATOR.join(decoded(f) for f in files))
            python = os.path.join(os.path.dirname(tracetop), "python")
            subprocess.run(
                [python, "-c", "import sys; from tracetop import _reader; _reader.Index(sys.argv[1])", exp],
                check=True,
                cwd=work,
            )
            if os.path.exists(os.path.join(exp, "view.idx")):  # a small trace has none (src/index/lod.c)
                shutil.copy(os.path.join(exp, "view.idx"), os.path.join(corpus, "lod", name))
    finally:
        shutil.rmtree(work)
    for name in os.listdir(os.path.join(ROOT, "tests/python/programs")):
        if name.endswith(".filter"):
            shutil.copy(os.path.join(ROOT, "tests/python/programs", name), os.path.join(corpus, "filter", name))
    with open(os.path.join(corpus, "filter", "example"), "w") as out:
        out.write(
            "SCOREP_REGION_NAMES_BEGIN\n  EXCLUDE *\n  INCLUDE __main__:main __main__:help*\n"
            "  EXCLUDE MANGLED foo\nSCOREP_REGION_NAMES_END\n"
            "SCOREP_FILE_NAMES_BEGIN\n  EXCLUDE *site-packages*\nSCOREP_FILE_NAMES_END\n"
        )


if __name__ == "__main__":
    main(*sys.argv[1:])

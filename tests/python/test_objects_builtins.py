"""`--objects` on the built-in types issue 10 names, counted exactly with every instrumenter: N of each made
and freed in one function, and N of each made and dropped one after the other, which the free lists (list,
dict, tuple, float, ...) serve from memory they hand out again and again; each record carries its
type's fixed size (tp_basicsize, what the bytes are counted in)."""

import sys

import pytest

from helpers import (
    INSTRUMENTERS,
    PROGRAMS,
    assert_complete,
    needs_object_counting,
    object_counts,
    python,
    streams,
    tracetop,
)

pytestmark = needs_object_counting

PROGRAM = PROGRAMS / "objects_builtins.py"
N = 10_000
TYPES = {"list": list, "dict": dict, "tuple": tuple, "set": set, "str": str, "bytes": bytes, "int": int, "float": float}


@pytest.mark.parametrize("instrumenter", INSTRUMENTERS)
def test_each_builtin_type_counted_exactly_free_lists_included(tmp_path, instrumenter):
    plain = python(PROGRAM, str(N), cwd=tmp_path)
    # The free list served the lists made one after the other (a few addresses for 1,000 lists).
    assert plain.stdout == f"done {N} True\n"
    completed = tracetop(
        "--output", "exp", "--objects", f"--instrumenter={instrumenter}", PROGRAM, str(N), cwd=tmp_path
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == plain.stdout
    assert_complete(tmp_path / "exp")
    counts = object_counts(tmp_path / "exp")
    for name in TYPES:
        for function in ("__main__:kept", "__main__:churn"):
            created, destroyed = counts[function, name]
            if name == "int" and instrumenter == "trace" and sys.version_info >= (3, 12):
                # sys.settrace on 3.12+ runs on sys.monitoring, whose event handler makes an int of an event's
                # offset past 256 out of tracetop's sight (README, Objects): a few more, all freed.
                assert N <= created == destroyed <= N + 10, (function, name, created, destroyed)
            else:
                assert (created, destroyed) == (N, N), (function, name)
    sizes = {
        event[3]: event[4]
        for *_, events, _, _ in streams(tmp_path / "exp")
        for event in events
        if event[0] == "objects" and event[3] in TYPES
    }
    assert sizes == {name: cls.__basicsize__ for name, cls in TYPES.items()}

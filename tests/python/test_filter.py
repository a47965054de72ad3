"""`tracetop run --filter FILE`: Score-P filter files decide which regions are recorded; the callees of an
excluded region still are; the program runs as without tracetop."""

import os

import pytest

from helpers import INSTRUMENTERS, PROGRAMS, assert_complete, enters, environment, python, tracetop

PROGRAM = PROGRAMS / "filtered.py"


def measure(tmp_path, filter_text, *options, name="exp"):
    filter_file = tmp_path / f"{name}.filter"
    filter_file.write_text(filter_text)
    completed = tracetop("--output", name, "--filter", filter_file.name, *options, PROGRAM, cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == python(PROGRAM, cwd=tmp_path).stdout
    assert_complete(tmp_path / name)
    return enters(tmp_path / name)


@pytest.mark.parametrize("instrumenter", INSTRUMENTERS)
def test_excluded_functions_leave_their_callees(tmp_path, instrumenter):
    unfiltered = measure(tmp_path, "", f"--instrumenter={instrumenter}", name="all")
    counts = measure(
        tmp_path,
        """
        # everything but the leaves
        SCOREP_REGION_NAMES_BEGIN
          EXCLUDE __main__:fib __main__:numbers
                  __main__:failing
        SCOREP_REGION_NAMES_END
    """,
        f"--instrumenter={instrumenter}",
    )
    assert unfiltered["__main__:fib"] == 177 and unfiltered["__main__:failing"] == 3
    for name in ("__main__:fib", "__main__:numbers", "__main__:failing"):
        assert name not in counts
    assert counts["__main__:leaf"] == unfiltered["__main__:leaf"] == 98
    assert counts["__main__:main"] == 1 and counts["user:phase"] == 1
    if instrumenter != "trace":
        assert counts["math:gcd"] == 98


def test_last_matching_rule_decides(tmp_path):
    counts = measure(
        tmp_path,
        """
        SCOREP_REGION_NAMES_BEGIN
          EXCLUDE *
          INCLUDE __main__:*
          EXCLUDE MANGLED __main__:f*
        SCOREP_REGION_NAMES_END
    """,
    )
    assert set(counts) == {"__main__:main", "__main__:leaf", "__main__:numbers", "__main__:<module>"}


def test_user_regions_and_c_functions(tmp_path):
    counts = measure(
        tmp_path,
        """
        SCOREP_REGION_NAMES_BEGIN EXCLUDE user:phase math:gcd SCOREP_REGION_NAMES_END
    """,
    )
    assert "user:phase" not in counts and "math:gcd" not in counts
    assert counts["__main__:leaf"] == 98


def test_file_names(tmp_path):
    counts = measure(
        tmp_path,
        """
        SCOREP_FILE_NAMES_BEGIN
          EXCLUDE *
          INCLUDE */programs/filtered.py
          EXCLUDE *filtered.py
        SCOREP_FILE_NAMES_END
    """,
    )
    assert not any(name.startswith("__main__:") for name in counts)
    assert counts["math:gcd"] == 98 and counts["user:phase"] == 1  # regions without a file are not file-filtered


def test_environment_alias(tmp_path):
    (tmp_path / "f.filter").write_text("SCOREP_REGION_NAMES_BEGIN\nEXCLUDE __main__:fib\nSCOREP_REGION_NAMES_END\n")
    completed = tracetop("--output", "exp", PROGRAM, cwd=tmp_path, env=environment(SCOREP_FILTERING_FILE="f.filter"))
    assert completed.returncode == 0, completed.stderr
    assert "__main__:fib" not in enters(tmp_path / "exp")
    # Named from anywhere: child processes, which may run elsewhere, read it there.
    assert f"TRACETOP_FILTERING_FILE={tmp_path / 'f.filter'}" in (tmp_path / "exp" / "config.txt").read_text()


def test_filter_ends_with_its_session(tmp_path):
    """A later measurement in the same process records what an earlier one filtered out."""
    (tmp_path / "f.filter").write_text("SCOREP_REGION_NAMES_BEGIN EXCLUDE __main__:work SCOREP_REGION_NAMES_END")
    code = (
        "import tracetop\n"
        "def work(): return 1\n"
        "with tracetop.start(output='one', filter='f.filter'): work()\n"
        "with tracetop.start(output='two'): work()\n"
    )
    completed = python("-c", code, cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert "__main__:work" not in enters(tmp_path / "one")
    assert enters(tmp_path / "two")["__main__:work"] == 1


@pytest.mark.parametrize(
    "text, message",
    [
        ("EXCLUDE foo\n", "f.filter:1: outside a SCOREP_REGION_NAMES or SCOREP_FILE_NAMES block: 'EXCLUDE'"),
        ("# comment\nSCOREP_REGION_NAMES_BEGIN\n  foo\n", "f.filter:3: a pattern before INCLUDE or EXCLUDE: 'foo'"),
        (
            "SCOREP_REGION_NAMES_BEGIN\nEXCLUDE x\n\n",
            "f.filter:1: SCOREP_REGION_NAMES_BEGIN without SCOREP_REGION_NAMES_END",
        ),
        (
            "SCOREP_FILE_NAMES_BEGIN\nSCOREP_REGION_NAMES_BEGIN\n",
            "f.filter:2: a block cannot begin inside another: 'SCOREP_REGION_NAMES_BEGIN'",
        ),
        ("SCOREP_REGION_NAMES_END\n", "f.filter:1: no open block to end: 'SCOREP_REGION_NAMES_END'"),
        (
            "SCOREP_REGION_NAMES_BEGIN\nEXCLUDE a\\\nSCOREP_REGION_NAMES_END\n",
            "f.filter:2: a pattern ends in an unfinished escape: 'a\\'",
        ),
    ],
)
def test_malformed_filter(tmp_path, text, message):
    (tmp_path / "f.filter").write_text(text)
    completed = tracetop("--filter", "f.filter", "--output", "exp", "-c", "print('ran')", cwd=tmp_path)
    assert completed.returncode == 2
    assert completed.stderr == f"tracetop: error: {message}\n"
    assert completed.stdout == ""
    assert not os.path.exists(tmp_path / "exp")


def test_missing_filter(tmp_path):
    completed = tracetop("--filter", "nope.filter", "-c", "print('ran')", cwd=tmp_path)
    assert completed.returncode == 2
    assert completed.stderr == "tracetop: error: cannot read filter file nope.filter: No such file or directory\n"

"""Bad input gets one line on stderr and a non-zero exit status, never a traceback."""

import json
import os
import re
import sys
import urllib.request

import pytest

from helpers import PROGRAMS, environment, python, tracetop
from trace_files import chunks
from viewer_helpers import view_server


def assert_one_error_line(completed, status=2):
    assert completed.returncode == status
    assert "Traceback" not in completed.stderr
    assert len(completed.stderr.splitlines()) == 1, completed.stderr
    assert completed.stderr.startswith("tracetop: error: ")
    return completed.stderr.strip()


def assert_usage_error(completed, message):
    assert completed.returncode == 2
    assert "Traceback" not in completed.stderr
    usage, error = completed.stderr.splitlines()
    assert usage.startswith("usage: ")
    assert message in error
    assert completed.stdout == ""


def test_unknown_option(tmp_path):
    assert_usage_error(tracetop("--bogus", "-c", "print('ran')", cwd=tmp_path), "unrecognized arguments: --bogus")
    assert not os.listdir(tmp_path)


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--memory", "lots", "-c", "pass"], "argument --memory: invalid size 'lots'"),
        (["--memory", "100k", "-c", "pass"], "below the minimum of 1M"),
        (["--instrumenter=magic", "-c", "pass"], "invalid choice 'magic'"),
        (["--format", "pdf", "-c", "pass"], "unknown format 'pdf'"),
        (["-v"], "no program given"),
        (["run"], "no program given"),
        (["-c"], "argument -c: expected one argument"),
    ],
)
def test_bad_options(arguments, message, tmp_path):
    assert_usage_error(tracetop(*arguments, cwd=tmp_path), message)


def test_missing_script(tmp_path):
    line = assert_one_error_line(tracetop("missing.py", cwd=tmp_path))
    assert line == "tracetop: error: cannot open 'missing.py': No such file or directory"


def test_missing_module(tmp_path):
    line = assert_one_error_line(tracetop("-m", "no_such_module_here", cwd=tmp_path), status=1)
    assert line == "tracetop: error: No module named no_such_module_here"


def test_bad_environment(tmp_path):
    completed = tracetop("-c", "print('ran')", cwd=tmp_path, env=environment(SCOREP_TOTAL_MEMORY="lots"))
    assert assert_one_error_line(completed).startswith("tracetop: error: SCOREP_TOTAL_MEMORY: invalid size")
    assert completed.stdout == ""


def test_output_that_cannot_be_made(tmp_path):
    completed = tracetop("--output", "/dev/null/exp", "-c", "print('ran')", cwd=tmp_path)
    assert "'/dev/null/exp'" in assert_one_error_line(completed)
    assert completed.stdout == ""


def test_output_that_is_not_empty(tmp_path):
    (tmp_path / "exp").mkdir(mode=0o700)
    (tmp_path / "exp" / "keep.txt").write_text("mine")
    completed = tracetop("--output", "exp", "-c", "print('ran')", cwd=tmp_path)
    assert "exists and is not empty" in assert_one_error_line(completed)
    assert completed.stdout == "" and os.listdir(tmp_path / "exp") == ["keep.txt"]


def test_output_that_is_empty_is_used(tmp_path):
    (tmp_path / "exp").mkdir(mode=0o700)
    assert tracetop("--output", "exp", "-c", "print('ran')", cwd=tmp_path).stdout == "ran\n"
    assert (tmp_path / "exp" / "MANIFEST.md").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_output_that_cannot_be_written(tmp_path):
    (tmp_path / "exp").mkdir(mode=0o500)
    completed = tracetop("--output", "exp", "-c", "print('ran')", cwd=tmp_path)
    assert completed.returncode != 0 and "Traceback" not in completed.stderr
    assert len(completed.stderr.splitlines()) == 1 and completed.stdout == ""


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="sys.monitoring exists")
def test_monitoring_before_python_3_12(tmp_path):
    completed = tracetop("--output", "exp", "--instrumenter=monitoring", "-c", "print('ran')", cwd=tmp_path)
    assert_one_error_line(completed)
    assert completed.stdout == "" and not (tmp_path / "exp").exists()


def test_no_arguments(tmp_path):
    completed = tracetop(cwd=tmp_path)
    assert completed.returncode == 2 and completed.stderr.startswith("usage: ")


@pytest.mark.parametrize("make", ["nothing", "empty directory", "file"])
def test_summary_of_no_experiment(make, tmp_path):
    target = tmp_path / "exp"
    if make == "empty directory":
        target.mkdir()
    elif make == "file":
        target.write_text("not an experiment")
    completed = tracetop("summary", target, cwd=tmp_path)
    assert_one_error_line(completed)
    assert completed.stdout == ""


def test_summary_bad_top(tmp_path):
    assert_usage_error(tracetop("summary", "--top", "0", "exp", cwd=tmp_path), "not a positive whole number")


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--process", "x"], "argument --process: not a whole number: 'x'"),
        (["--rank", "-1"], "argument --rank: not a whole number: '-1'"),
        (["--process", "1", "--rank", "1"], "argument --rank: not allowed with argument --process"),
    ],
)
def test_summary_bad_process(arguments, message, tmp_path):
    assert_usage_error(tracetop("summary", *arguments, "exp", cwd=tmp_path), message)


@pytest.mark.parametrize("option, says", [("--process", "has no process 4000000000"), ("--rank", "has no MPI rank 0")])
def test_summary_of_a_process_not_there(option, says, tmp_path):
    assert tracetop("--output", "exp", "-c", "pass", cwd=tmp_path).returncode == 0
    completed = tracetop("summary", option, "4000000000" if option == "--process" else "0", "exp", cwd=tmp_path)
    assert says in assert_one_error_line(completed) and completed.stdout == ""


def recorded_experiment(tmp_path):
    completed = tracetop("--output", "exp", PROGRAMS / "ending.py", "return", "0.3", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    trace = tmp_path / "exp" / "trace"
    return max((path for path in trace.rglob("*") if path.is_file()), key=lambda path: path.stat().st_size)


def assert_summary_complains(tmp_path):
    """What could be read is summed up (exit status 0), and one warning says what could not."""
    completed = tracetop("summary", "exp", cwd=tmp_path)
    assert completed.returncode == 0 and completed.stdout.startswith("tracetop summary")
    assert "Traceback" not in completed.stderr
    assert len(completed.stderr.splitlines()) == 1, completed.stderr
    assert completed.stderr.startswith("tracetop: warning: ")


def test_summary_of_a_damaged_trace(tmp_path):
    largest = recorded_experiment(tmp_path)
    data = bytearray(largest.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(byte ^ 0x5A for byte in data[middle : middle + 64])
    largest.write_bytes(bytes(data))
    assert_summary_complains(tmp_path)


def test_summary_of_a_truncated_trace(tmp_path):
    largest = recorded_experiment(tmp_path)
    with open(largest, "r+b") as file:
        file.truncate(largest.stat().st_size // 2)
    assert_summary_complains(tmp_path)


@pytest.mark.parametrize("command", [["summary", "exp"], ["convert", "exp", "--to", "chrome"]])
def test_a_trace_from_a_newer_tracetop_is_called_so(command, tmp_path):
    recorded_experiment(tmp_path)
    # As a later tracetop would write them: the format's version in every file's header (bytes 8-11) one past any.
    for path in (tmp_path / "exp" / "trace").rglob("*.tts"):
        data = bytearray(path.read_bytes())
        data[8:12] = (int.from_bytes(data[8:12], "little") + 1000).to_bytes(4, "little")
        path.write_bytes(bytes(data))
    says = assert_one_error_line(tracetop(*command, cwd=tmp_path))
    assert "written by a newer tracetop" in says and "upgrade tracetop" in says
    assert "corrupt" not in says and "damaged" not in says


@pytest.mark.parametrize("command", [["ctl", "99999999999999999999", "off"], ["top", "4294967297"]])
def test_process_ids_beyond_pid_t(command, tmp_path):
    completed = tracetop(*command, cwd=tmp_path)
    assert completed.returncode == 2 and "Traceback" not in completed.stderr
    assert completed.stderr.startswith("usage: ") and "not a process id" in completed.stderr.splitlines()[-1]


@pytest.mark.parametrize("size", [str(2**64), str(2**70), "99999999999999T", "1" + "0" * 400])
def test_memory_beyond_any_machine(size, tmp_path):
    completed = tracetop("--output", "exp", "--memory", size, "-c", "print('ran')", cwd=tmp_path)
    assert completed.returncode == 2 and "Traceback" not in completed.stderr and completed.stdout == ""
    assert "too large" in completed.stderr


def test_help_into_a_closed_pipe(tmp_path):
    import subprocess

    for arguments in (["--help"], ["summary", "--help"]):
        piped = subprocess.run(
            f"{sys.executable} -m tracetop {' '.join(arguments)} | true",
            shell=True,
            cwd=tmp_path,
            env=environment(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert "Traceback" not in piped.stderr and "BrokenPipe" not in piped.stderr, piped.stderr


def test_a_fifo_in_the_trace_is_not_waited_for(tmp_path):
    """Something that is not a regular file where a trace file should be (a FIFO blocks whoever opens it to
    read) is reported in one line naming it: summary and report sum up the rest, convert stops."""
    recorded_experiment(tmp_path)
    process_dir = next((tmp_path / "exp" / "trace").iterdir())
    stream = process_dir / "0.tts"
    stream.unlink()
    os.mkfifo(stream)
    for command in (["summary", "exp"], ["convert", "exp", "--to", "chrome"], ["report", "exp", "-o", "r.html"]):
        completed = tracetop(*command, cwd=tmp_path, timeout=60)
        assert completed.returncode == 0, (command, completed.stderr)
        assert "Traceback" not in completed.stderr and "0.tts is not a regular file" in completed.stderr


# The commands that read a trace, each of which says what it lacks and goes on with the rest.
READERS = (
    ["summary", "exp"],
    ["score", "exp"],
    ["convert", "exp", "--to", "chrome"],
    ["report", "exp", "-o", "r.html"],
)


def viewer_problems(experiment):
    """What `tracetop view` tells of the experiment: the problems its data carries, and its stderr's warnings."""
    with view_server(experiment) as (url, process):
        with urllib.request.urlopen(url + "api/meta", timeout=60) as answer:
            problems = json.load(answer)["problems"]
    return problems, [line for line in process.stderr.read().splitlines() if line.startswith("tracetop: warning: ")]


def test_a_lost_stream_file_is_named_and_counted(tmp_path):
    """A thread whose stream file is gone from a process that ended: every reader names it and counts the threads
    lost, in one warning, and sums up the rest (exit status 0)."""
    completed = tracetop("--output", "exp", PROGRAMS / "viewer_demo.py", "5", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    process_dir = next((tmp_path / "exp" / "trace").iterdir())
    (process_dir / "1.tts").unlink()
    lost = f'process {process_dir.name}: 1 of 3 threads lost, their events unread: thread "worker-0" (stream 1): 1.tts is missing'
    for command in READERS:
        completed = tracetop(*command, cwd=tmp_path, timeout=60)
        assert completed.returncode == 0 and "Traceback" not in completed.stderr, (command, completed.stderr)
        warnings = [line for line in completed.stderr.splitlines() if line.startswith("tracetop: warning: ")]
        assert len(warnings) == 1 and warnings[0].endswith(f": {lost}"), (command, completed.stderr)
        if command[0] == "summary":  # and the events lost, which the process counted as it ended
            read = int(re.search(r" threads, (\d+) events, ", completed.stdout)[1])
            unread, recorded = map(
                int, re.search(r"\(ended normally; (\d+) of its (\d+) events lost\)", completed.stdout).groups()
            )
            assert unread > 0 and read + unread == recorded
    (tmp_path / "exp" / "view.idx").unlink()  # made by report above, with the same problem: made anew here
    problems, warnings = viewer_problems(tmp_path / "exp")
    assert lost in problems and len(warnings) == 1 and warnings[0].endswith(f": {lost}"), warnings


def test_a_flipped_bit_in_the_definitions_is_damage(tmp_path):
    """One bit flipped in the one chunk of a process's definitions leaves the process out (its regions and clock
    are there), said as damage where it is, not as a write that was not finished; every reader stops on it alike."""
    completed = tracetop("--output", "exp", PROGRAMS / "viewer_demo.py", "5", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    process_dir = next((tmp_path / "exp" / "trace").iterdir())
    defs = process_dir / "defs.tts"
    assert len(chunks(defs)) == 1
    data = bytearray(defs.read_bytes())
    data[len(data) // 2] ^= 0x10
    defs.write_bytes(bytes(data))
    for command in [*READERS, ["view", "exp", "--no-browser"]]:
        line = assert_one_error_line(tracetop(*command, cwd=tmp_path, timeout=60))
        assert f"process {process_dir.name} left out" in line and "unfinished" not in line, (command, line)
        assert "definitions corrupt: checksum mismatch in chunk 0 at byte 16" in line, (command, line)


@pytest.mark.parametrize("manifest", ["fifo", "/dev/zero", "sparse 1 GB"])
def test_a_manifest_that_is_no_small_file_is_not_read(manifest, tmp_path):
    """MANIFEST.md is read to know whether the run still goes on: one that is no regular file of tracetop's size
    (a FIFO blocks whoever opens it, /dev/zero and a huge file fill the memory) is named in one warning, and every
    command goes on as if the run had ended. A child process reads config.txt the same way, to measure itself:
    it runs unmeasured, said in one line."""
    recorded_experiment(tmp_path)
    path = tmp_path / "exp" / "MANIFEST.md"
    path.unlink()
    if manifest == "fifo":
        os.mkfifo(path)
    elif manifest == "/dev/zero":
        path.symlink_to("/dev/zero")
    else:
        with open(path, "wb") as file:
            file.truncate(1 << 30)
    for command in (
        ["summary", "exp"],
        ["score", "exp"],
        ["convert", "exp", "--to", "chrome"],
        ["report", "exp", "-o", "r.html"],
    ):
        completed = tracetop(*command, cwd=tmp_path, timeout=60)
        assert completed.returncode == 0 and "Traceback" not in completed.stderr, (command, completed.stderr)
        said = [line for line in completed.stderr.splitlines() if "exp/MANIFEST.md" in line]
        assert len(said) == 1 and said[0].startswith("tracetop: warning: "), (command, completed.stderr)
    with view_server(tmp_path / "exp") as (url, process):
        with urllib.request.urlopen(url + "api/meta", timeout=60) as answer:
            assert json.load(answer)["running"] == []
    assert sum("exp/MANIFEST.md" in line for line in process.stderr.read().splitlines()) == 1


def test_a_config_that_is_no_regular_file_is_not_read(tmp_path):
    """A Python started inside a measurement that follows children reads the experiment's config.txt to measure
    itself: a FIFO there is not waited for, and the program runs unmeasured, said in one line."""
    recorded_experiment(tmp_path)
    config = tmp_path / "exp" / "config.txt"
    config.unlink()
    os.mkfifo(config)
    completed = python(
        "-c", "print('ran')", cwd=tmp_path, env=environment(TRACETOP_FOLLOW_INTO=str(tmp_path / "exp")), timeout=60
    )
    assert completed.returncode == 0 and completed.stdout == "ran\n"
    assert completed.stderr.startswith("tracetop: warning: process ") and "not measured" in completed.stderr
    assert "config.txt" in completed.stderr and len(completed.stderr.splitlines()) == 1, completed.stderr

"""What the writer does when it cannot write for a while: a program that runs out of file descriptors for a
moment (a server at its limit) loses none of its events, the writer trying again until it can; a full disk ends
the trace where it could write no more, and MANIFEST.md, the run and `summary` say so in those words, while the
program's own exit status stays what it was."""

import errno
import os
import resource
import subprocess
import sys

import pytest

from helpers import PROGRAMS, assert_complete, enters, environment

STARVED = PROGRAMS / "starved.py"


def traced(*arguments, cwd, descriptors=None):
    """`tracetop --output exp starved.py ARGUMENTS`, with at most `descriptors` open at once when given."""

    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (descriptors, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    return subprocess.run(
        [sys.executable, "-m", "tracetop", "--output", "exp", STARVED, *arguments],
        cwd=cwd,
        env=environment(),
        preexec_fn=limit if descriptors else None,
        capture_output=True,
        text=True,
        timeout=300,
    )


def visits_in(summary):
    """The visits of starved.py's visit() in a summary's table of regions."""
    return next(int(line.split()[3]) for line in summary.splitlines() if line.split()[4:5] == ["__main__:visit"])


@pytest.mark.parametrize("descriptors", [20, 256])
def test_a_moment_without_descriptors_loses_nothing(descriptors, tmp_path):
    run = traced("descriptors", cwd=tmp_path, descriptors=descriptors)
    assert run.returncode == 0 and "warning" not in run.stderr, run.stderr
    calls = int(run.stdout)
    assert calls > 400_000
    manifest = (tmp_path / "exp" / "MANIFEST.md").read_text()
    assert "- ended: " in manifest and ", exit status 0\n" in manifest
    paused = next(line for line in manifest.splitlines() if line.startswith("- writing paused: "))
    assert paused.endswith(": Too many open files") and "nothing lost" in paused
    assert_complete(tmp_path / "exp")
    assert enters(tmp_path / "exp")["__main__:visit"] == calls
    summary = subprocess.run(
        [sys.executable, "-m", "tracetop", "summary", "exp"], cwd=tmp_path, capture_output=True, text=True
    )
    assert (summary.returncode, summary.stderr) == (0, "")
    assert "(ended normally)" in summary.stdout and visits_in(summary.stdout) == calls


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MiB file system of its own (tmpfs), unmounted after."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a file system needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", disk], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    yield disk
    subprocess.run(["umount", disk], check=True)


def test_a_full_disk_is_said_in_words(small_disk):
    run = traced("disk", small_disk, cwd=small_disk)
    assert (run.returncode, run.stdout) == (3, "400000\n"), run.stderr
    manifest = (small_disk / "exp" / "MANIFEST.md").read_text()
    assert "- ended: " in manifest and ", exit status 3\n" in manifest
    pid = os.listdir(small_disk / "exp" / "trace")[0]
    cut = next(line for line in manifest.splitlines() if line.startswith("- trace cut short"))
    assert cut.startswith(f"- trace cut short in process {pid}: the disk was full (cannot write {small_disk}/exp/")
    assert cut.endswith(f": {os.strerror(errno.ENOSPC)}); what the program did after that is not recorded")
    assert f"tracetop: warning: {cut[2:]}" in run.stderr.splitlines()
    assert "Success" not in run.stderr
    os.remove(small_disk / "filler")
    summary = subprocess.run(
        [sys.executable, "-m", "tracetop", "summary", "exp"], cwd=small_disk, capture_output=True, text=True
    )
    assert summary.returncode == 0 and f"tracetop: warning: {cut[2:]}" in summary.stderr.splitlines()

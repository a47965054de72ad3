"""The live channel of `tracetop run --live`: there while the program runs, private to its user, gone
when the program ends (by return or os._exit)."""

import os
import subprocess
import sys

import pytest

from helpers import PROGRAMS, assert_complete, environment, python, tracetop
from live_helpers import channel, channels


@pytest.mark.parametrize("how, status", [("return", 0), ("exit", 3)])
def test_channel_while_running_and_gone_after(how, status, tmp_path):
    before = channels()
    completed = tracetop("--live", "--output", "exp", PROGRAMS / "live_channel.py", how, cwd=tmp_path)
    assert (completed.returncode, completed.stdout) == (status, "channel 600\n"), completed.stderr
    assert channels() == before
    assert_complete(tmp_path / "exp")


def test_no_channel_without_live(tmp_path):
    completed = tracetop("--output", "exp", PROGRAMS / "live_channel.py", "return", cwd=tmp_path)
    assert completed.stdout == "no channel\n"


def test_live_from_the_api(tmp_path):
    code = (
        "import os, tracetop\n"
        f"path = '/dev/shm/tracetop-{os.geteuid()}-' + str(os.getpid())\n"
        "session = tracetop.start(output='exp', live=True)\n"
        "print(os.path.exists(path))\n"
        "session.stop()\n"
        "print(os.path.exists(path))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=environment(), capture_output=True, text=True, timeout=60
    )
    assert completed.stdout == "True\nFalse\n", completed.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a program as another user")
def test_another_user_cannot_open_the_channel(tmp_path):
    program = subprocess.Popen(
        [sys.executable, "-m", "tracetop", "--live", "--output", "exp", PROGRAMS / "live_channel.py", "wait"],
        cwd=tmp_path,
        env=environment(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert program.stdout.readline() == "channel 600\n"
        opener = subprocess.run(
            ["cat", channel(program.pid)],
            user=65534,
            group=65534,
            extra_groups=[],
            cwd="/",
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert opener.returncode != 0 and "Permission denied" in opener.stderr
    finally:
        program.communicate("\n", timeout=60)
    assert program.returncode == 0


def test_a_squatted_channel_name(tmp_path):
    """Another user made the name of the channel first: the program runs live under a name of its own, and
    says so."""
    completed = python(PROGRAMS / "squatted.py", "exp", cwd=tmp_path)
    assert (completed.returncode, completed.stdout) == (0, "listed: True\n"), completed.stderr
    assert "is taken by another user: the live channel has a name of its own" in completed.stderr

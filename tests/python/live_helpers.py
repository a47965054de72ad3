"""Programs running under `tracetop run --live`, and the readers of their live channel the tests drive: top on a
screen of its own in tmux, read back with capture-pane, and `top --drain`. Waits are on what is seen, each with
a deadline far beyond what a loaded machine takes."""

import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers import PROGRAMS, environment, tracetop

TMUX = shutil.which("tmux")
needs_tmux = pytest.mark.skipif(TMUX is None, reason="needs tmux")

# A row of top: %OWN, OWN s, %CPU, TOTAL s, %DESC, CALLS, FUNCTION, FILE:LINE (src/top/top.c: format_percent,
# format_seconds, format_calls).
PERCENT, SECONDS, CALLS = r"(\d+(?:\.\d)?)", r"(\d+(?:\.\d+)?)", r"(\d+(?:\.\d)?[MG]?)"
ROW = re.compile(rf"^\s*{PERCENT}\s+{SECONDS}\s+{PERCENT}\s+{SECONDS}\s+{PERCENT}\s+{CALLS}\s+(\S+)(?:\s+(\S+))?")
FIRST_ROW_LINE = 4


def channel(pid):
    """The live channel of the process `pid` in /dev/shm."""
    return Path(f"/dev/shm/tracetop-{os.geteuid()}-{pid}")


def channels():
    """Every live channel of this user in /dev/shm: the tests that look at them all run alone (mark serial)."""
    return set(Path("/dev/shm").glob(f"tracetop-{os.geteuid()}-*"))


def wait_for_channel(process, pid=None, timeout=60):
    """Returns once the live channel of `process` (or of `pid`, a process it becomes) is there."""
    deadline = time.monotonic() + timeout
    while not channel(pid or process.pid).exists():
        assert process.poll() is None, "the program ended before its live channel was made"
        assert time.monotonic() < deadline, f"no live channel after {timeout} s"
        time.sleep(0.02)


def wait_for_readers(pid, count, timeout=60):
    """Returns once `count` processes besides `pid` have its live channel mapped. A reader maps the channel as
    it attaches and reads from the newest slice on, so a test waits for this before the program makes events."""
    path, deadline = str(channel(pid)), time.monotonic() + timeout
    while True:
        mapping = set()
        for maps in Path("/proc").glob("[0-9]*/maps"):
            try:
                if maps.parent.name != str(pid) and path in maps.read_text():
                    mapping.add(maps.parent.name)
            except OSError:  # gone, or not ours to read
                pass
        if len(mapping) >= count:
            return
        assert time.monotonic() < deadline, f"{len(mapping)} of {count} readers attached after {timeout} s"
        time.sleep(0.05)


@dataclass
class Row:
    percent: float
    own: float
    cpu: float  # %CPU
    total: float
    descendants: float
    calls: float
    function: str
    location: str


def count(text):
    """top's counts: 1234, 12.3k, 4.5M."""
    scale = {"k": 1e3, "M": 1e6, "G": 1e9}.get(text[-1:], 1)
    return float(text.rstrip("kMG")) * scale


def rows(lines):
    found = []
    for line in lines[FIRST_ROW_LINE:]:
        match = ROW.match(line)
        if match:
            percent, own, cpu, total, descendants, calls, function, location = match.groups()
            found.append(
                Row(
                    float(percent),
                    float(own),
                    float(cpu),
                    float(total),
                    float(descendants),
                    count(calls),
                    function,
                    location or "",
                )
            )
    return found


class Workload:
    """programs/live_workload.py (or `program`) under `tracetop run --live` (and `options`), until stop()."""

    def __init__(self, tmp_path, workers=0, program="live_workload.py", options=()):
        self.directory = tmp_path
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tracetop", "--live", *options, "--output", "exp", PROGRAMS / program, str(workers)],
            cwd=tmp_path,
            env=environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.pid = self.process.pid
        wait_for_channel(self.process)

    def stop(self):
        """Has the program end; its experiment. What it printed is kept in self.output."""
        (self.directory / "stop").touch()
        self.output, stderr = self.process.communicate(timeout=120)
        assert self.process.returncode == 0, stderr
        return self.directory / "exp"


class Gated:
    """`python -m tracetop --live ARGS` whose pid is known before it starts: a shell that waits for a line,
    then becomes the program (exec keeps the pid)."""

    def __init__(self, tmp_path, *arguments):
        command = " ".join(["read go; exec", sys.executable, "-m tracetop --live --output exp", *map(str, arguments)])
        self.process = subprocess.Popen(
            ["sh", "-c", command],
            cwd=tmp_path,
            env=environment(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.pid = self.process.pid

    def start(self):
        self.process.stdin.write("go\n")
        self.process.stdin.flush()

    def wait(self):
        out, err = self.process.communicate(timeout=120)
        assert self.process.returncode == 0, err
        return out


class Phases:
    """programs/switch_phases.py running under `tracetop run --live`, moved on phase by phase."""

    def __init__(self, tmp_path, *options):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tracetop", "--live", *options, "--output", "exp", PROGRAMS / "switch_phases.py"],
            cwd=tmp_path,
            env=environment(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.hooks = {}  # phase -> whether the program saw a hook then
        self.expect(1)

    def expect(self, phase):
        line = self.process.stdout.readline()
        assert line in (f"phase {phase} hooked\n", f"phase {phase} unhooked\n"), line
        self.hooks[phase] = line.endswith(" hooked\n")

    def next(self, phase):
        self.process.stdin.write("\n")
        self.process.stdin.flush()
        self.expect(phase)

    def ctl(self, state, tmp_path):
        completed = tracetop("ctl", str(self.process.pid), state, cwd=tmp_path)
        assert completed.returncode == 0, completed.stderr
        assert completed.stderr == f"tracetop: process {self.process.pid}: measurement {state}\n"

    def end(self):
        self.process.stdin.write("\n")
        _, stderr = self.process.communicate(timeout=60)
        assert self.process.returncode == 0, stderr


def top_command(pid, *options):
    return [sys.executable, "-m", "tracetop", "top", pid, *options]


def drain(pid, tmp_path):
    """`tracetop top --drain PID`: reads every event of the process, then prints what it read."""
    return subprocess.Popen(
        [sys.executable, "-m", "tracetop", "top", "--drain", str(pid)],
        cwd=tmp_path,
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


class Screen:
    """A command in a tmux session of its own (its own server, on a socket in tmp_path)."""

    def __init__(self, tmp_path, command, width=80, height=24):
        self.tmux = [TMUX, "-S", str(tmp_path / "tmux.sock")]
        subprocess.run(
            [
                *self.tmux,
                "new-session",
                "-d",
                "-s",
                "top",
                "-x",
                str(width),
                "-y",
                str(height),
                "-c",
                str(tmp_path),
                " ".join(map(str, command)),
            ],
            env=environment(),
            cwd=tmp_path,
            check=True,
            timeout=30,
        )

    def lines(self):
        captured = subprocess.run(
            [*self.tmux, "capture-pane", "-p", "-t", "top"], capture_output=True, text=True, timeout=30
        )
        return captured.stdout.splitlines() if captured.returncode == 0 else None

    def keys(self, *keys):
        subprocess.run([*self.tmux, "send-keys", "-t", "top", *keys], check=True, timeout=30)

    def resize(self, width, height):
        subprocess.run(
            [*self.tmux, "resize-window", "-t", "top", "-x", str(width), "-y", str(height)], check=True, timeout=30
        )

    def wait(self, what, predicate, timeout=60):
        """The screen once predicate(lines) holds; fails, showing the screen, after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        lines = self.lines()
        while lines is None or not predicate(lines):
            if time.monotonic() > deadline:
                shown = "\n".join(lines or ["(no screen)"])
                pytest.fail(f"top did not show {what} within {timeout} s; the screen:\n{shown}")
            time.sleep(0.1)
            lines = self.lines()
        return lines

    def ended(self):
        return subprocess.run([*self.tmux, "has-session", "-t", "top"], capture_output=True, timeout=30).returncode != 0

    def close(self):
        subprocess.run([*self.tmux, "kill-server"], capture_output=True, timeout=30)

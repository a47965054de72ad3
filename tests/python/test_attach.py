"""`tracetop attach PID`: programs started without tracetop (and without its package on their sys.path,
python -I -S) are measured for a while, then left running as they were."""

import collections
import ctypes
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from helpers import (
    PROGRAMS,
    assert_complete,
    enters,
    environment,
    needs_object_counting,
    reader,
    streams,
    tracetop,
    tracetop_lines,
)
from live_helpers import Screen, needs_tmux, rows
from viewer_helpers import view_server

# Seen on Python 3.9 and left (attach was built and checked for 3.11+): the main thread's open calls are not
# entered at the attach, and a thread already running when the main thread waits in a join records no calls.
before_3_11 = pytest.mark.skipif(
    sys.version_info < (3, 11), reason="attach is complete from Python 3.11 on (see the comment above)"
)


def attach(pid, *options, cwd):
    return tracetop("attach", str(pid), *options, cwd=cwd, timeout=120)


def attaching(pid, *options, cwd):
    """`tracetop attach` running in the background, once it has said it is attached."""
    # With SIGINT's default action, as from a terminal: the tests may run in a background job, which starts
    # with SIGINT ignored, and then the Ctrl-C test's SIGINT would never reach tracetop.
    process = subprocess.Popen(
        [sys.executable, "-m", "tracetop", "attach", str(pid), *options],
        cwd=cwd,
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    line = process.stderr.readline()
    assert line.startswith(f"tracetop: attached to process {pid} in "), line + process.stderr.read()
    return process


def threads_of(experiment):
    trace = reader.Trace(str(experiment))
    (process,) = trace.processes
    return {thread["name"]: thread for thread in process["threads"]}


def ended(experiment, seconds=30):
    """Waits until the process attached to has completed the experiment (profile.txt is its last file but
    MANIFEST.md, which is rewritten at the end)."""
    deadline = time.monotonic() + seconds
    while "- ended:" not in _manifest_ended(experiment):
        assert time.monotonic() < deadline, "the experiment was not completed"
        time.sleep(0.05)


def _manifest_ended(experiment):
    try:
        return "\n".join(
            line
            for line in (experiment / "MANIFEST.md").read_text().splitlines()
            if line.startswith("- ended:") and "not normally" not in line
        )
    except FileNotFoundError:
        return ""


class Server:
    """tests/python/programs/attach_server.py, and requests sent to it."""

    def __init__(self, cwd):
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-S", PROGRAMS / "attach_server.py"],
            cwd=cwd,
            env=environment(),
            stdout=subprocess.PIPE,
            text=True,
        )
        self.port = int(self.process.stdout.readline())
        self.pid = self.process.pid
        self._stop = threading.Event()

    def get(self, path):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=30) as answer:
            return answer.read().decode()

    def load(self):
        """Requests one after the other until stopped."""

        def send():
            while not self._stop.is_set():
                self.get("/work?n=12")

        thread = threading.Thread(target=send)
        thread.start()
        return thread

    def close(self):
        self._stop.set()
        self.process.kill()
        self.process.wait()


class Spinner:
    """tests/python/programs/attach_spin.py: CPU-bound workers that note what each batch cost them."""

    def __init__(self, cwd):
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-S", PROGRAMS / "attach_spin.py"],
            cwd=cwd,
            env=environment(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout.readline() == "ready\n"
        self.pid = self.process.pid

    def mark(self):
        """Starts a window; returns the least CPU time (µs) a batch took since the previous mark."""
        self.process.stdin.write("\n")
        self.process.stdin.flush()
        return int(self.process.stdout.readline())

    def close(self):
        self.process.kill()
        self.process.wait()


@pytest.fixture
def server(tmp_path):
    server = Server(tmp_path)
    yield server
    server.close()


@pytest.fixture
def spinners(tmp_path):
    spinners = Spinner(tmp_path), Spinner(tmp_path)
    yield spinners
    for spinner in spinners:
        spinner.close()


@before_3_11
def test_server_measured_then_serving_unhooked(tmp_path, server):
    load = server.load()
    completed = attach(server.pid, "--duration", "2", "--output", "exp", cwd=tmp_path)
    server._stop.set()
    load.join()
    assert completed.returncode == 0, completed.stderr
    said = tracetop_lines(completed.stderr)
    assert len(said) == 2 and said[1].startswith(f"tracetop: detached from process {server.pid}; experiment in exp/")
    experiment = tmp_path / "exp"
    assert_complete(experiment)
    threads = threads_of(experiment)
    # The main thread was in serve_forever when tracetop came, and stays there: recorded from the attach on.
    assert threads["MainThread"]["open_at_start"] >= 2
    assert enters(experiment, "MainThread")["socketserver:BaseServer.serve_forever"] == 1
    requests = [name for name in threads if "process_request_thread" in name]
    assert requests, threads
    # One request per thread: whole, but for those under way when tracetop came (their calls open at the
    # start) or left (the newest threads: names count up as they are made). The client sends one request at a
    # time, but a loaded machine may let several handler threads linger on their way out: those past their
    # do_GET when tracetop came record the rest of their way out only.
    recorded = {name: enters(experiment, name) for name in requests}
    whole = [
        name
        for name in requests
        if recorded[name]["__main__:Handler.do_GET"] == 1 and recorded[name]["__main__:compute"] == 1
    ]
    assert all(recorded[name]["__main__:Handler.do_GET"] <= 1 for name in requests), recorded
    newest = sorted(requests, key=lambda name: int(re.match(r"Thread-(\d+)", name).group(1)))[-2:]
    cut = {
        name: (threads[name]["open_at_start"], recorded[name])
        for name in requests
        if recorded[name]["__main__:Handler.do_GET"] and name not in whole
    }
    assert whole and all(at_start or name in newest for name, (at_start, _) in cut.items()), cut
    # compute's share of the time is what its fib calls cost: among the top 25 rows only while each call
    # cost a frame object (the profile hook on 3.12+), so all rows are asked for.
    summary = tracetop("summary", "exp", "--top", "1000", cwd=tmp_path)
    assert summary.returncode == 0 and "already running when the measurement began" in summary.stdout
    assert "__main__:compute" in summary.stdout
    converted = tracetop("convert", "exp", "--to", "chrome", cwd=tmp_path)
    assert converted.returncode == 0, converted.stderr
    with view_server(experiment) as (url, _):
        with urllib.request.urlopen(url + "api/meta", timeout=60) as answer:
            assert {lane["name"] for lane in json.load(answer)["lanes"]} == set(threads)
    # Left as it was: no hook anywhere, and serving.
    assert server.get("/hooks") == "(None, None)"
    assert server.get("/work?n=10") == str(sum(_fib(k) for k in range(10)))


def _fib(n):
    return n if n < 2 else _fib(n - 1) + _fib(n - 2)


def test_cpu_threads_measured_twice_then_as_fast_as_before(tmp_path, spinners):
    spinner, control = spinners
    threads_before = sorted(os.listdir(f"/proc/{spinner.pid}/task"))
    for n in (1, 2):
        completed = attach(spinner.pid, "--duration", "2", "--output", f"exp{n}", cwd=tmp_path)
        assert completed.returncode == 0, completed.stderr
        experiment = tmp_path / f"exp{n}"
        assert_complete(experiment)
        for worker in ("worker-0", "worker-1", "worker-2"):
            recorded = enters(experiment, worker)
            assert recorded["__main__:batch"] > 0 and recorded["__main__:step"] > 0, (worker, recorded)
            assert threads_of(experiment)[worker]["open_at_start"] >= 2  # worker(), run() ... bootstrap
    # Left as it was: the same threads, none of tracetop's. Its speed, paired with a copy never attached to,
    # is measured by bench/attach.py (no test asserts a timing).
    assert sorted(os.listdir(f"/proc/{spinner.pid}/task")) == threads_before


def test_killing_the_attaching_command_detaches(tmp_path, server):
    process = attaching(server.pid, "--output", "exp", cwd=tmp_path)
    server.get("/work?n=5")
    process.kill()
    process.wait()
    ended(tmp_path / "exp")
    assert_complete(tmp_path / "exp")
    assert server.get("/hooks") == "(None, None)"
    assert server.get("/work?n=10") == str(sum(_fib(k) for k in range(10)))


def test_ctl_detach(tmp_path, server):
    process = attaching(server.pid, "--output", "exp", cwd=tmp_path)
    server.get("/work?n=5")
    # Measured as `tracetop run` measures: through sys.monitoring on 3.12+ (its tool named tracetop), which
    # leaves the profile hooks alone; before, with the profile hook, which threading hands to new threads.
    hooks = server.get("/hooks")
    assert hooks == "(None, None, 'tracetop')" if sys.version_info >= (3, 12) else hooks != "(None, None)", hooks
    detached = tracetop("ctl", str(server.pid), "detach", cwd=tmp_path)
    assert detached.returncode == 0, detached.stderr
    assert detached.stderr == f"tracetop: process {server.pid}: detached\n"
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0 and "tracetop: detached from process" in stderr, stderr
    assert enters(tmp_path / "exp")["__main__:compute"] == 1
    assert server.get("/hooks") == "(None, None)"


def test_ctrl_c_detaches(tmp_path, server):
    process = attaching(server.pid, "--output", "exp", cwd=tmp_path)
    server.get("/work?n=5")
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    assert re.search(r"^tracetop: detached from process \d+; experiment in exp/", stderr, re.M), stderr
    assert_complete(tmp_path / "exp")
    assert server.get("/hooks") == "(None, None)"


def test_ctl_detach_refuses_a_process_measured_by_run(tmp_path):
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tracetop",
            "run",
            "--live",
            "--output",
            "exp",
            "-c",
            "import sys; print('up', flush=True); sys.stdin.readline()",
        ],
        cwd=tmp_path,
        env=environment(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout.readline() == "up\n"
    refused = tracetop("ctl", str(process.pid), "detach", "--timeout", "1", cwd=tmp_path)
    process.communicate("\n", timeout=60)
    assert refused.returncode != 0
    assert "only a process measured by `tracetop attach` detaches" in refused.stderr
    assert len(refused.stderr.splitlines()) == 1


def _refused(completed, text):
    assert completed.returncode == 1, completed.stderr
    lines = completed.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tracetop: error: ") and text in lines[0], completed.stderr


def test_refuses_what_it_cannot_enter(tmp_path):
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        _refused(attach(sleeper.pid, cwd=tmp_path), f"process {sleeper.pid} (sleep) is not a Python process")
    finally:
        sleeper.kill()
    assert not list(tmp_path.iterdir())  # no experiment left behind
    _refused(attach(2**22 + 1, cwd=tmp_path), f"no process {2**22 + 1}")


def test_refuses_another_users_process(tmp_path):
    if os.geteuid() == 0:
        other = subprocess.Popen(["sleep", "60"], user=65534)
    else:
        other = None
    try:
        pid = other.pid if other else 1
        _refused(attach(pid, cwd=tmp_path), f"process {pid} is another user's")
    finally:
        if other:
            other.kill()


def test_refuses_another_python(tmp_path):
    mine = f"{sys.version_info[0]}.{sys.version_info[1]}"
    other = _another_python(mine)
    if other is None:
        pytest.skip(f"no Python but {mine} here")
    process = subprocess.Popen(
        [other, "-c", "import sys; print('up', flush=True); sys.stdin.readline()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout.readline() == "up\n"
        _refused(attach(process.pid, cwd=tmp_path), f"this tracetop is built for Python {mine}")
        process.stdin.write("\n")
        process.stdin.flush()
        assert process.wait(timeout=30) == 0  # untouched: it goes on and ends as it would have
    finally:
        process.kill()


def _another_python(mine):
    """A CPython 3 of another version than `mine`: one of pyenv's, or on PATH (not a pyenv shim)."""
    found = []
    try:
        root = subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip()
        found += sorted(glob.glob(os.path.join(root, "versions", "3.*", "bin", "python3.*[0-9]")))
    except FileNotFoundError:
        pass
    found += [shutil.which(f"python3.{minor}") for minor in range(9, 15)]
    return next(
        (path for path in found if path and "/shims/" not in path and not os.path.basename(path).endswith(mine)), None
    )


JOINING = """
import threading, time
def work():
    return sum(i * i for i in range(1000))
def loop():
    while True:
        work()
        time.sleep(0.001)
threading.Thread(target=loop, daemon=True).start()
print("up", flush=True)
threading.Event().wait()
"""


@before_3_11
@pytest.mark.serial  # gdb must see a thread let the GIL go within attach's START_SECONDS, however loaded the machine
def test_main_thread_waiting_in_a_join(tmp_path):
    """No pending call runs: gdb has a thread that lets the GIL go run tracetop's code."""
    program = subprocess.Popen([sys.executable, "-I", "-S", "-c", JOINING], stdout=subprocess.PIPE, text=True)
    try:
        assert program.stdout.readline() == "up\n"
        completed = attach(program.pid, "--duration", "1", "--output", "exp", cwd=tmp_path)
        assert completed.returncode == 0, completed.stderr
        assert_complete(tmp_path / "exp")
        assert enters(tmp_path / "exp", "Thread-1 (loop)")["__main__:work"] > 0
        assert program.poll() is None
    finally:
        program.kill()


def test_a_program_running_no_python_is_refused_and_left_as_it_was(tmp_path):
    program = subprocess.Popen(
        [
            sys.executable,
            "-I",
            "-S",
            "-c",
            "import sys; print('up', flush=True); line = sys.stdin.readline(); print(line[::-1])",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert program.stdout.readline() == "up\n"
        _refused(attach(program.pid, cwd=tmp_path), "ran no Python code in its main thread")
        assert not list(tmp_path.iterdir())
        # Now its main thread runs the pending call, which finds it was given up, and does nothing.
        stdout, stderr = program.communicate("olleh\n", timeout=30)
        assert (program.returncode, stdout, stderr) == (0, "\nhello\n", "")
    finally:
        program.kill()


def test_refuses_a_process_already_measured(tmp_path):
    measured = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tracetop",
            "run",
            "--output",
            "exp",
            "-c",
            "import time\nprint('up', flush=True)\nwhile True: time.sleep(0.01)",
        ],
        cwd=tmp_path,
        env=environment(),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert measured.stdout.readline() == "up\n"
        _refused(attach(measured.pid, cwd=tmp_path), "a measurement is already running in this process")
    finally:
        measured.kill()


@needs_tmux
def test_top_attaches_and_quitting_detaches(tmp_path, server):
    """`tracetop top --attach PID`: the server's functions on top's screen; quitting top detaches."""
    load = server.load()
    screen = Screen(tmp_path, [sys.executable, "-m", "tracetop", "top", "--attach", server.pid])
    try:
        lines = screen.wait(
            "the server's fib", lambda lines: "__main__:fib" in [row.function for row in rows(lines)], timeout=120
        )
        assert f"pid {server.pid}" in lines[0], lines
        screen.keys("q")
    finally:
        screen.close()
        server._stop.set()
        load.join()
    (experiment,) = tmp_path.glob(f"tracetop-*_{server.pid}")
    ended(experiment)
    assert_complete(experiment)
    assert enters(experiment)["__main__:compute"] >= 1
    assert server.get("/hooks") == "(None, None)"
    assert server.get("/work?n=10") == str(sum(_fib(k) for k in range(10)))


@needs_object_counting
def test_objects_and_live(tmp_path, server):
    """--objects counts what the process makes from the attach on, to the end (the last counts, since the
    last batch, are recorded by tracetop's own thread, which ends the measurement); --live (always on) lists
    it for top."""
    process = attaching(server.pid, "--objects", "--live", "--output", "exp", cwd=tmp_path)
    for _ in range(3):
        server.get("/work?n=5")
    listed = tracetop("top", "--list", cwd=tmp_path)
    assert re.search(
        rf"^ *{server.pid}  on .*attach_server\.py \({re.escape(str(tmp_path / 'exp'))}\)$", listed.stdout, re.M
    ), listed.stdout
    assert tracetop("ctl", str(server.pid), "detach", cwd=tmp_path).returncode == 0
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    assert_complete(tmp_path / "exp")
    made = collections.Counter()
    for *_, events, _, _ in streams(tmp_path / "exp"):
        for event in events:
            if event[0] == "objects":
                made[event[3]] += event[5]
    assert made["__main__:Handler"] >= 3, made  # one per request
    assert server.get("/hooks") == "(None, None)"


def _refused_untouched(command, pid_text, program, tmp_path):
    """`command` (an attach) is refused in one line holding `pid_text`; `program` (reading a line, writing it
    back reversed) was left as it was."""
    completed = subprocess.run(command, cwd=tmp_path, env=environment(), capture_output=True, text=True, timeout=120)
    _refused(completed, pid_text)
    assert not list(tmp_path.iterdir())
    stdout, stderr = program.communicate("olleh\n", timeout=30)
    assert (program.returncode, stdout, stderr) == (0, "\nhello\n", "")


REVERSING = "import sys{}; print('up', flush=True); line = sys.stdin.readline(); print(line[::-1])"


def test_refuses_a_process_another_tracer_traces(tmp_path):
    """The kernel refuses gdb's ptrace: the process has a tracer already (here this test's process)."""
    program = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", REVERSING.format("")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert program.stdout.readline() == "up\n"
        libc = ctypes.CDLL(None, use_errno=True)
        libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
        assert libc.ptrace(0x4206, program.pid, None, None) == 0, os.strerror(ctypes.get_errno())  # PTRACE_SEIZE
        _refused_untouched(
            [sys.executable, "-m", "tracetop", "attach", str(program.pid)],
            f"process {program.pid} is already traced by process {os.getpid()} (",
            program,
            tmp_path,
        )
    finally:
        program.kill()


def test_refuses_when_ptrace_is_not_permitted(tmp_path):
    """A process made non-dumpable may be traced only with CAP_SYS_PTRACE, which the attaching command is run
    without (as root, setpriv takes it away)."""
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("needs setpriv (util-linux) to run tracetop without CAP_SYS_PTRACE")
        without = ["setpriv", "--bounding-set=-sys_ptrace", "--"]
    else:
        without = []
    program = subprocess.Popen(
        [
            sys.executable,
            "-I",
            "-S",
            "-c",
            REVERSING.format("; import ctypes; ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)"),
        ],  # PR_SET_DUMPABLE 0
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert program.stdout.readline() == "up\n"
        _refused_untouched(
            [*without, sys.executable, "-m", "tracetop", "attach", str(program.pid)],
            f"process {program.pid}: ptrace is not permitted here (",
            program,
            tmp_path,
        )
    finally:
        program.kill()

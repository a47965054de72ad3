"""`tracetop attach PID`: measures a Python process that is already running, then leaves it as it was.

How tracetop gets in: gdb (the debugger Debian ships, driven in batch mode as memray and pyrasite do)
stops the process for one call, Py_AddPendingCall(PyRun_SimpleString, code), and lets it go on. CPython
runs pending calls in the main thread at a point between two bytecodes, where running Python is safe,
unlike calling into the interpreter wherever the debugger stopped it. When the main thread does not run
Python (it waits in join()), gdb waits for a thread about to let the GIL go, and runs the code there
(Attached._at_gil_release). The code, run once whichever way comes first, starts a thread that runs
tracetop/attach.py's BOOTSTRAP: it checks the process's Python against this build, imports this build's
tracetop and measures (tracetop/attach.py). The measurement is always live: the live channel is how
`tracetop ctl PID detach`, Ctrl-C here and `tracetop top` reach it. It ends at the end of --duration, on
detach, or when this command ends (the process watches it through a pidfd), and the process goes on
unmeasured.
"""

import argparse
import contextlib
import importlib.machinery
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from tracetop import _reader, _tracetop, attach, messages
from tracetop.commands import COMMANDS, EXPERIMENT_VIEWS
from tracetop.experiment import Experiment, default_name, describe_stats
from tracetop.messages import CommandError
from tracetop.options import from_keywords
from tracetop.session import command_line
from tracetop.sizes import format_size

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # this build's tracetop/
GDB_SECONDS = 60  # gdb's part: starting, reading symbols, one call
PENDING_SECONDS = 1  # for the main thread to run the pending call, before a thread that lets the GIL go is waited for
START_SECONDS = 10  # for that


class Refused(CommandError):
    """The process cannot be attached to; it was not touched."""

    exit_status = 1


def main(arguments, prog):
    parser = argparse.ArgumentParser(
        prog=prog,
        description=f"{COMMANDS['attach']}. Every thread is measured; the calls already running "
        "are recorded from the moment of attaching, their start marked unknown. The "
        "process goes on unmeasured at the end of --duration, on Ctrl-C, on `tracetop "
        "ctl PID detach`, or when this command ends. Needs gdb and ptrace.",
        allow_abbrev=False,
    )
    parser.add_argument("pid", type=_pid, metavar="PID", help="a Python process of yours")
    parser.add_argument(
        "--duration",
        type=_seconds,
        default=0,
        metavar="SECONDS",
        help="detach after SECONDS (default: at Ctrl-C or `tracetop ctl PID detach`)",
    )
    parser.add_argument(
        "--live",
        action="store_true",
        help="publish to `tracetop top` (an attached process always does: the live channel "
        "is how ctl and Ctrl-C reach it)",
    )
    parser.add_argument("--objects", action="store_true", help="record object creation and destruction")
    parser.add_argument(
        "--output", metavar="DIR", help="the experiment directory (default: tracetop-YYYYMMDD_HHMMSS_<PID> here)"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="tell more")
    namespace = parser.parse_args(arguments)
    attached = begin(namespace.pid, namespace.output, namespace.duration, namespace.objects, namespace.verbose)
    until = f" for {namespace.duration:g} s" if namespace.duration else ""
    try:  # from the line that says how to detach on: a Ctrl-C right after it detaches too
        messages.say(
            f"attached to process {attached.pid} in {attached.attach_seconds:.2f} s; measuring into "
            f"{os.path.join(attached.experiment.shown, '')}{until} (Ctrl-C or `tracetop ctl "
            f"{attached.pid} detach` to detach)"
        )
        outcome = attached.wait()
    except KeyboardInterrupt:
        messages.say(f"detaching from process {namespace.pid}")
        outcome = attached.detach()
    return attached.conclude(outcome)


def begin(pid, output=None, duration=0, objects=False, verbose=False):
    """Attaches to process `pid`; returns the Attached measurement, or raises Refused."""
    messages.verbose = verbose
    check_process(pid)
    gdb = shutil.which("gdb")
    if gdb is None:
        raise Refused("attaching needs gdb, which is not installed (Debian: apt-get install gdb)")
    keywords = {"output": output or default_name(pid=pid), "live": True, "objects": objects, "follow": False}
    configuration = from_keywords(keywords, os.environ)  # the process says what it cannot do (Session.begin)
    experiment = Experiment.create(configuration["output"])
    keywords["output"] = experiment.path
    return Attached(pid, gdb, experiment, keywords, duration)


class Attached:
    """A measurement of another process, from the injection to its report."""

    def __init__(self, pid, gdb, experiment, keywords, duration):
        self.pid = pid
        self.experiment = experiment
        self._gdb_path = gdb
        self.started = time.monotonic()
        self._place = tempfile.mkdtemp(prefix="tracetop-attach-")
        self._status = os.path.join(self._place, "status.json")
        self._bootstrap = os.path.join(self._place, "bootstrap.py")
        constants = {
            "STATUS": self._status,
            "ATTACHER": os.getpid(),
            "DURATION": float(duration),
            "OPTIONS": keywords,
            "COMMAND": command_line(),
            "EXTENSION_SUFFIX": importlib.machinery.EXTENSION_SUFFIXES[0],
            "PACKAGE": PACKAGE,
            "SEARCH_PATH": os.path.dirname(PACKAGE),
        }
        self._claim = os.path.join(self._place, "unclaimed")
        constants["CLAIM"] = self._claim
        with open(self._bootstrap, "w") as out:
            out.write(attach.BOOTSTRAP.format(constants="\n".join(f"{k} = {v!r}" for k, v in constants.items())))
        open(self._claim, "w").close()
        try:
            began = time.time()
            self._gdb(f"call (int)Py_AddPendingCall((int(*)(void*))PyRun_SimpleString, (void*){self._code()})")
            injected = time.time()
            self.status = self._wait_for(lambda status: status, PENDING_SECONDS)
            if self.status is None and _alive(pid):
                self.status = self._at_gil_release()
            if self.status is None:
                raise Refused(
                    f"process {pid} ran no Python code in its main thread, and no thread of it let the "
                    f"GIL go, for {START_SECONDS} s (blocked, or computing without a pause): not attached"
                )
            if self.status["state"] != "attached":
                raise Refused(f"cannot measure process {pid}: {self.status['message']}")
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._claim)  # a pending call that runs later does nothing
            self._cleanup()
            experiment.discard()
            raise
        self.attach_seconds = time.monotonic() - self.started
        messages.detail(
            f"attaching took {self.attach_seconds:.3f} s: gdb {injected - began:.3f} s; the program "
            f"ran tracetop's bootstrap at {self.status['began'] - began:.3f} s, measured from "
            f"{self.status['at'] - began:.3f} s"
        )
        self._said = 0
        self._say(self.status)

    def _code(self):
        """The code the process is made to run, as a C string literal for gdb: it starts a thread that runs the
        bootstrap, and binds no name in __main__, where it runs."""
        code = (
            "try:\n __import__('_thread').start_new_thread(__import__('builtins').exec, "
            f"(__import__('builtins').open({self._bootstrap!r}).read(), {{}}))\nexcept BaseException:\n pass\n"
        )
        return json.dumps(code)  # only ASCII, quotes and \n escaped: a C literal too

    def _at_gil_release(self):
        """When the main thread does not run the pending call (it waits in join(), input(), a long C call): a
        thread about to let the GIL go (PyEval_SaveThread: sleep, I/O, a lock) still holds it, between two of
        its calls, where running Python is as safe as in another thread the moment after. gdb waits for the
        first, has it run the code, and leaves. Returns the status, or None after START_SECONDS.

        gdb's wait is ended by SIGURG sent to the process, which gdb stops on and keeps from the program;
        once a thread is stopped there, SIGURG no longer stops anything, so that it never interrupts the
        call (which would leave the process in gdb's frame)."""
        script = os.path.join(self._place, "at_release.gdb")
        with open(script, "w") as out:
            out.write(
                "set breakpoint pending off\nhandle SIGURG stop nopass\ntbreak PyEval_SaveThread\n"
                "commands\n  silent\n  handle SIGURG nostop noprint nopass\n"
                f"  call (int)PyRun_SimpleString({self._code()})\n  detach\n  quit\nend\n"
                "continue\ndetach\nquit\n"
            )
        waiting = self._gdb_process("-x", script)
        try:
            status = self._wait_for(lambda status: status, START_SECONDS)
        finally:
            try:
                said = waiting.communicate(timeout=0.5)[0]
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGURG)
                said = waiting.communicate(timeout=GDB_SECONDS)[0]
        self._gdb_said(said, "wait")
        return status

    def _gdb_process(self, *arguments):
        command = [
            self._gdb_path,
            "-p",
            str(self.pid),
            "-batch",
            "-nx",
            "-q",
            "-iex",
            "set auto-load off",
            "-iex",
            "set debuginfod enabled off",
            *arguments,
        ]
        return subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )

    def _gdb(self, command):
        """Has gdb make one call in the process, which must return 0."""
        running = self._gdb_process("-ex", command)
        try:
            said = running.communicate(timeout=GDB_SECONDS)[0]
        except subprocess.TimeoutExpired:
            running.send_signal(signal.SIGINT)
            running.communicate(timeout=GDB_SECONDS)
            raise Refused(f"gdb did not get into process {self.pid} within {GDB_SECONDS} s") from None
        if not re.search(r"^\$1 = 0$", said, re.M):
            self._gdb_said(said, "call")

    def _gdb_said(self, said, what):
        """Refuses in one line when gdb could not get in."""
        if "ptrace: Operation not permitted" in said:
            tracer = _tracer_of(self.pid)
            if tracer:
                raise Refused(
                    f"process {self.pid} is already traced by process {tracer} (a debugger or another "
                    "tracer), and a process has one tracer at a time: detach that one first"
                )
            raise Refused(f"process {self.pid}: ptrace is not permitted here ({_ptrace_needs()})")
        if "No symbol" in said or 'Function "PyEval_SaveThread" not defined' in said:
            raise Refused(f"process {self.pid} is not a Python process tracetop can enter (no CPython API in it)")
        if what == "call":
            last = [line for line in said.splitlines() if line.strip()][-1:] or ["no answer"]
            raise Refused(f"gdb could not call into process {self.pid}: {last[0]}")

    def _wait_for(self, done, seconds=None):
        """The status once done(status) is true, None after `seconds` or when the process has ended."""
        deadline = None if seconds is None else time.monotonic() + seconds
        while True:
            status = self._read_status()
            if status and done(status):
                return status
            if not _alive(self.pid) or (deadline is not None and time.monotonic() > deadline):
                return None
            time.sleep(0.01)

    def _read_status(self):
        try:
            with open(self._status) as got:
                return json.load(got)
        except FileNotFoundError:
            return None

    def wait(self):
        """Until the measurement ends; its last status, None when the process ended first."""
        return self._wait_for(lambda status: status["state"] != "attached")

    def detach(self):
        """Asks for the end now and waits for it."""
        try:
            _reader.live_detach(self.pid, timeout=10.0)
        except _tracetop.TraceError as failure:
            if _alive(self.pid):
                messages.warning(str(failure))
        return self.wait()

    def conclude(self, outcome):
        """Says how it ended and where the experiment is; returns the exit status."""
        self._cleanup()
        shown = shlex.quote(self.experiment.shown)
        if outcome is None:
            messages.say(
                f"process {self.pid} ended while measured; experiment in {shown} "
                f"(see: tracetop {EXPERIMENT_VIEWS[0]} {shown})"
            )
            return 0
        self._say(outcome)
        if outcome["state"] != "detached":
            messages.error(f"process {self.pid}: the measurement failed: {outcome.get('message')}")
            return 1
        stats = outcome["stats"] or {}
        counts = f" ({stats['events']} events, {format_size(stats['bytes'])})" if stats else ""
        messages.say(
            f"detached from process {self.pid}; experiment in {os.path.join(self.experiment.shown, '')}"
            f"{counts}; see: tracetop {EXPERIMENT_VIEWS[0]} {shown}"
        )
        if stats:
            messages.detail(f"recorded {describe_stats(stats)}")
        return 0

    def _say(self, status):
        """What the process had to say (its stderr is the program's), once."""
        for line in status.get("messages", [])[self._said :]:
            messages.say(line)
        self._said = len(status.get("messages", []))

    def leave(self):
        """Leaves the measurement to end with this process (`tracetop top --attach`), unreported."""
        self._cleanup()

    def _cleanup(self):
        shutil.rmtree(self._place, ignore_errors=True)


def check_process(pid):
    """Refuses, in one line, a process tracetop cannot attach to, before touching it."""
    try:
        with open(f"/proc/{pid}/status") as status:
            fields = dict(line.split(":", 1) for line in status if ":" in line)
    except FileNotFoundError:
        raise Refused(f"no process {pid}") from None
    uid = int(fields["Uid"].split()[1])
    if uid != os.geteuid():
        raise Refused(f"process {pid} is another user's (uid {uid}): tracetop attaches to processes of its own user")
    if pid == os.getpid():
        raise Refused("tracetop cannot attach to itself")
    python = _python_of(pid)
    if python is None:
        raise Refused(f"process {pid} ({fields['Name'].strip()}) is not a Python process")
    ours = f"{sys.version_info[0]}.{sys.version_info[1]}{sys.abiflags}"
    if python and python != ours:
        raise Refused(
            f"process {pid} runs Python {python}, this tracetop is built for Python {ours}: attach "
            f"with the tracetop installed for Python {python}"
        )
    needs = _ptrace_refused()
    if needs:
        raise Refused(f"process {pid}: ptrace is not permitted here ({needs})")


def _python_of(pid):
    """The version of the Python that process `pid` runs ("3.11", "3.13t"), "" when it is Python of a
    version not known from outside, None when it is not Python."""
    try:
        with open(f"/proc/{pid}/maps") as maps:
            libraries = {line.split()[-1] for line in maps if "/libpython3" in line}
        exe = os.readlink(f"/proc/{pid}/exe")
    except PermissionError:  # the kernel asks what ptrace asks to show them (e.g. of a process made non-dumpable)
        raise Refused(f"process {pid}: ptrace is not permitted here ({_ptrace_needs()})") from None
    except OSError:
        return None
    for library in libraries:
        found = re.search(r"/libpython(3\.\d+[a-z]*)\.so", library)
        if found:
            return found.group(1)
    found = re.fullmatch(r"python(3\.\d+[a-z]*)", os.path.basename(exe))
    if found:
        return found.group(1)
    try:
        with open(f"/proc/{pid}/exe", "rb") as binary:
            return "" if b"Py_AddPendingCall\0" in binary.read() else None
    except OSError:
        return None


def _ptrace_refused():
    """What the system needs for tracetop to trace a process that is not its child; "" when nothing."""
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as scope:
            level = int(scope.read())
    except (OSError, ValueError):
        return ""
    if level == 0 or (level in (1, 2) and _has_cap_sys_ptrace()):
        return ""
    return _ptrace_needs(level)


def _ptrace_needs(level=None):
    if level is None:
        try:
            with open("/proc/sys/kernel/yama/ptrace_scope") as scope:
                level = int(scope.read())
        except (OSError, ValueError):
            return "ptrace is blocked, e.g. by a container's seccomp profile: allow ptrace or add CAP_SYS_PTRACE"
    if level == 3:
        return "kernel.yama.ptrace_scope is 3, which forbids ptrace until reboot"
    return (
        f"kernel.yama.ptrace_scope is {level}: run `sudo sysctl kernel.yama.ptrace_scope=0`, or give tracetop "
        "CAP_SYS_PTRACE"
    )


def _tracer_of(pid):
    """The process that traces process `pid`, as "PID (name)"; "" when none (or it cannot be told)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            tracer = next((line.split()[1] for line in status if line.startswith("TracerPid:")), "0")
        if tracer == "0":
            return ""
        with open(f"/proc/{tracer}/comm") as comm:
            return f"{tracer} ({comm.read().strip()})"
    except OSError:
        return ""


def _has_cap_sys_ptrace():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) & (1 << 19))
    return False


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, IndexError):
        return False


def _pid(text):
    if not text.isdigit() or int(text) == 0:
        raise argparse.ArgumentTypeError(f"not a process id: {text!r}")
    return int(text)


def _seconds(text):
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}")
    return seconds

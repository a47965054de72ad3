"""The experiment directory: its name, and the files tracetop writes there beside the trace that the C
core writes (config.txt, MANIFEST.md, profile.txt)."""

import errno
import os
import stat
import sys
import time
from errno import EFBIG, EINVAL
from stat import S_ISREG

import tracetop
from tracetop import _reader, _tracetop, messages
from tracetop.commands import COMMANDS, EXPERIMENT_VIEWS
from tracetop.sizes import format_size

# Rows of each table in profile.txt, and in `tracetop summary` unless told otherwise.
PROFILE_ROWS = 25

# What each entry beside MANIFEST.md is, for MANIFEST.md, which lists those present.
CONTENTS = {
    "config.txt": "the effective configuration, one `TRACETOP_NAME=value` per line "
    "(set as environment variables, they repeat the measurement)",
    "trace/": "the native trace: compact binary chunks, per process (`trace/<pid>/`) and thread",
    "profile.txt": "the text summary, as `tracetop summary` prints it",
    **{
        _reader.default_name(format): f"the trace in {format} format (`--format {format}`, `tracetop convert "
        f"--to {format}`)"
        for format in _reader.FORMATS
    },
    "report.html": "the report, one self-contained HTML file (`tracetop report`)",
    "view.idx": "the viewer's index of the trace (`tracetop view` makes it, and remakes it when the trace changes)",
}


class Provenance:
    """How an experiment was made, for MANIFEST.md."""

    def __init__(self, command, program, working_directory, configuration, started):
        self.command = command  # the command line that made it
        self.program = program  # what ran: the script, "-m module", "-c"
        self.working_directory = working_directory
        self.configuration = configuration  # the lines of config.txt
        self.started = started  # time.time()
        self.ended = None  # None while running, and forever after a crash
        self.exit_status = None  # negative: killed by that signal
        self.stats = None  # from _tracetop.stop()
        self.objects = None  # with --objects: how they were counted, or why they could not be


class Experiment:
    """An experiment directory, made for one measurement."""

    def __init__(self, path, shown, created):
        self.path = path  # absolute, so that the program may change its working directory
        self.shown = shown  # as the user gave it (or the default name), for messages
        self._created = created

    @classmethod
    def create(cls, requested=None, shared=False, overwrite=True, program=None):
        """The directory `requested` (default: tracetop-<program>-YYYYMMDD_HHMMSS_<pid> here), made or found empty. One
        that holds an earlier experiment (tracetop's or Score-P's) is renamed with a timestamp, as Score-P
        does, unless `overwrite` is false (SCOREP_OVERWRITE_EXPERIMENT_DIRECTORY=false): then it is an error,
        as is any other directory that is not empty. `shared`: the other
        processes of an MPI job may have put their traces there already."""
        shown = requested or default_name(program)
        path = os.path.abspath(shown)
        try:
            os.makedirs(path, mode=DIRECTORY_MODE)
            return cls(path, shown, created=True)
        except FileExistsError:
            pass
        except OSError as problem:
            raise _tracetop.TraceError(f"cannot create experiment directory {shown!r}: {problem.strerror}") from None
        try:
            _check_private(path, shown)
            entries = set(os.listdir(path))
            if not entries - ({"trace"} if shared else set()):
                return cls(path, shown, created=False)
            if not entries & EXPERIMENT_MARKS:  # the user's own directory (--output .): never moved
                raise _tracetop.TraceError(
                    f"experiment directory {shown!r} exists and is not empty, and holds no experiment to set aside"
                )
            set_aside(path, shown, overwrite)
            os.makedirs(path, mode=DIRECTORY_MODE)
        except OSError as problem:
            raise _tracetop.TraceError(f"cannot use {shown!r} as experiment directory: {problem.strerror}") from None
        return cls(path, shown, created=True)

    @classmethod
    def join(cls, path):
        """The directory `path`, which another process of the measurement makes (rank 0 of an MPI job)."""
        try:
            os.makedirs(path, mode=DIRECTORY_MODE, exist_ok=True)
            _check_private(path, path)
        except OSError as problem:
            raise _tracetop.TraceError(f"cannot create experiment directory {path!r}: {problem.strerror}") from None
        return cls(os.path.abspath(path), path, created=False)

    def discard(self):
        """Removes the directory again when this measurement made it (after a failed start)."""
        if self._created:
            import shutil  # only here: it imports bz2, lzma ...

            shutil.rmtree(self.path, ignore_errors=True)

    def remove_trace(self):
        """Removes the native trace once what was asked of it is made (--no-trace, SCOREP_ENABLE_TRACING=false):
        measuring streams it to disk either way, so that the profile is exact, memory bounded and a crash
        loses nothing; only what is kept at the end differs."""
        import shutil  # only here: it imports bz2, lzma ...

        shutil.rmtree(os.path.join(self.path, "trace"), ignore_errors=True)
        try:
            os.remove(os.path.join(self.path, "view.idx"))
        except FileNotFoundError:
            pass

    def write(self, name, text):
        try:
            with open(_reader.open_output(os.path.join(self.path, name)), "w", encoding="utf-8") as file:
                file.write(text)
        except OSError as problem:
            raise _tracetop.TraceError(f"cannot write {name} in {self.shown!r}: {problem.strerror}") from None

    def write_profile(self):
        """Writes profile.txt from the trace, which this run has just written (its records' checksums are for a
        later read: profile.txt takes the call trees); returns what the reader found cut or damaged: (problems, corrupt)."""
        text, problems, corrupt = _reader.summary(self.path, top=PROFILE_ROWS, trust_records=True)
        self.write("profile.txt", text)
        return problems, corrupt

    def write_manifest(self, provenance):
        self.write("MANIFEST.md", "\n".join(self._manifest(provenance)) + "\n")

    def _manifest(self, made):
        yield f"# tracetop experiment {os.path.basename(self.path)}"
        yield ""
        yield "## How it was made"
        yield ""
        yield f"- command: `{made.command}`"
        yield f"- program: `{made.program}`, in `{made.working_directory}`"
        yield f"- tracetop {tracetop.__version__}, Python {python_version()} (`{sys.executable}`)"
        yield f"- started: {_when(made.started)}"
        if made.ended is None:
            yield (
                "- ended: not normally, or not yet (killed, crashed or still running); the trace is readable "
                "up to its last complete chunk, and `tracetop summary` says what was cut"
            )
        else:
            status = "" if made.exit_status is None else f", {describe_exit(made.exit_status)}"
            yield f"- ended: {_when(made.ended)}{status}"
        if made.stats:
            yield f"- recorded: {describe_stats(made.stats)}"
            if made.stats["lost"]:
                yield f"{CUT_SHORT} {os.getpid()}: {describe_loss(made.stats)}"
            elif made.stats["stalls"]:
                yield f"- writing paused: {describe_stalls(made.stats)}"
            if made.stats["keep_errno"]:
                yield f"- kept whole: {describe_unbounded(made.stats)}"
            elif made.stats["dropped"]:
                yield (
                    f"- dropped by --keep: the oldest {_count(made.stats['dropped'], 'chunk')} of events of process "
                    f"{os.getpid()} (`tracetop summary` says how long); its profile is the whole run's"
                )
        if made.objects:
            yield f"- objects: {made.objects}"
        for line in not_recorded():
            yield f"- not recorded: {line}"
        yield "- configuration:"
        yield ""
        yield "  ```"
        yield from (f"  {line}" for line in made.configuration)
        yield "  ```"
        yield ""
        yield "## What is here"
        yield ""
        for name, what in CONTENTS.items():
            if os.path.exists(os.path.join(self.path, name)):
                yield f"- `{name}`: {what}"
        yield ""
        yield "## How to look at it"
        yield ""
        if made.ended is not None and not os.path.isdir(os.path.join(self.path, "trace")):
            yield "- the trace was not kept (`TRACETOP_ENABLE_TRACING=false`): `profile.txt` and the formats above say it all"
            return
        for command in EXPERIMENT_VIEWS:
            yield f"- `tracetop {command} {messages.shell_quote(self.shown)}`: {COMMANDS[command]}"


# An experiment is its user's alone, like the live channel: its files are made owner-only (src/util/file.h), and
# it is shared by changing its mode (README.md: "The experiment directory").
DIRECTORY_MODE = 0o700


# greenlet (gevent, eventlet) switches a thread between stacks of calls, which tracetop does not follow.
GREENLETS_NOT_FOLLOWED = (
    "greenlet switches are not followed: a greenlet's calls show inside those of the greenlet that ran before it, "
    "and the time it was switched out in the calls it had open"
)


def not_recorded():
    """What this process's measurement does not record, one line each: said as the measurement starts and ends,
    in MANIFEST.md, and kept in the trace, where `summary` says it."""
    lines = [line for line in (_tracetop.gil_unavailable(), _tracetop.tasks_unavailable()) if line]
    if "greenlet" in sys.modules:
        lines.append(GREENLETS_NOT_FOLLOWED)
    return lines


def _check_private(path, shown):
    """TraceError unless `path` is a directory that only this user may change: in one that another user owns or may
    write, that user could plant a link where tracetop writes a file, and have it overwrite what the link names."""
    info = os.stat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise _tracetop.TraceError(f"cannot use {shown!r} as experiment directory: it is not a directory")
    if info.st_uid != os.geteuid():
        raise _tracetop.TraceError(f"cannot use {shown!r} as experiment directory: it belongs to another user")
    if info.st_mode & stat.S_IWOTH or (info.st_mode & stat.S_IWGRP and not _own_group(info.st_gid)):
        raise _tracetop.TraceError(
            f"cannot use {shown!r} as experiment directory: other users may write in it (chmod go-w it first)"
        )


def _own_group(gid):
    """Whether `gid` is this user's own group (a user private group, as a umask of 002 expects: named after the
    user, no other member), whose write permission lets no one else in."""
    import grp  # only here: for a directory its group may write in
    import pwd

    try:
        group, user = grp.getgrgid(gid), pwd.getpwuid(os.geteuid())
    except KeyError:
        return False
    others = [name for name in group.gr_mem if name != user.pw_name]
    return group.gr_name == user.pw_name and user.pw_gid == gid and not others


# What shows a directory holds an experiment that may be set aside: tracetop's files, or Score-P's.
EXPERIMENT_MARKS = {"MANIFEST.md", "config.txt", "trace", "scorep.cfg"}


def set_aside(path, shown, overwrite):
    """Moves the earlier experiment in `path` out of the way, as Score-P does: renamed `<name>-<time it was last
    written>` (then -2, -3, ... if that exists too), said in one line; TraceError unless `overwrite`."""
    if not overwrite:
        raise _tracetop.TraceError(
            f"experiment directory {shown!r} exists and is not empty, and overwriting is off "
            "(SCOREP_OVERWRITE_EXPERIMENT_DIRECTORY=false)"
        )
    base = path + time.strftime("-%Y%m%d_%H%M%S", time.localtime(os.stat(path).st_mtime))
    renamed, number = base, 1
    while os.path.lexists(renamed):
        number += 1
        renamed = f"{base}-{number}"
    os.rename(path, renamed)
    messages.note(
        f"experiment directory {shown!r} existed: renamed to {os.path.join(os.path.dirname(shown), os.path.basename(renamed))!r}"
    )


# The most read of MANIFEST.md or config.txt, which tracetop writes a few KB of: an experiment directory is input,
# and a bigger file there is none of tracetop's.
SMALL_FILE_LIMIT = 1 << 20


def read_small_file(path):
    """The text of `path`, a file tracetop wrote into an experiment, read only if it is a regular file of at most
    SMALL_FILE_LIMIT bytes: opened without waiting (a FIFO would block) and read up to the limit (/dev/zero, or a
    huge file, would fill the memory). OSError with a strerror that says what is wrong otherwise."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        status = os.fstat(descriptor)
        if not S_ISREG(status.st_mode):
            raise OSError(EINVAL, "not a regular file", path)
        if status.st_size > SMALL_FILE_LIMIT:
            raise OSError(EFBIG, f"{format_size(status.st_size)}, more than tracetop writes there", path)
        data = b""
        while len(data) <= SMALL_FILE_LIMIT and (more := os.read(descriptor, SMALL_FILE_LIMIT + 1 - len(data))):
            data += more
        if len(data) > SMALL_FILE_LIMIT:  # it grew since fstat
            raise OSError(EFBIG, "more than tracetop writes there", path)
    finally:
        os.close(descriptor)
    return data.decode("utf-8", errors="replace")


def default_name(program=None, pid=None):
    """The experiment directory when none is named: tracetop-<program>-YYYYMMDD_HHMMSS_<pid>, where <program> is
    what ran as Session.begin names it (a script's name without .py, a module's name, "c" for -c); without a
    program, tracetop-YYYYMMDD_HHMMSS_<pid>. `pid`: the measured process (default: this one)."""
    stamp = time.strftime("%Y%m%d_%H%M%S_") + str(pid or os.getpid())
    name = os.path.basename(program.removeprefix("-m ").removeprefix("-")) if program else ""
    # Read by hand: a regular expression would import re, start-up that every measured process pays.
    name = "".join(c if c.isascii() and (c.isalnum() or c in "_.-") else "_" for c in name.removesuffix(".py"))
    name = name.strip("._-")[:40]
    return f"tracetop-{name}-{stamp}" if name else f"tracetop-{stamp}"


def convert(experiment, format, output=None, thread=None, start=0, stop=2**64 - 1, progress=None, filter=None):
    """Writes the trace of the experiment directory `experiment` in `format` to `output` (default: the format's
    file in the experiment), of the thread `thread` alone when given, between `start` and `stop` (ns since the
    start of the measurement), without the calls of the regions the filter file `filter` excludes; one that takes
    longer than `progress` seconds says how it goes on stderr; returns (the path written, the converter's result)."""
    path = output or os.path.join(experiment, _reader.default_name(format))
    return path, _reader.convert(
        experiment, format, path, thread=thread, start=start, stop=stop, progress=progress, filter=filter
    )


def describe_exit(status):
    if status < 0:
        import signal  # only here: it imports enum

        return f"killed by {signal.Signals(-status).name}"
    return f"exit status {status}"


def describe_stats(stats):
    """What the writer says it recorded (the statistics of _tracetop.stop()), in one line."""
    return (
        f"{_count(stats['events'], 'event')} in {_count(stats['streams'], 'stream')}, "
        f"{format_size(stats['bytes'])} in {_count(stats['chunks'], 'chunk')}; the program waited for the "
        f"writer {_count(stats['waits'], 'time')} ({stats['wait_ns'] / 1e6:.1f} ms)"
    )


def describe_unbounded(stats):
    """Why --keep dropped nothing (the statistics of _tracetop.stop() with keep_errno), in one line."""
    return (
        f"the file system of the trace cannot punch holes ({os.strerror(stats['keep_errno'])}): "
        "nothing was dropped, the trace was kept whole"
    )


# MANIFEST.md's line for a process whose writer had to stop before the end: `tracetop summary` reads it.
CUT_SHORT = "- trace cut short in process"


def describe_loss(stats):
    """Why the writer stopped before the end (the statistics of _tracetop.stop() with `lost`), in words."""
    if stats["lost_errno"] in (errno.ENOSPC, errno.EDQUOT):
        why = "the disk was full"
    elif stats["lost_errno"] in (errno.EMFILE, errno.ENFILE):
        why = "no file descriptor was free"
    elif stats["lost_errno"] in (errno.EEXIST, errno.ELOOP, errno.ESTALE):
        why = "something not made by tracetop lay where it writes, and is left alone"
    else:
        why = "it could not be written"
    return f"{why} ({stats['lost']}); what the program did after that is not recorded"


def describe_stalls(stats):
    """The times the writer could not write for a while and went on, nothing lost, in one line."""
    return (
        f"{_count(stats['stalls'], 'time')}, {stats['stalled_ns'] / 1e9:.2f} s in all, nothing lost; "
        f"the first time: {stats['stall']}"
    )


def describe_problems(problems, corrupt):
    """One line for what a reader found cut or damaged in a trace."""
    more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{'trace damaged' if corrupt else 'trace cut short'}: {problems[0]}{more}"


def _count(number, noun):
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _when(seconds):
    return time.strftime("%Y-%m-%d %H:%M:%S %z", time.localtime(seconds))


def python_version():
    """platform.python_version() without importing platform (re, and more): the first word of sys.version."""
    return sys.version.split()[0]

"""How tracetop speaks to the user: lines on stderr that start with `tracetop:`, so they never mix with
what the measured program prints on stdout."""

import os
import sys

# Whether to say more (`tracetop run -v`, TRACETOP_VERBOSE): details of the measurement, and the
# traceback of an internal error. Set by the measurement's configuration.
verbose = False


class CommandError(Exception):
    """A problem with what the user asked for: reported in one line, without a traceback."""

    exit_status = 2


# Where the lines go instead of stderr when not None (a list): in a process tracetop attached to, whose
# stderr is the program's, the attaching command says them (tracetop/attach.py).
kept = None

# Where the lines go once a measured program runs, when not None: what fd 2 was when the measurement began
# (device, inode, path), so that they reach the terminal or the file tracetop's stderr was, never a file the
# program redirects its own fd 2 to (os.dup2). No descriptor is held for it: the program's descriptors are its
# own (a program that lists them sees what it sees plain). When fd 2 is another file by then, the first one is
# opened again by its path for the line; one that has none (a pipe, a socket) is not said to. Each line is one
# os.write, unbuffered: a line said from a signal handler (Ctrl-C while tracetop finishes) may interrupt another
# being said, which a buffered file refuses.
_stderr = None
_stderr_encoding = "utf-8"


def keep_stderr():
    """As a measurement begins: the lines go to what fd 2 is now, whatever the program makes of it later."""
    global _stderr, _stderr_encoding
    if _stderr is not None:
        return
    try:
        first = os.fstat(2)
        path = os.readlink("/proc/self/fd/2")
    except OSError:  # no fd 2, or no /proc: sys.stderr, as before
        return
    _stderr = (first.st_dev, first.st_ino, path)
    _stderr_encoding = getattr(sys.__stderr__, "encoding", None) or "utf-8"


def _is_first_stderr(fd):
    try:
        now = os.fstat(fd)
    except OSError:
        return False
    return (now.st_dev, now.st_ino) == _stderr[:2]


def _write_to_first_stderr(data):
    fd = 2
    if not _is_first_stderr(2):
        try:
            fd = os.open(_stderr[2], os.O_WRONLY | os.O_APPEND | os.O_NOCTTY | os.O_CLOEXEC)
        except OSError:  # no path to it: a pipe, a socket, a file since removed
            return
        if not _is_first_stderr(fd):
            os.close(fd)
            return
    try:
        while data:
            data = data[os.write(fd, data) :]
    except OSError:  # the terminal gone: nothing to say it on
        pass
    finally:
        if fd != 2:
            os.close(fd)


# What a POSIX shell reads as part of a word, unquoted: shlex.quote's set. shlex itself imports re (and
# enum), more start-up than the rest of tracetop.
_SHELL_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-")


def shell_quote(word):
    """`word` as a shell reads it back, as shlex.quote writes it."""
    if not word:
        return "''"
    if all(c in _SHELL_SAFE for c in word):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"


def say(text):
    if kept is not None:
        kept.append(text)
        return
    line = f"tracetop: {text}\n"
    if _stderr is None:
        print(line, end="", file=sys.stderr, flush=True)
    else:
        _write_to_first_stderr(line.encode(_stderr_encoding, "backslashreplace"))


def note(text):
    say(f"note: {text}")


def warning(text):
    say(f"warning: {text}")


def error(text):
    say(f"error: {text}")


def detail(text):
    """A line said only in verbose mode."""
    if verbose:
        say(text)


def internal_error(failure):
    """Reports a failure that is tracetop's own fault: one line, after the traceback in verbose mode."""
    if verbose:
        import traceback  # not at the top: child processes import this module as they start (tracetop/child.py)

        traceback.print_exception(type(failure), failure, failure.__traceback__)
    error(f"internal error: {type(failure).__name__}: {failure}")

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

# Where the lines go once a measured program runs, when not None: fd 2 as it was when the measurement began
# (a duplicate of it), so that they reach the terminal or the file tracetop's stderr was, never a file the
# program redirects its own fd 2 to (os.dup2). Each line is one os.write, unbuffered: a line said from a signal
# handler (Ctrl-C while tracetop finishes) may interrupt another being said, which a buffered file refuses.
_stderr = None
_stderr_encoding = None


def keep_stderr():
    """As a measurement begins: the lines go to what fd 2 is now, whatever the program makes of it later."""
    global _stderr, _stderr_encoding
    if _stderr is not None:
        return
    try:
        _stderr = os.dup(2)
    except OSError:  # no fd 2: sys.stderr, as before
        return
    _stderr_encoding = getattr(sys.__stderr__, "encoding", None) or "utf-8"


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
        return
    data = line.encode(_stderr_encoding, "backslashreplace")
    try:
        while data:
            data = data[os.write(_stderr, data) :]
    except OSError:  # the terminal gone: nothing to say it on
        pass


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

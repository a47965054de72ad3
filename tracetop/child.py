"""Child processes that start a new interpreter, measured into the experiment of the measurement they descend
from: a subprocess running python, and multiprocessing's spawn and forkserver workers.

While a measurement follows child processes (the default; `--no-follow` turns it off), the environment variable
session.FOLLOW_VARIABLE names its experiment directory, and every child process inherits it. Forked children
measure on by themselves (session.py, src/ext/fork.c). Those that start a new interpreter come here: tracetop
installs tracetop-follow.pth beside the package, whose last line every interpreter of that environment runs as it
starts, and which imports this module only when the variable is set. start() then measures the process into that
experiment, with that experiment's configuration (its config.txt), before the program runs. The program sees
nothing of it in its argv, sys.path, __main__ or sitecustomize.

multiprocessing's own helper processes are not measured: the resource tracker runs no program code, and the fork
server runs none either, but forks the workers, which are measured each from its fork on.
"""

import os
import sys

from tracetop import _tracetop, messages, session
from tracetop.experiment import Experiment, read_small_file
from tracetop.options import from_keywords
from tracetop.session import FOLLOW_VARIABLE, Session, command_line

# The code multiprocessing runs its helper processes with (`python -c CODE`), and what to do with them.
_RESOURCE_TRACKER = "from multiprocessing.resource_tracker import main"
_FORK_SERVER = "from multiprocessing.forkserver import main"

_started = False  # a virtual environment may have its site-packages read twice (lib and lib64)


def start():
    """Measures this process into the experiment named by FOLLOW_VARIABLE (tracetop-follow.pth calls it)."""
    global _started
    if _started:
        return
    _started = True
    try:
        _start(os.environ[FOLLOW_VARIABLE])
    except OSError as failure:  # config.txt
        messages.warning(f"process {os.getpid()} is not measured: {failure.filename}: {failure.strerror}")
    except (_tracetop.TraceError, ValueError) as failure:
        messages.warning(f"process {os.getpid()} is not measured: {failure}")


def _start(directory):
    if _tracetop.active() or _is_tracetop():
        return  # a `tracetop` command, run from a measured program, makes its own experiment or none
    code = _code()
    if code is not None and code.startswith(_RESOURCE_TRACKER):
        return
    configuration = _configuration(directory)
    experiment = Experiment(directory, directory, created=False)
    program, command = _program(), command_line()
    if code is not None and code.startswith(_FORK_SERVER):
        session.join_forked = lambda: _join_forked(experiment, configuration, command)
        return
    Session.join(experiment, configuration, program, command)


def _join_forked(experiment, configuration, command):
    """In a worker forked by the fork server: measured from here on."""
    try:
        Session.join(experiment, configuration, "-c", command)
    except _tracetop.TraceError as failure:
        messages.warning(f"process {os.getpid()} is not measured: {failure}")


def _configuration(directory):
    """The configuration the experiment was made with, from its config.txt."""
    text = read_small_file(os.path.join(directory, "config.txt"))
    settings = dict(line.split("=", 1) for line in text.split("\n") if "=" in line)
    return from_keywords({}, settings)


def _is_tracetop():
    """Whether this interpreter runs tracetop itself: `python -m tracetop`, or the `tracetop` command."""
    return _module() == "tracetop" or os.path.basename(sys.argv[0]) == "tracetop"


def _original_argv():
    """The interpreter's own command line: sys.orig_argv, and before Python 3.10, which lacks it, the kernel's
    copy (while site-packages are read, sys.argv of `python -m MODULE` is only ["-m"])."""
    if hasattr(sys, "orig_argv"):
        return sys.orig_argv
    try:
        with open("/proc/self/cmdline", "rb") as cmdline:
            return [os.fsdecode(argument) for argument in cmdline.read().split(b"\0")[:-1]]
    except OSError:
        return None


def _code():
    """The code of `python -c CODE`, else None."""
    original = _original_argv()
    if sys.argv[0] != "-c" or not original:
        return None
    return _value_of("-c", original)


def _module():
    """The module of `python -m MODULE`, else None."""
    original = _original_argv()
    if sys.argv[0] != "-m" or not original:
        return None
    return _value_of("-m", original)


def _value_of(flag, original):
    """The value of the interpreter option that ends the interpreter's options: `-c CODE`, `-mMODULE`."""
    for index, argument in enumerate(original[1:], 1):
        if argument == flag:
            return original[index + 1] if index + 1 < len(original) else None
        if argument.startswith(flag):
            return argument[len(flag) :]
    return None


def _program():
    """What runs, as `tracetop run` names it: the script, `-m module` or `-c`. While site-packages are read,
    sys.argv[0] is the script, "-c", or "-m" before the module is found."""
    if sys.argv[0] == "-m":
        module = _module()
        return f"-m {module}" if module else "-m"
    return sys.argv[0] or "python"

"""Runs a program under measurement as Python itself would run it.

The program sees what `python` would give it: sys.argv, sys.path[0], a fresh __main__ module, the same
stdin, stdout and stderr. It ends the same way: exit status, sys.exit() message, traceback of an uncaught
exception (without tracetop's frames), death by SIGINT after an uncaught KeyboardInterrupt. Measurement
starts as late as possible, once the program is found and compiled, so that no work of tracetop or
importlib is recorded; it stops after the program's own atexit handlers.
"""

import atexit
import os
import sys
from _signal import SIGINT  # signal's C half: signal itself imports enum, start-up that every run would pay

from tracetop import _tracetop, compat, messages
from tracetop.messages import CommandError
from tracetop.session import OWN_CODE, Session, command_line


def run(program, configuration):
    """Runs `program` (a Script, Module or Code of tracetop.program) under measurement; ends with SystemExit as
    the program would. Once the program has returned, the measurement goes on (for its atexit handlers and its
    other threads): what this function does then calls no function the hooks record (a C function, sys.exit)."""
    command = command_line()
    interrupted = False
    uncaught = None  # the exception that ended the program

    def once_measured():  # registered before the session's stop, so it runs after it
        advice = uncaught is not None and compat.explain(uncaught, installed=configuration["scorep_compat"])
        if advice:
            messages.note(advice)
        if interrupted:
            _die_by_sigint()

    atexit.register(once_measured)
    if not getattr(sys.flags, "safe_path", False):  # python -P adds no directory to sys.path
        sys.path[0] = program.search_path()
    try:
        loaded = program.load()
    except CommandError:
        raise
    except Exception as failure:  # a syntax error, or a failing parent package of `-m`
        _report_uncaught(failure)
        raise SystemExit(1) from None
    sys.argv = loaded.argv
    sys.modules["__main__"] = loaded.main
    namespace = vars(loaded.main)  # before measuring: a call of tracetop's, not the program's
    instrumenter_file = _instrumenter_file(configuration["instrumenter_file"])
    session = Session.begin(configuration, program=program.describe(), command=command)
    try:
        if instrumenter_file:
            _tracetop.run_code(*instrumenter_file)
        _tracetop.run_code(loaded.code, namespace)
    except SystemExit as exit:
        status = exit.code
    except KeyboardInterrupt as failure:
        interrupted, uncaught, status = True, failure, 1
        _report_uncaught(failure)
    except BaseException as failure:
        uncaught, status = failure, 1
        _report_uncaught(failure)
    else:
        status = 0
    # An exit status once the measurement stops (Session.exit_status).
    session.exit_status = -SIGINT if interrupted else 0 if status is None else status
    raise SystemExit(status)  # in place of returning to the sys.exit() of tracetop's caller: a call, recorded


def _instrumenter_file(path):
    """The code of --instrumenter-file and the namespace it runs in, as the Score-P bindings run it: a module of
    its own, before the program; None without one."""
    if path is None:
        return None
    try:
        with open(path, "rb") as source:
            code = compile(source.read(), path, "exec")
    except OSError as failure:
        raise CommandError(f"cannot read the instrumenter file {path}: {failure.strerror}") from None
    except SyntaxError as failure:
        raise CommandError(
            f"the instrumenter file {path} is not Python: {failure.msg} (line {failure.lineno})"
        ) from None
    return code, {"__name__": "__instrumenter__", "__file__": path, "__builtins__": __builtins__}


def _report_uncaught(failure):
    """Reports an exception as Python does when nothing catches it: through sys.excepthook, called as the
    interpreter calls it (no event of its own), without the frames of tracetop that called the program."""
    frames = failure.__traceback__
    while frames is not None and frames.tb_frame.f_code.co_filename.startswith(OWN_CODE):
        frames = frames.tb_next
    failure.__traceback__ = frames
    _tracetop.report_uncaught(type(failure), failure, frames)


def _die_by_sigint():
    """Ends the process as Python does after an uncaught KeyboardInterrupt: killed by SIGINT, so that the
    shell that started it knows it was interrupted."""
    import contextlib
    import signal

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError, OSError):  # replaced or closed by the program
            stream.flush()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)

"""`tracetop top [PID] [--attach PID]`: the live view of processes measured with --live, or of a process it
attaches to. The view is a C program with ncurses, installed beside this package; this command checks its
arguments (attaches) and hands over to it, in the same process: the process attached to watches it, and
is left when it ends."""

import argparse
import os
import sys

from tracetop import messages
from tracetop.commands import COMMANDS, pid_argument
from tracetop.messages import CommandError
from tracetop.suggest import ArgumentParser

PROGRAM = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tracetop-top")

KEYS = (
    "keys: q quit, s sort (own, cpu, total, calls, %desc), c sort by CPU, w the last N seconds or "
    "everything since the start, + and - a longer or shorter window, p pause, r reset, t thread (all "
    "merged, then each live one), / filter, m measurement on/off, o objects (--objects) or functions, "
    "? help. Columns: %OWN own time as a share of the time covered (the threads' spans summed), OWN s "
    "seconds in the function itself, %CPU its CPU time as a share of the time covered (each thread's "
    "sampled CPU time shared among its functions by the time each held the GIL), TOTAL s seconds in "
    "it and what it called, %DESC the share of TOTAL spent in what it called, CALLS, FILE:LINE."
)
WINDOW_MAX = 60  # TT_AGG_WINDOW_MAX (src/top/agg.h)


def main(arguments, prog):
    parser = ArgumentParser(
        prog=prog,
        description=f"{COMMANDS['top']}. Every call is counted: the programs hand their events "
        "over and top adds them up in its own process.",
        epilog=KEYS,
        allow_abbrev=False,
    )
    parser.add_argument(
        "pid",
        nargs="?",
        type=pid_argument,
        metavar="PID",
        help="the process to watch (default: every live process of yours, as they come)",
    )
    parser.add_argument(
        "--attach",
        type=pid_argument,
        metavar="PID",
        help="attach to this Python process (as `tracetop attach PID`) and watch it; quitting top detaches",
    )
    parser.add_argument(
        "--interval",
        type=_interval,
        default=0.1,
        metavar="SECONDS",
        help="redraw every SECONDS (default: %(default)s, ten times a second)",
    )
    parser.add_argument(
        "--window",
        type=_window,
        default=5,
        metavar="SECONDS",
        help="show what ran in the last SECONDS (whole seconds, and the current one; default: %(default)s); "
        f"0: everything since top started. At most {WINDOW_MAX}; the keys w, + and - change it",
    )
    parser.add_argument(
        "--list",
        action="store_true",
        help="list the live processes and exit (channels left by programs that died are removed)",
    )
    parser.add_argument(
        "--drain",
        action="store_true",
        help="no screen: read until the watched processes end, then print what was read (for benchmarks)",
    )
    namespace = parser.parse_args(arguments)
    if namespace.list and (namespace.pid or namespace.drain or namespace.attach):
        parser.error("--list takes no PID, no --attach and no --drain")
    if namespace.pid and namespace.attach:
        parser.error("give the PID to watch or --attach PID, not both")
    if not os.access(PROGRAM, os.X_OK):
        raise CommandError(f"{PROGRAM} is missing: reinstall tracetop")
    if namespace.attach:
        from tracetop.commands import attach  # not at the top: it loads what measuring needs

        # The measurement ends with this process: after the exec, with top.
        attached = attach.begin(namespace.attach)
        attached.leave()
        messages.say(
            f"attached to process {attached.pid} in {attached.attach_seconds:.2f} s; measuring into "
            f"{os.path.join(attached.experiment.shown, '')} until top quits"
        )
        namespace.pid = namespace.attach
    argv = [PROGRAM]
    if namespace.pid:
        argv += ["--pid", str(namespace.pid)]
    if namespace.list:
        argv.append("--list")
    elif namespace.drain:
        argv.append("--drain")
    else:
        argv += ["--interval", repr(namespace.interval), "--window", str(namespace.window)]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(PROGRAM, argv)


def _interval(text):
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0
    if not 0 < seconds <= 10:
        raise argparse.ArgumentTypeError(f"not an interval between 0 and 10 seconds: {text!r}")
    return seconds


def _window(text):
    try:
        seconds = int(text)
    except ValueError:
        seconds = -1
    if not 0 <= seconds <= WINDOW_MAX:
        raise argparse.ArgumentTypeError(f"not a window of 0 to {WINDOW_MAX} whole seconds: {text!r}")
    return seconds

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
    "keys: q quit, s sort (own, total, calls, %desc), p pause, r reset, t thread (all merged, then "
    "each), / filter, m measurement on/off, ? help. Columns: %OWN own time as a share of the time "
    "covered (the threads' spans summed), OWN and TOTAL seconds in the function itself and with what "
    "it called, %DESC the share of TOTAL spent in what it called, CALLS, FILE:LINE."
)


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
        argv += ["--interval", repr(namespace.interval)]
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

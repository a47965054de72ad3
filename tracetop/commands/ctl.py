"""`tracetop ctl PID on|off`: switches the measurement of a process that runs under `tracetop run --live`."""

import argparse

from tracetop import _tracetop, messages
from tracetop.commands import COMMANDS
from tracetop.suggest import ArgumentParser


def main(arguments, prog):
    parser = ArgumentParser(
        prog=prog, description=f"{COMMANDS['ctl']}. Off takes tracetop's hook away from every thread of the "
                               "process, which then runs at its own speed; on puts it back.",
        allow_abbrev=False)
    parser.add_argument("pid", type=_pid, metavar="PID", help="the process, measured with --live")
    parser.add_argument("state", choices=("on", "off"), help="measurement on or off")
    parser.add_argument("--timeout", type=_seconds, default=2.0, metavar="SECONDS",
                        help="how long to wait for the process to answer (default: %(default)s)")
    namespace = parser.parse_args(arguments)
    wanted = namespace.state == "on"
    measuring = _tracetop.live_control(namespace.pid, wanted, timeout=namespace.timeout)
    if measuring != wanted:
        messages.error(f"process {namespace.pid}: measurement stays {'on' if measuring else 'off'} "
                       "(with --instrumenter=none only user regions are recorded)")
        return 1
    messages.say(f"process {namespace.pid}: measurement {namespace.state}")
    return 0


def _pid(text):
    if not text.isdigit() or int(text) == 0:
        raise argparse.ArgumentTypeError(f"not a process id: {text!r}")
    return int(text)


def _seconds(text):
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0
    if not 0 < seconds <= 3600:
        raise argparse.ArgumentTypeError(f"not a number of seconds up to 3600: {text!r}")
    return seconds

"""`tracetop ctl PID on|off`: switches the measurement of a process that runs under `tracetop run --live`."""

import argparse

from tracetop import _tracetop, messages
from tracetop.commands import COMMANDS


def main(arguments, prog):
    parser = argparse.ArgumentParser(
        prog=prog, description=f"{COMMANDS['ctl']}. Off takes tracetop's hook away from every thread of the "
                               "process, which then runs at its own speed; on puts it back.",
        allow_abbrev=False)
    parser.add_argument("pid", type=_pid, metavar="PID", help="the process, measured with --live")
    parser.add_argument("state", choices=("on", "off"), help="measurement on or off")
    namespace = parser.parse_args(arguments)
    wanted = namespace.state == "on"
    measuring = _tracetop.live_control(namespace.pid, wanted)
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

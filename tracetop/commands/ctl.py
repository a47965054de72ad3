"""`tracetop ctl PID on|off|detach`: switches the measurement of a process that runs under `tracetop run --live`,
or ends the measurement of a process `tracetop attach` measures; `tracetop ctl PID objects on|off` switches its
counting of objects."""

import argparse

from tracetop import _reader, messages
from tracetop.commands import COMMANDS, pid_argument
from tracetop.suggest import ArgumentParser

DETACH_SECONDS = 30


def main(arguments, prog):
    parser = ArgumentParser(
        prog=prog,
        usage="%(prog)s [--timeout SECONDS] PID {on,off,detach} | PID objects {on,off}",
        description=f"{COMMANDS['ctl']}. Off takes tracetop's hook away from every thread of the "
        "process, which then runs at its own speed, and records nothing: the time off is a gap, which "
        "the calls open across it leave out; on puts it back. Detach ends the "
        "measurement of a process `tracetop attach` measures: its experiment is "
        "completed and the process goes on unmeasured. `objects on|off` switches "
        "the counting of objects (as --objects) instead.",
        allow_abbrev=False,
    )
    parser.add_argument(
        "pid", type=pid_argument, metavar="PID", help="the process, measured with --live or attached to"
    )
    parser.add_argument(
        "switch",
        nargs="+",
        metavar="[objects] {on,off} | detach",
        help="measurement on or off, or detach; objects on or off: the counting of objects",
    )
    parser.add_argument(
        "--timeout",
        type=_seconds,
        default=2.0,
        metavar="SECONDS",
        help="how long to wait for the process to answer (default: %(default)s)",
    )
    namespace = parser.parse_args(arguments)
    if namespace.switch == ["detach"]:
        # The end includes writing the experiment's profile: given time beyond the answer's.
        _reader.live_detach(namespace.pid, timeout=max(namespace.timeout, DETACH_SECONDS))
        messages.say(f"process {namespace.pid}: detached")
        return 0
    *what, state = namespace.switch
    if state not in ("on", "off") or what not in ([], ["objects"]):
        parser.error(f"expected on, off, detach, objects on or objects off, not {' '.join(namespace.switch)!r}")
    wanted, objects = state == "on", bool(what)
    now = _reader.live_control(namespace.pid, wanted, timeout=namespace.timeout, objects=objects)
    subject = "objects" if objects else "measurement"
    if now != wanted:
        stays = (
            f"objects stay {'counted' if now else 'not counted'} (this Python cannot count them, see its MANIFEST.md)"
            if objects
            else f"measurement stays {'on' if now else 'off'} (with --instrumenter=none only user regions are recorded)"
        )
        messages.error(f"process {namespace.pid}: {stays}")
        return 1
    messages.say(f"process {namespace.pid}: {subject} {state}")
    return 0


def _seconds(text):
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0
    if not 0 < seconds <= 3600:
        raise argparse.ArgumentTypeError(f"not a number of seconds up to 3600: {text!r}")
    return seconds

"""`tracetop view EXP`: the experiment in the web viewer, served on 127.0.0.1 until Ctrl-C.
`tracetop view --live [PID ...]`: the running programs measured with --live, in the live page."""

import argparse
import os
import signal
import webbrowser

from tracetop import messages
from tracetop.commands import COMMANDS
from tracetop.latest import chosen
from tracetop.suggest import ArgumentParser
from tracetop.viewer.experiment import open_index
from tracetop.viewer.live import LiveServer
from tracetop.viewer.server import ViewerServer


def main(arguments, prog):
    parser = ArgumentParser(
        prog=prog,
        description=f"{COMMANDS['view']}. The URL carries a random token: only who has it can read the experiment.",
        allow_abbrev=False,
    )
    parser.add_argument(
        "targets",
        nargs="*",
        metavar="EXP | PID",
        help="the experiment directory (default: the latest in the working directory); with "
        "--live, the processes (default: every live process of yours, as they come)",
    )
    parser.add_argument(
        "--live", action="store_true", help="the running programs measured with --live: timeline, stacks, top, on/off"
    )
    parser.add_argument(
        "--window",
        type=_window,
        default=60.0,
        metavar="SECONDS",
        help="with --live, how far back the page can scroll (default: %(default)g)",
    )
    parser.add_argument("--no-browser", action="store_true", help="print the URL, do not open a browser")
    parser.add_argument(
        "--port", type=_port, default=0, metavar="N", help="the port on 127.0.0.1 (default: any free one)"
    )
    namespace = parser.parse_args(arguments)
    if namespace.live:
        pids = [_pid(parser, text) for text in namespace.targets]
        server = LiveServer(pids, window=namespace.window, port=namespace.port)
    elif len(namespace.targets) > 1:
        parser.error("give one experiment directory (or --live and process ids)")
    else:
        experiment = chosen(namespace.targets[0] if namespace.targets else None)
        server = ViewerServer(experiment, open_index(experiment), port=namespace.port)
    ended_by = None
    for signum in ENDING:
        signal.signal(signum, _ending)
    try:
        print(server.url, flush=True)
        messages.say("serving the viewer on 127.0.0.1; Ctrl-C stops it")
        if not namespace.no_browser and not webbrowser.open(server.url):
            messages.note("no browser could be opened: open the URL above")
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    except _Ending as ending:
        ended_by = ending.signum
    finally:
        server.close()
    if ended_by is not None:
        os.kill(os.getpid(), ended_by)  # its default action, _ending set it back: ends as the signal would have
    return 0


# Signals that end the server as Ctrl-C does: closed first, with the viewers a live page started for it.
ENDING = (signal.SIGTERM, signal.SIGHUP)


class _Ending(BaseException):
    """One of ENDING came: not an Exception, so that nothing on the way mistakes it for a failure."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def _ending(signum, frame):
    signal.signal(signum, signal.SIG_DFL)  # a second one ends the process at once
    raise _Ending(signum)


def _port(text):
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}")
    return int(text)


def _pid(parser, text):
    if not text.isdigit() or int(text) == 0 or int(text) >= 1 << 31:
        parser.error(f"not a process id: {text!r}")
    return int(text)


def _window(text):
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0
    if not 1 <= seconds <= 3600:
        raise argparse.ArgumentTypeError(f"not a window between 1 and 3600 seconds: {text!r}")
    return seconds

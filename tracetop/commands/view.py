"""`tracetop view EXP`: the experiment in the web viewer, served on 127.0.0.1 until Ctrl-C."""

import argparse
import webbrowser

from tracetop import messages
from tracetop.commands import COMMANDS
from tracetop.latest import chosen, experiment_argument
from tracetop.suggest import ArgumentParser
from tracetop.viewer.experiment import open_index
from tracetop.viewer.server import ViewerServer


def main(arguments, prog):
    parser = ArgumentParser(prog=prog, description=f"{COMMANDS['view']}. The URL carries a random "
                            "token: only who has it can read the experiment.", allow_abbrev=False)
    experiment_argument(parser)
    parser.add_argument("--no-browser", action="store_true", help="print the URL, do not open a browser")
    parser.add_argument("--port", type=_port, default=0, metavar="N",
                        help="the port on 127.0.0.1 (default: any free one)")
    namespace = parser.parse_args(arguments)
    namespace.experiment = chosen(namespace.experiment)
    index = open_index(namespace.experiment)
    server = ViewerServer(namespace.experiment, index, port=namespace.port)
    print(server.url, flush=True)
    messages.say("serving the viewer on 127.0.0.1; Ctrl-C stops it")
    if not namespace.no_browser and not webbrowser.open(server.url):
        messages.note("no browser could be opened: open the URL above")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    return 0


def _port(text):
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}")
    return int(text)

"""`tracetop report [EXP] [-o FILE.html]`: one self-contained HTML file of an experiment."""

import os

from tracetop import messages
from tracetop.commands import COMMANDS
from tracetop.latest import chosen, experiment_argument
from tracetop.sizes import format_size
from tracetop.suggest import ArgumentParser
from tracetop.viewer import report
from tracetop.viewer.experiment import open_index


def main(arguments, prog):
    parser = ArgumentParser(
        prog=prog,
        description=f"{COMMANDS['report']}. It needs no network and no tracetop to open, and stays under 5 MB.",
        allow_abbrev=False,
    )
    experiment_argument(parser)
    parser.add_argument("-o", "--output", metavar="FILE.html", help="the file to write (default: EXP/report.html)")
    namespace = parser.parse_args(arguments)
    namespace.experiment = chosen(namespace.experiment)
    namespace.output = namespace.output or os.path.join(namespace.experiment, "report.html")
    index = open_index(namespace.experiment)
    size = report.write(namespace.experiment, index, namespace.output)
    messages.say(f"report in {namespace.output} ({format_size(size)})")
    return 0

"""`tracetop report EXP -o FILE.html`: one self-contained HTML file of an experiment."""

import argparse

from tracetop import messages
from tracetop.commands import COMMANDS
from tracetop.sizes import format_size
from tracetop.viewer import report
from tracetop.viewer.experiment import open_index


def main(arguments, prog):
    parser = argparse.ArgumentParser(prog=prog, description=f"{COMMANDS['report']}. It needs no network and no "
                                     "tracetop to open, and stays under 5 MB.", allow_abbrev=False)
    parser.add_argument("experiment", metavar="EXP", help="the experiment directory")
    parser.add_argument("-o", "--output", required=True, metavar="FILE.html", help="the file to write")
    namespace = parser.parse_args(arguments)
    index = open_index(namespace.experiment)
    size = report.write(namespace.experiment, index, namespace.output)
    messages.say(f"report in {namespace.output} ({format_size(size)})")
    return 0

"""`tracetop summary EXP`: the text profile of an experiment, on stdout."""

import argparse
import re
import sys

from tracetop import _reader
from tracetop.commands import COMMANDS
from tracetop.experiment import PROFILE_ROWS
from tracetop.latest import chosen, experiment_argument, running, tell_problems
from tracetop.suggest import ArgumentParser


def main(arguments, prog):
    parser = ArgumentParser(
        prog=prog, usage="%(prog)s [options] [EXP]", description=f"{COMMANDS['summary']}.", allow_abbrev=False
    )
    experiment_argument(parser)
    parser.add_argument(
        "--top", type=_positive, default=PROFILE_ROWS, metavar="N", help="rows in each table (default: %(default)s)"
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--process",
        type=_number,
        metavar="PID",
        help="the profile of this process alone (default: all processes together)",
    )
    which.add_argument("--rank", type=_number, metavar="N", help="the profile of this MPI rank alone")
    namespace = parser.parse_args(arguments)
    namespace.experiment = chosen(namespace.experiment)
    text, problems, corrupt = _reader.summary(
        namespace.experiment, top=namespace.top, pid=namespace.process, rank=namespace.rank
    )
    alive = running(namespace.experiment)
    for pid in alive:  # not ended yet is not a crash
        text = re.sub(rf"^(process {pid} .*)did not end normally\)$", r"\1still running)", text, flags=re.M)
    sys.stdout.write(text)
    tell_problems(namespace.experiment, problems, corrupt)
    return 0


def _positive(text):
    if not text.isdigit() or int(text) == 0:
        raise argparse.ArgumentTypeError(f"not a positive whole number: {text!r}")
    return int(text)


def _number(text):
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}")
    return int(text)

"""`tracetop summary EXP`: the text profile of an experiment, on stdout."""

import argparse
import sys

from tracetop import _tracetop, messages
from tracetop.commands import COMMANDS
from tracetop.experiment import PROFILE_ROWS, describe_problems


def main(arguments, prog):
    parser = argparse.ArgumentParser(prog=prog, description=f"{COMMANDS['summary']}.",
                                     allow_abbrev=False)
    parser.add_argument("experiment", metavar="EXP", help="the experiment directory")
    parser.add_argument("--top", type=_positive, default=PROFILE_ROWS, metavar="N",
                        help="rows in each table (default: %(default)s)")
    namespace = parser.parse_args(arguments)
    text, problems, corrupt = _tracetop.summary(namespace.experiment, top=namespace.top)
    sys.stdout.write(text)
    if problems:
        messages.warning(describe_problems(problems, corrupt))
        return 1
    return 0


def _positive(text):
    if not text.isdigit() or int(text) == 0:
        raise argparse.ArgumentTypeError(f"not a positive whole number: {text!r}")
    return int(text)

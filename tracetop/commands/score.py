"""`tracetop score EXP`: what each region costs in trace size, as scorep-score tells it, and a filter file to
make the trace smaller."""

import argparse
import sys

from tracetop import _reader, messages
from tracetop.commands import COMMANDS
from tracetop.latest import chosen, experiment_argument, tell_problems
from tracetop.messages import CommandError
from tracetop.sizes import format_size
from tracetop.suggest import ArgumentParser


def main(arguments, prog):
    parser = ArgumentParser(prog=prog, description=f"{COMMANDS['score']}.", allow_abbrev=False)
    experiment_argument(parser)
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "-f",
        "--filter",
        metavar="FILE",
        help="a Score-P filter file: mark the regions it excludes and predict the trace's size with it",
    )
    which.add_argument(
        "--suggest-filter",
        metavar="FILE",
        help="write a Score-P filter file excluding the regions that cost the most bytes for the "
        "least time, and predict the trace's size with it",
    )
    parser.add_argument(
        "--min-percent",
        type=_number,
        default=1.0,
        metavar="P",
        help="suggest only regions taking at least P %% of the trace's bytes (default: %(default)s)",
    )
    parser.add_argument(
        "--max-time-per-visit",
        type=_number,
        default=5.0,
        metavar="US",
        help="suggest only regions with at most US microseconds of their own per visit (default: %(default)s)",
    )
    parser.add_argument("--top", type=_positive, default=25, metavar="N", help="regions listed (default: %(default)s)")
    namespace = parser.parse_args(arguments)
    namespace.experiment = chosen(namespace.experiment)
    result = _reader.score(
        namespace.experiment,
        filter=namespace.filter,
        suggest=namespace.suggest_filter is not None,
        min_percent=namespace.min_percent,
        max_us_per_visit=namespace.max_time_per_visit,
        top=namespace.top,
        progress=1.0,
    )
    if namespace.suggest_filter is not None:
        try:
            with open(namespace.suggest_filter, "w", encoding="utf-8") as file:
                file.write(result["suggested"])
        except OSError as problem:
            raise CommandError(f"cannot write {namespace.suggest_filter}: {problem.strerror}") from None
    sys.stdout.write(result["text"])
    if namespace.suggest_filter is not None:
        count = result["suggested_count"]
        messages.say(
            f"wrote {namespace.suggest_filter}: it excludes {count} region{'' if count == 1 else 's'}; "
            f"predicted native trace {format_size(result['native_bytes'])} "
            f"(run with --filter {namespace.suggest_filter})"
        )
    tell_problems(namespace.experiment, result["problems"], result["corrupt"])
    return 0


def _number(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"not a positive number: {text!r}")
    return value


def _positive(text):
    if not text.isdigit() or int(text) == 0:
        raise argparse.ArgumentTypeError(f"not a positive whole number: {text!r}")
    return int(text)

"""`tracetop convert EXP --to FORMAT [-o OUT]`: the experiment's trace in a standard format."""

from tracetop import _tracetop, messages
from tracetop.commands import COMMANDS
from tracetop.experiment import convert, describe_problems
from tracetop.latest import chosen, experiment_argument
from tracetop.messages import CommandError
from tracetop.sizes import format_size
from tracetop.suggest import ArgumentParser


def main(arguments, prog):
    parser = ArgumentParser(prog=prog, description=f"{COMMANDS['convert']}.", allow_abbrev=False)
    experiment_argument(parser)
    parser.add_argument("--to", required=True, metavar="FORMAT", help=f"one of {', '.join(_tracetop.FORMATS)}")
    parser.add_argument("-o", "--output", metavar="OUT",
                        help="the file to write (otf2: the anchor file NAME.otf2, with NAME.def and NAME/ beside "
                             "it); default: a file named after the format in EXP")
    namespace = parser.parse_args(arguments)
    namespace.experiment = chosen(namespace.experiment)
    if namespace.to not in _tracetop.FORMATS:
        raise CommandError(f"unknown format {namespace.to!r} (known: {', '.join(_tracetop.FORMATS)})")
    path, result = convert(namespace.experiment, namespace.to, namespace.output)
    messages.say(f"wrote {path} ({result['events']} events, {format_size(result['bytes'])})")
    if result["problems"]:
        messages.warning(describe_problems(result["problems"], result["corrupt"]))
        return 1
    return 0

"""`tracetop run`: runs a Python program under measurement, writing an experiment directory."""

import os

from tracetop import messages, options, runner
from tracetop.commands import COMMANDS
from tracetop.messages import CommandError
from tracetop.program import split_command_line


def main(arguments, prog):
    try:
        option_arguments, program = split_command_line(arguments, options.FLAGS_WITH_VALUE)
    except CommandError as problem:
        _parser(prog).error(str(problem))
    option_arguments, not_needed = options.set_aside_not_needed(option_arguments)
    # Well-formed options are read without argparse, which would cost more start-up than all the rest;
    # argparse reads what is not (--help, a mistake to report, no program).
    namespace = options.parse_plainly(option_arguments) if program is not None else None
    if namespace is None:
        parser = _parser(prog)
        namespace = parser.parse_args(option_arguments)
        if program is None:
            parser.error("no program given: name a script, -m module or -c code")
    if not_needed:
        messages.note(f"not needed with tracetop, ignored: {' '.join(not_needed)}")
    return runner.run(program, options.from_command_line(namespace, os.environ))


def _parser(prog):
    from tracetop.suggest import ArgumentParser

    parser = ArgumentParser(
        prog=prog,
        usage="%(prog)s [options] (script.py | -m module | -c code) [args ...]",
        description=f"{COMMANDS['run']}. The options end where the program begins, as for "
        "python: what follows the script, module or code is the program's.",
        epilog="Each option can also be set in the environment, by the names in brackets. Score-P flags "
        f"{', '.join(options.SCOREP_FLAGS_NOT_NEEDED)} are accepted and not needed.",
        allow_abbrev=False,
    )
    options.add_arguments(parser)
    return parser

"""What the notebook set for its measured cells: TRACETOP_/SCOREP_ variables (%%tracetop_env) and `tracetop
run` options (%%tracetop_args), read by the one option table of tracetop.options, as `tracetop run` reads
its command line and environment."""

import argparse
import os
import shlex

from tracetop import options
from tracetop.experiment import default_name
from tracetop.jupyter.cell import free_directory
from tracetop.messages import CommandError

# The Score-P variables tracetop reads (as aliases of its own).
SCOREP_NAMES = frozenset(option.scorep_name for option in options.OPTIONS if option.scorep_name)
TRACETOP_NAMES = frozenset(f"TRACETOP_{option.name}" for option in options.OPTIONS)


class _Parser(argparse.ArgumentParser):
    """`tracetop run` options, failing with CommandError rather than exiting the kernel."""

    def error(self, message):
        raise CommandError(message)


def _parser():
    parser = _Parser(prog="%%tracetop_args", add_help=False, allow_abbrev=False)
    options.add_arguments(parser)
    return parser


class Settings:
    """The environment and options of measured cells, as set so far."""

    def __init__(self):
        self.environment = {}  # NAME -> value, on top of the kernel's own environment
        self.arguments = []  # `tracetop run` options, as given

    def set_environment(self, text):
        """Takes the NAME=value lines of a %%tracetop_env cell (blank lines and # comments aside); returns
        the variables given and those of them that tracetop does not read. Nothing changes when a line or
        a value is wrong."""
        given = parse_environment(text)
        environment = {**self.environment, **given}
        _resolve(self.arguments, environment)  # a bad value fails here, not in the next measured cell
        self.environment = environment
        return given, sorted(name for name in given if name not in TRACETOP_NAMES | SCOREP_NAMES)

    def set_arguments(self, text):
        """Takes the options of a %%tracetop_args cell; returns them, and the Score-P flags among them that
        tracetop does not need. Nothing changes when an option is wrong."""
        arguments, not_needed = check_arguments(text)
        _resolve(arguments, self.environment)
        self.arguments = arguments
        return arguments, not_needed

    def configuration(self, extra=()):
        """The configuration of a measured cell, with options `extra` (of its own magic line) beyond those
        set; its experiment directory is one that no earlier cell wrote."""
        configuration = _resolve(self.arguments + list(extra), self.environment)
        return configuration.replace("output", free_directory(configuration["output"] or default_name()))


def check_arguments(text):
    """The `tracetop run` options in `text`, checked, and the Score-P flags in it that tracetop does not
    need: (options, flags set aside). CommandError for an option that is wrong."""
    arguments, not_needed = options.set_aside_not_needed(split(text))
    _parser().parse_args(arguments)
    return arguments, not_needed


def _resolve(arguments, environment):
    namespace = _parser().parse_args(arguments)
    return options.from_command_line(namespace, {**os.environ, **environment})


def parse_environment(text):
    variables = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, equals, value = line.removeprefix("export ").partition("=")
        name = name.strip()
        if not equals or not name.isidentifier():
            raise CommandError(f"line {number}: {line!r} is not NAME=value")
        if not name.startswith(("TRACETOP_", "SCOREP_")):
            raise CommandError(f"line {number}: {name} is not a TRACETOP_ or SCOREP_ variable")
        variables[name] = value.strip()
    return variables


def split(text):
    try:
        return shlex.split(text, comments=True)
    except ValueError as problem:
        raise CommandError(f"cannot read the options: {problem}") from None

"""The options of a measurement. One table drives the `tracetop run` command line, the environment
(TRACETOP_<NAME>, and the Score-P names read as aliases), the keywords of tracetop.start() and config.txt.

Where several give a value: command line (or start() keyword) > TRACETOP_<NAME> > Score-P name > default.
"""

import argparse
import os
from dataclasses import dataclass, field

from tracetop import _tracetop
from tracetop.messages import CommandError
from tracetop.sizes import parse_size

# The names of `--format`, as those of `tracetop convert --to`: the converters of the C core.
FORMATS = _tracetop.FORMATS

MINIMUM_MEMORY = 1 << 20

# Score-P binding flags that mean nothing to tracetop: accepted as written in Score-P's README, with a note.
SCOREP_FLAGS_NOT_NEEDED = ("--thread", "--compiler", "--nocompiler", "--io", "--mpp=none")


class ConfigurationError(CommandError, ValueError):
    """An option value from the environment or a start() keyword that cannot be used."""


def parse_bool(value):
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word in ("1", "true", "yes", "on"):
        return True
    if word in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"invalid switch value {value!r} (use true or false)")


def parse_memory(value):
    size = value if isinstance(value, int) else parse_size(value)
    if size < MINIMUM_MEMORY:
        raise ValueError(f"memory {value!r} is below the minimum of 1M")
    return size


def parse_formats(value):
    names = value.split(",") if isinstance(value, str) else value
    names = tuple(name.strip() for name in names if name.strip())
    for name in names:
        if name not in FORMATS:
            raise ValueError(f"unknown format {name!r} (known: {', '.join(FORMATS)})")
    return names


def parse_path(value):
    return os.fspath(value)


def choice(*choices):
    def parse_choice(value):
        if value not in choices:
            raise ValueError(f"invalid choice {value!r} (choose from {', '.join(choices)})")
        return value

    return parse_choice


def render(value):
    """A value as config.txt and the environment write it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(value)
    return "" if value is None else str(value)


@dataclass(frozen=True)
class Option:
    key: str  # the Python name: keyword of tracetop.start(), attribute of the parsed command line
    name: str  # TRACETOP_<name> in the environment and in config.txt
    default: object
    parse: object  # str (or an already parsed value) -> value; raises ValueError
    help: str
    flags: tuple = ()  # command-line flags that take a value: --memory 64M, --memory=64M
    switches: dict = field(default_factory=dict)  # command-line flags that set a value: {"--no-trace": False}
    metavar: str = None
    scorep_name: str = None  # the Score-P environment variable read as an alias
    available: bool = True  # False: accepted and recorded, but without effect in this version

    @property
    def environment_names(self):
        return (f"TRACETOP_{self.name}",) + ((self.scorep_name,) if self.scorep_name else ())

    def spelled_on_command_line(self, value):
        for flag, setting in self.switches.items():
            if setting == value:
                return flag
        return f"{self.flags[0]}={render(value)}"


OPTIONS = (
    Option("instrumenter", "INSTRUMENTER", "profile", choice("profile", "trace", "monitoring", "none"),
           "which CPython hook records calls: profile (the default), trace, monitoring (sys.monitoring, "
           "Python 3.12+) or none (user regions only)",
           flags=("--instrumenter", "--instrumenter-type"), metavar="{profile,trace,monitoring,none}"),
    Option("instrumenter_enabled", "ENABLE_INSTRUMENTER", True, parse_bool,
           "start with automatic instrumentation off (user regions and tracetop.instrumenter.enable() still work)",
           switches={"--noinstrumenter": False}),
    Option("c_calls", "C_CALLS", True, parse_bool,
           "record calls of C functions: builtins, C extension functions (default: on)",
           switches={"--c-calls": True, "--no-c-calls": False}),
    Option("memory", "TOTAL_MEMORY", 64 << 20, parse_memory,
           "the buffer budget of the process, e.g. 64M, 2g, 1024k (at least 1M; default: 64M); "
           "never exceeded: full buffers are written to disk",
           flags=("--memory",), metavar="SIZE", scorep_name="SCOREP_TOTAL_MEMORY"),
    Option("output", "EXPERIMENT_DIRECTORY", None, parse_path,
           "the experiment directory (default: tracetop-YYYYMMDD_HHMMSS_<pid> in the working directory)",
           flags=("--output",), metavar="DIR", scorep_name="SCOREP_EXPERIMENT_DIRECTORY"),
    Option("trace", "ENABLE_TRACING", True, parse_bool, "keep the trace (default: on)",
           switches={"--trace": True, "--no-trace": False}, scorep_name="SCOREP_ENABLE_TRACING",
           available=False),
    Option("profile", "ENABLE_PROFILING", True, parse_bool, "write profile.txt (default: on)",
           switches={"--profile": True, "--no-profile": False}, scorep_name="SCOREP_ENABLE_PROFILING"),
    Option("formats", "FORMAT", (), parse_formats,
           f"also write these formats at the end of the run ({', '.join(FORMATS)})",
           flags=("--format",), metavar="FORMAT[,FORMAT...]"),
    Option("filter", "FILTERING_FILE", None, parse_path, "a Score-P filter file: which regions to record",
           flags=("--filter",), metavar="FILE", scorep_name="SCOREP_FILTERING_FILE"),
    Option("live", "LIVE", False, parse_bool, "publish to `tracetop top`",
           switches={"--live": True}),
    Option("objects", "OBJECTS", False, parse_bool,
           "count the objects created and destroyed, by type and by creating function",
           switches={"--objects": True}),
    Option("mpp", "MPP", "none", choice("none", "mpi"), "MPI-aware naming and communication events",
           flags=("--mpp",), switches={"--mpi": "mpi"}, metavar="{none,mpi}"),
    Option("follow", "FOLLOW", True, parse_bool, "measure child processes too (default: on)",
           switches={"--follow": True, "--no-follow": False}),
    Option("scorep_compat", "SCOREP_COMPAT", False, parse_bool,
           "make `import scorep` (scorep.user, scorep.instrumenter) work with tracetop's compatibility module "
           "where the real scorep package is not installed", switches={"--scorep-compat": True}),
    Option("keep_files", "KEEP_FILES", False, parse_bool,
           "keep temporary files (accepted; tracetop makes none)", switches={"--keep-files": True}),
    Option("verbose", "VERBOSE", False, parse_bool, "say more about the measurement",
           switches={"-v": True, "--verbose": True}),
)

# The flags whose value is the next argument when not written --flag=value.
FLAGS_WITH_VALUE = frozenset(flag for option in OPTIONS for flag in option.flags)


class Configuration:
    """The effective options of a measurement, with how each was given when not by default."""

    def __init__(self, values, given_as):
        self._values = values
        self._given_as = given_as  # key -> "--live", "TRACETOP_LIVE=true", ...

    def __getitem__(self, key):
        return self._values[key]

    def replace(self, key, value):
        return Configuration({**self._values, key: value}, self._given_as)

    def lines(self):
        """config.txt: one TRACETOP_<NAME>=value line per option, usable as environment to repeat the run."""
        return [f"TRACETOP_{option.name}={render(self[option.key])}" for option in OPTIONS]

    def unavailable(self):
        """How the user set the options that have no effect in this version."""
        return [self._given_as[option.key] for option in OPTIONS
                if not option.available and self[option.key] != option.default]


def from_command_line(namespace, environ):
    """The configuration of `tracetop run`, from its parsed options and the environment."""
    return _resolve(vars(namespace), environ, Option.spelled_on_command_line)


def from_keywords(keywords, environ):
    """The configuration of tracetop.start(**keywords) and the environment."""
    unknown = sorted(set(keywords) - {option.key for option in OPTIONS})
    if unknown:
        raise TypeError(f"unknown option {unknown[0]!r} (known: {', '.join(option.key for option in OPTIONS)})")
    return _resolve(keywords, environ, lambda option, value: f"{option.key}={value!r}")


def _resolve(given, environ, spell):
    values, given_as = {}, {}
    for option in OPTIONS:
        value = given.get(option.key)
        if value is not None:
            values[option.key] = _parse(option, value, option.key)
            given_as[option.key] = spell(option, values[option.key])
            continue
        values[option.key] = option.default
        for name in option.environment_names:
            text = environ.get(name, "")
            if text:  # set to empty means unset, as in Score-P
                values[option.key] = _parse(option, text, name)
                given_as[option.key] = f"{name}={text}"
                break
    return Configuration(values, given_as)


def _parse(option, value, source):
    try:
        return option.parse(value)
    except ValueError as problem:
        raise ConfigurationError(f"{source}: {problem}") from None


def add_arguments(parser):
    """Adds the options of the table to an argparse parser (values stay None where not given)."""
    for option in OPTIONS:
        help = option.help if option.available else f"{option.help} (not in this version yet)"
        help += f" [{', '.join(option.environment_names)}]"
        if option.flags:
            parser.add_argument(*option.flags, dest=option.key, type=_argument_type(option.parse),
                                metavar=option.metavar, help=help)
            help = "same as " + ", ".join(f"{option.flags[0]}={render(value)}" for value in option.switches.values())
        if option.switches:
            parser.add_argument(*option.switches, dest=option.key, action=_Switch, settings=option.switches,
                                help=help)


def set_aside_not_needed(arguments):
    """Splits `tracetop run` options into those to parse and the Score-P flags tracetop does not need."""
    def not_needed(argument):
        return any(argument == flag or argument.startswith(flag + "=") for flag in SCOREP_FLAGS_NOT_NEEDED)

    return [a for a in arguments if not not_needed(a)], [a for a in arguments if not_needed(a)]


class _Switch(argparse.Action):
    """A flag without value that sets its option to the value of that flag (--trace / --no-trace)."""

    def __init__(self, option_strings, dest, settings, **kwargs):
        super().__init__(option_strings, dest, nargs=0, **kwargs)
        self.settings = settings

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, self.settings[option_string])


def _argument_type(parse):
    def convert(text):
        try:
            return parse(text)
        except ValueError as problem:
            raise argparse.ArgumentTypeError(str(problem)) from None

    return convert

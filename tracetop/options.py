"""The options of a measurement. One table drives the `tracetop run` command line, the environment
(TRACETOP_<NAME>, and the Score-P names read as aliases), the keywords of tracetop.start() and config.txt.

Where several give a value: command line (or start() keyword) > TRACETOP_<NAME> > Score-P name > default.
"""

import os
import sys

from tracetop import _reader
from tracetop.messages import CommandError
from tracetop.sizes import MAX_SIZE, parse_size

# The names of `--format`, as those of `tracetop convert --to`: the converters of the C core.
FORMATS = _reader.FORMATS

MINIMUM_MEMORY = 1 << 20

# Score-P binding flags that mean nothing to tracetop: accepted as written in Score-P's README, with a note.
# (--user: user regions are always recorded; --thread, --compiler, --io: tracetop measures Python, every thread.)
SCOREP_FLAGS_NOT_NEEDED = ("--user", "--nouser", "--thread", "--compiler", "--nocompiler", "--io", "--mpp=none")

# The Score-P bindings' --instrumenter-type values, as tracetop's instrumenters: (ours, what differs or None).
SCOREP_INSTRUMENTERS = {
    "cProfile": ("profile", None),
    "cTrace": ("trace", None),
    "dummy": ("none", "Score-P's dummy instrumenter records no calls; tracetop's none records user regions"),
    "None": ("none", None),
}


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
    if size >= MAX_SIZE:
        raise ValueError(f"memory {value!r} is too large")
    if size < MINIMUM_MEMORY:
        raise ValueError(f"memory {value!r} is below the minimum of 1M")
    return size


def parse_keep(value):
    """--keep: a size as --memory takes it, or 0 (TRACETOP_KEEP=0): the whole trace."""
    size = value if isinstance(value, int) else parse_size(value)
    if size >= MAX_SIZE:
        raise ValueError(f"keep {value!r} is too large")
    if 0 < size < MINIMUM_MEMORY:
        raise ValueError(f"keep {value!r} is below the minimum of 1M")
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


def choice(*choices, aliases=None):
    """A parser of one of `choices`, or of the names in `aliases` (name -> (choice, note))."""
    aliases = aliases or {}

    def parse_choice(value):
        if value in aliases:
            return aliases[value][0]
        if value not in choices:
            raise ValueError(f"invalid choice {value!r} (choose from {', '.join((*choices, *aliases))})")
        return value

    return parse_choice


def render(value):
    """A value as config.txt and the environment write it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(value)
    return "" if value is None else str(value)


class Option:
    """One option. A plain class, not a dataclass: importing dataclasses (inspect, re, enum ...) would double
    the start-up of every measured process."""

    def __init__(
        self, key, name, default, parse, help, flags=(), switches=None, metavar=None, scorep_name=None, notes=None
    ):
        self.key = key  # the Python name: keyword of tracetop.start(), attribute of the parsed command line
        self.name = name  # TRACETOP_<name> in the environment and in config.txt
        self.default = default
        self.parse = parse  # str (or an already parsed value) -> value; raises ValueError
        self.help = help
        self.flags = flags  # command-line flags that take a value: --memory 64M, --memory=64M
        self.switches = switches or {}  # command-line flags that set a value: {"--no-trace": False}
        self.metavar = metavar
        self.scorep_name = scorep_name  # the Score-P environment variable read as an alias
        self.notes = notes or {}  # value as given -> what differs from what Score-P does with it

    @property
    def environment_names(self):
        return (f"TRACETOP_{self.name}",) + ((self.scorep_name,) if self.scorep_name else ())


OPTIONS = (
    Option(
        "instrumenter",
        "INSTRUMENTER",
        "profile",
        choice("profile", "trace", "monitoring", "none", aliases=SCOREP_INSTRUMENTERS),
        "which CPython hook records calls: profile (the default; on Python 3.12+ the same calls through "
        "sys.monitoring, which costs less there), trace, monitoring (sys.monitoring, Python 3.12+) or none "
        "(user regions only); the Score-P bindings' cProfile, cTrace, dummy and None "
        "are profile, trace, none and none",
        flags=("--instrumenter", "--instrumenter-type"),
        metavar="{profile,trace,monitoring,none}",
        notes={alias: note for alias, (_, note) in SCOREP_INSTRUMENTERS.items() if note},
    ),
    Option(
        "instrumenter_enabled",
        "ENABLE_INSTRUMENTER",
        True,
        parse_bool,
        "start with automatic instrumentation off (user regions and tracetop.instrumenter.enable() still work; "
        "--nopython is the Score-P bindings' older name)",
        switches={"--noinstrumenter": False, "--nopython": False},
    ),
    Option(
        "c_calls",
        "C_CALLS",
        True,
        parse_bool,
        "record calls of C functions: builtins, C extension functions (default: on)",
        switches={"--c-calls": True, "--no-c-calls": False},
    ),
    Option(
        "memory",
        "TOTAL_MEMORY",
        64 << 20,
        parse_memory,
        "the buffer budget of the process, e.g. 64M, 2g, 1024k (at least 1M; default: 64M); "
        "never exceeded: full buffers are written to disk",
        flags=("--memory",),
        metavar="SIZE",
        scorep_name="SCOREP_TOTAL_MEMORY",
    ),
    Option(
        "output",
        "EXPERIMENT_DIRECTORY",
        None,
        parse_path,
        "the experiment directory (default: tracetop-YYYYMMDD_HHMMSS_<pid> in the working directory)",
        flags=("--output",),
        metavar="DIR",
        scorep_name="SCOREP_EXPERIMENT_DIRECTORY",
    ),
    Option(
        "overwrite",
        "OVERWRITE_EXPERIMENT_DIRECTORY",
        True,
        parse_bool,
        "an experiment directory that holds an earlier experiment is renamed with a timestamp (default: on); "
        "off: it is an error",
        switches={"--overwrite": True, "--no-overwrite": False},
        scorep_name="SCOREP_OVERWRITE_EXPERIMENT_DIRECTORY",
    ),
    Option(
        "trace",
        "ENABLE_TRACING",
        True,
        parse_bool,
        "keep the trace (default: on); without it the experiment keeps the profile alone. "
        "SCOREP_ENABLE_TRACING=true also writes traces.otf2",
        switches={"--trace": True, "--no-trace": False},
        scorep_name="SCOREP_ENABLE_TRACING",
    ),
    Option(
        "profile",
        "ENABLE_PROFILING",
        True,
        parse_bool,
        "write profile.txt (default: on); SCOREP_ENABLE_PROFILING=true also writes profile.cubex",
        switches={"--profile": True, "--no-profile": False},
        scorep_name="SCOREP_ENABLE_PROFILING",
    ),
    Option(
        "formats",
        "FORMAT",
        (),
        parse_formats,
        f"also write these formats at the end of the run ({', '.join(FORMATS)})",
        flags=("--format",),
        metavar="FORMAT[,FORMAT...]",
    ),
    Option(
        "filter",
        "FILTERING_FILE",
        None,
        parse_path,
        "a Score-P filter file: which regions to record",
        flags=("--filter",),
        metavar="FILE",
        scorep_name="SCOREP_FILTERING_FILE",
    ),
    Option("live", "LIVE", False, parse_bool, "publish to `tracetop top`", switches={"--live": True}),
    Option(
        "keep",
        "KEEP",
        0,
        parse_keep,
        "bound the trace kept on disk: a ring of each process's most recent SIZE of events, e.g. 100M (at least "
        "1M; default: 0, all); the oldest chunks are dropped, the profile stays the whole run's",
        flags=("--keep",),
        metavar="SIZE",
    ),
    Option(
        "objects",
        "OBJECTS",
        False,
        parse_bool,
        "count the objects created and destroyed, by type and by creating function",
        switches={"--objects": True},
    ),
    Option(
        "mpp",
        "MPP",
        "none",
        choice("none", "mpi"),
        "MPI-aware naming and communication events",
        flags=("--mpp",),
        switches={"--mpi": "mpi"},
        metavar="{none,mpi}",
    ),
    Option(
        "follow",
        "FOLLOW",
        True,
        parse_bool,
        "measure child processes too (default: on)",
        switches={"--follow": True, "--no-follow": False},
    ),
    Option(
        "scorep_compat",
        "SCOREP_COMPAT",
        True,
        parse_bool,
        "make `import scorep` (scorep.user, scorep.instrumenter) work with tracetop's compatibility module "
        "where the real scorep package is not installed (default: on)",
        switches={"--scorep-compat": True, "--no-scorep-compat": False},
    ),
    Option(
        "instrumenter_file",
        "INSTRUMENTER_FILE",
        None,
        parse_path,
        "a Python file run just before the program, measured (the Score-P bindings' --instrumenter-file): "
        "it can wrap the program's functions in user regions without changing its code",
        flags=("--instrumenter-file",),
        metavar="FILE",
    ),
    Option(
        "keep_files",
        "KEEP_FILES",
        False,
        parse_bool,
        "keep temporary files (accepted; tracetop makes none)",
        switches={"--keep-files": True},
    ),
    Option(
        "verbose",
        "VERBOSE",
        False,
        parse_bool,
        "say more about the measurement",
        switches={"-v": True, "--verbose": True},
    ),
)

# The formats a Score-P user finds in the experiment when asking the Score-P way: option -> format.
SCOREP_FORMATS = {"trace": "otf2", "profile": "cubex"}

# The flags whose value is the next argument when not written --flag=value.
FLAGS_WITH_VALUE = frozenset(flag for option in OPTIONS for flag in option.flags)
_BY_FLAG = {flag: option for option in OPTIONS for flag in (*option.flags, *option.switches)}


class Configuration:
    """The effective options of a measurement."""

    def __init__(self, values, notes=()):
        self._values = values
        self.notes = list(notes)  # where a Score-P value means something else here, one line each

    def __getitem__(self, key):
        return self._values[key]

    def replace(self, key, value):
        return Configuration({**self._values, key: value}, self.notes)

    def lines(self):
        """config.txt: one TRACETOP_<NAME>=value line per option, usable as environment to repeat the run."""
        return [f"TRACETOP_{option.name}={render(self[option.key])}" for option in OPTIONS]


def from_command_line(namespace, environ):
    """The configuration of `tracetop run`, from its parsed options and the environment."""
    return _resolve(vars(namespace), environ)


def from_keywords(keywords, environ):
    """The configuration of tracetop.start(**keywords) and the environment."""
    unknown = sorted(set(keywords) - {option.key for option in OPTIONS})
    if unknown:
        raise TypeError(f"unknown option {unknown[0]!r} (known: {', '.join(option.key for option in OPTIONS)})")
    return _resolve(keywords, environ)


def _resolve(given, environ):
    values, notes, scorep_formats = {}, [], []
    for option in OPTIONS:
        value = given.get(option.key)
        if value is not None:
            values[option.key] = _parse(option, value, option.key)
            if isinstance(value, str) and value in option.notes:
                notes.append(f"{option.key} {value}: {option.notes[value]}")
            continue
        values[option.key] = option.default
        for name in option.environment_names:
            text = environ.get(name, "")
            if text:  # set to empty means unset, as in Score-P
                values[option.key] = _parse(option, text, name)
                if name == option.scorep_name and values[option.key] is True and option.key in SCOREP_FORMATS:
                    scorep_formats.append(SCOREP_FORMATS[option.key])
                break
    values["formats"] = tuple(dict.fromkeys(values["formats"] + tuple(scorep_formats)))
    return Configuration(values, notes)


def _parse(option, value, source):
    try:
        return option.parse(value)
    except ValueError as problem:
        raise ConfigurationError(f"{source}: {problem}") from None


def parse_plainly(arguments):
    """The options of `tracetop run` as a namespace like add_arguments' parser makes, when every argument is a
    flag of the table spelled out in full with a valid value; else None, and argparse parses them (and
    says what is wrong). argparse costs more to import than tracetop's whole start otherwise."""
    given = {option.key: None for option in OPTIONS}
    index = 0
    while index < len(arguments):
        flag, equals, value = arguments[index].partition("=")
        option = _BY_FLAG.get(flag)
        if option is None:
            return None
        if not equals and flag in option.switches:
            given[option.key] = option.switches[flag]
            index += 1
            continue
        if flag not in option.flags:
            return None
        if not equals:
            index += 1
            if index == len(arguments) or arguments[index].startswith("-"):
                return None
            value = arguments[index]
        try:
            option.parse(value)
        except ValueError:
            return None
        given[option.key] = value  # kept as written, as argparse keeps it: _resolve parses it, and notes it
        index += 1
    return type(sys.implementation)(**given)  # types.SimpleNamespace: types is start-up every run would pay


def add_arguments(parser):
    """Adds the options of the table to an argparse parser (values stay None where not given)."""
    switch = _switch_action()
    for option in OPTIONS:
        help = f"{option.help} [{', '.join(option.environment_names)}]"
        if option.flags:
            parser.add_argument(
                *option.flags, dest=option.key, type=_argument_type(option.parse), metavar=option.metavar, help=help
            )
            help = "same as " + ", ".join(f"{option.flags[0]}={render(value)}" for value in option.switches.values())
        if option.switches:
            parser.add_argument(*option.switches, dest=option.key, action=switch, settings=option.switches, help=help)


def set_aside_not_needed(arguments):
    """Splits `tracetop run` options into those to parse and the Score-P flags tracetop does not need."""

    def not_needed(argument):
        return any(argument == flag or argument.startswith(flag + "=") for flag in SCOREP_FLAGS_NOT_NEEDED)

    return [a for a in arguments if not not_needed(a)], [a for a in arguments if not_needed(a)]


def _switch_action():
    import argparse

    class Switch(argparse.Action):
        """A flag without value that sets its option to the value of that flag (--trace / --no-trace)."""

        def __init__(self, option_strings, dest, settings, **kwargs):
            super().__init__(option_strings, dest, nargs=0, **kwargs)
            self.settings = settings

        def __call__(self, parser, namespace, values, option_string=None):
            setattr(namespace, self.dest, self.settings[option_string])

    return Switch


def _argument_type(parse):
    """Checks a value on the command line, and keeps it as written: _resolve parses it, and notes what a
    Score-P value means here."""
    import argparse

    def check(text):
        try:
            parse(text)
        except ValueError as problem:
            raise argparse.ArgumentTypeError(str(problem)) from None
        return text

    return check

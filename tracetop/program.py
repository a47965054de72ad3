"""What `tracetop run` runs (a script, `-m module` or `-c code`, with its arguments) and how Python itself
would present it to the program: its code object, its fresh __main__ module, sys.argv and sys.path[0]."""

import builtins
import os
import sys

# importlib.machinery's: importing importlib itself (warnings ...) would be start-up every run pays
from _frozen_importlib import BuiltinImporter
from _frozen_importlib_external import SourceFileLoader

from tracetop import _tracetop
from tracetop.fields import Fields
from tracetop.messages import CommandError


class ModuleNotRunnable(CommandError):
    """`-m module` names nothing Python could run (Python says so and exits 1)."""

    exit_status = 1


# Not dataclasses: importing dataclasses (inspect, re, enum ...) would double the start-up of every measured
# process.
class Loaded(Fields):
    """A program ready to run: evaluate `code` in the namespace of `main` with `argv` as sys.argv."""

    __slots__ = ("code", "main", "argv")


class Script(Fields):
    """`python script.py args`"""

    __slots__ = ("path", "args")

    def describe(self):
        return self.path

    def search_path(self):
        return os.path.dirname(os.path.realpath(self.path))

    def load(self):
        try:
            with open(self.path, "rb") as file:
                source = file.read()
        except OSError as problem:
            raise CommandError(f"cannot open {self.path!r}: {problem.strerror}") from None
        filename = os.path.abspath(self.path)
        main = _fresh_main(__file__=filename, __cached__=None, __loader__=SourceFileLoader("__main__", filename))
        return Loaded(_tracetop.compile_program(source, filename), main, [self.path, *self.args])


class Module(Fields):
    """`python -m module args`"""

    __slots__ = ("name", "args")

    def describe(self):
        return f"-m {self.name}"

    def search_path(self):
        return os.getcwd()

    def load(self):
        """Finds the module as `python -m` does (importing its parent packages), without running it."""
        import runpy  # only for -m: it imports importlib.util, contextlib ...

        _, spec, code = runpy._get_module_details(self.name, ModuleNotRunnable)
        main = _fresh_main(
            __file__=spec.origin, __cached__=spec.cached, __loader__=spec.loader, __package__=spec.parent, __spec__=spec
        )
        return Loaded(code, main, [spec.origin, *self.args])


class Code(Fields):
    """`python -c code args`"""

    __slots__ = ("source", "args")

    def describe(self):
        return "-c"

    def search_path(self):
        return ""

    def load(self):
        main = _fresh_main(__loader__=BuiltinImporter)
        _register_source(self.source)
        return Loaded(_tracetop.compile_program(self.source, "<string>"), main, ["-c", *self.args])


def _register_source(source):
    """As `python -c` does from 3.13 on (pythonrun.c's run_mod): the source goes into linecache under its file
    name, "<string>", so that a traceback shows its lines. Before 3.13 it imports no linecache (and so none of
    what linecache imports), and neither does this."""
    if sys.version_info < (3, 13):
        return
    import linecache

    linecache._register_code("<string>", source, "<string>")  # as run_mod calls it: the name in the code's place


def split_command_line(arguments, flags_with_value):
    """Splits `tracetop run` arguments into tracetop's options and the program (None when none is named).
    As for `python`, the options end at the script name, `-m module`, `-c code` or `--`: what follows is
    the program's."""
    index = 0
    while index < len(arguments):
        argument = arguments[index]
        if argument == "--":
            return arguments[:index], _script(arguments[index + 1 :])
        if argument[:2] in ("-m", "-c"):
            attached = len(argument) > 2  # -mjson.tool, as python accepts it
            value_index = index if attached else index + 1
            if value_index == len(arguments):
                raise CommandError(f"argument {argument}: expected one argument")
            value = argument[2:] if attached else arguments[value_index]
            kind = Module if argument.startswith("-m") else Code
            return arguments[:index], kind(value, tuple(arguments[value_index + 1 :]))
        if not argument.startswith("-") or argument == "-":
            return arguments[:index], _script(arguments[index:])
        index += 2 if argument in flags_with_value else 1
    return arguments, None


def _script(arguments):
    return Script(arguments[0], tuple(arguments[1:])) if arguments else None


def _fresh_main(**attributes):
    """A new __main__ module as the interpreter makes one, with `attributes` set."""
    main = type(sys)("__main__")  # types.ModuleType: types is start-up every run would pay
    # Before Python 3.14 the interpreter gives __main__ an empty __annotations__; our own __main__, which
    # has none of its own, shows whether this one does.
    if "__annotations__" in vars(sys.modules["__main__"]):
        main.__annotations__ = {}
    main.__builtins__ = builtins
    for name, value in attributes.items():
        setattr(main, name, value)
    return main

"""The `tracetop` program, as console script and as `python -m tracetop`: picks the command and reports
its failures in one line. `tracetop [run options] script.py ...` is short for `tracetop run ...`."""

import os
import sys

import tracetop
from tracetop import _tracetop, messages
from tracetop.commands import COMMANDS


def main(arguments=None, prog="tracetop"):
    """Runs the program with `arguments` (default: sys.argv[1:]); returns what to pass to sys.exit()."""
    arguments = sys.argv[1:] if arguments is None else list(arguments)
    try:
        return _command(arguments, prog)
    except BrokenPipeError:  # stdout closed early, as by `| head`: say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (messages.CommandError, _tracetop.TraceError, OSError) as failure:
        messages.error(str(failure))
        return getattr(failure, "exit_status", 2)
    except KeyboardInterrupt:
        return 130
    except Exception as failure:
        messages.internal_error(failure)
        return 1


def _command(arguments, prog):
    if not arguments or arguments[0] in ("-h", "--help"):
        print(_help(prog), file=sys.stdout if arguments else sys.stderr, flush=True)
        return 0 if arguments else 2
    if arguments[0] == "--version":
        print(f"tracetop {tracetop.__version__}", flush=True)
        return 0
    name = arguments[0] if arguments[0] in COMMANDS else "run"
    if name != arguments[0] and not arguments[0].startswith("-") and not os.path.exists(arguments[0]):
        from tracetop.suggest import closest  # difflib: only for a word that is neither a command nor a file

        guess = closest(arguments[0], COMMANDS)
        if guess:
            messages.error(f"no command or file {arguments[0]!r}: did you mean `{prog} {guess}`?")
            return 2
    if name == arguments[0]:
        arguments = arguments[1:]
    __import__(f"tracetop.commands.{name}")  # importlib.import_module would import importlib: start-up
    command = sys.modules[f"tracetop.commands.{name}"]
    return command.main(arguments, f"{prog} {name}")


def _help(prog):
    width = max(map(len, COMMANDS))
    commands = "\n".join(f"  {name:<{width}}  {what}" for name, what in COMMANDS.items())
    return (
        f"usage: {prog} COMMAND [options] ...\n"
        f"       {prog} [run options] (script.py | -m module | -c code) [args ...]   (short for {prog} run)\n"
        f"\ncommands:\n{commands}\n\n"
        f"`{prog} COMMAND --help` describes a command and its options."
    )

"""Write mode: the cells of a notebook recorded, not run, into `name.py`, with `name_run.sh` that runs it
under tracetop with the environment and options the notebook set for measured cells.

Measured cells are written as they are. Cells that were not measured are wrapped in
`with tracetop.instrumenter.disable():`, so that the script measures what the notebook measured. Both files
are rewritten after each recorded cell, so they are complete at every moment."""

import io
import os
import shlex
import sys
import textwrap
import tokenize

HEADER = """\
# Written by tracetop from a notebook: the cells recorded in write mode, in order.
# Run it with {runner}, which runs it under tracetop as the notebook measured it.
import tracetop
"""

RUNNER = """\
#!/bin/sh
# Written by tracetop from a notebook: runs {script} under tracetop with the environment and
# options the notebook set for measured cells.
{exports}exec {python} -m tracetop run --scorep-compat {arguments}"$(dirname "$0")/{script}" "$@"
"""


class Script:
    """A script being recorded: `base`.py and `base`_run.sh."""

    def __init__(self, base, environment, arguments):
        self.python = os.path.abspath(base + ".py")
        self.runner = os.path.abspath(base + "_run.sh")
        self.environment = dict(environment)
        self.arguments = list(arguments)
        self.measuring = False  # in multicell mode: the cells recorded are measured ones
        self._cells = []

    def add(self, source, measured):
        number = len(self._cells) + 1
        if measured:
            self._cells.append(f"# cell {number}: measured\n{source.rstrip()}\n")
        else:
            self._cells.append(f"# cell {number}: not measured\n{_unmeasured(source)}")
        self.write()

    def set_environment(self, variables):
        self.environment.update(variables)
        self.write()

    def set_arguments(self, arguments):
        self.arguments = list(arguments)
        self.write()

    def write(self):
        """Writes both files; OSError when they cannot be."""
        script = os.path.basename(self.python)
        with open(self.python, "w", encoding="utf-8") as file:
            file.write(HEADER.format(runner=os.path.basename(self.runner)))
            for cell in self._cells:
                file.write("\n" + cell)
        exports = "".join(f"export {name}={shlex.quote(value)}\n" for name, value in self.environment.items())
        arguments = "".join(f"{shlex.quote(argument)} " for argument in self.arguments)
        with open(self.runner, "w", encoding="utf-8") as file:
            file.write(
                RUNNER.format(script=script, exports=exports, python=shlex.quote(sys.executable), arguments=arguments)
            )
        os.chmod(self.runner, 0o755)

    def discard(self):
        for path in (self.python, self.runner):
            if os.path.exists(path):
                os.remove(path)


def _unmeasured(source):
    """The code of a cell that was not measured, run with the automatic instrumentation off. Indented into
    the `with` block, unless that would change a string that spans lines: then run from a literal."""
    source = source.rstrip() + "\n"
    tokens = _tokens(source)
    if any(token.type == tokenize.STRING and token.start[0] != token.end[0] for token in tokens):
        body = f"exec(compile({source!r}, '<cell>', 'exec'))\n"
    elif not any(token.type == tokenize.NAME or token.type == tokenize.OP for token in tokens):
        body = source + "pass\n"  # comments alone make no block
    else:
        body = source
    return "with tracetop.instrumenter.disable():\n" + textwrap.indent(body, "    ")


def _tokens(source):
    try:
        return list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):  # not Python: recorded as it is, it fails where it is run
        return [tokenize.TokenInfo(tokenize.NAME, "", (1, 0), (1, 0), "")]

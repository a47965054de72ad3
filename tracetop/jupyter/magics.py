"""The magics of tracetop in an IPython shell (PRODUCT.md, Jupyter), each also under the name the Score-P
kernel gives it, and the messages that kernel documents for its flow.

Multicell mode and write mode take the cells that follow, whatever they hold: an input transformer turns
each into a call of the hidden magic %%_tracetop_take while one of them is on. The control magics run with
an empty body, which IPython refuses for cell magics: they (and %%tracetop_env, %%tracetop_args) are line
magics too, and the transformer makes `%%multicell_begin` alone in a cell the line magic `%multicell_begin`.

Bad arguments raise UsageError: IPython shows it in the cell's output, and the kernel goes on."""

from IPython.core.error import UsageError
from IPython.core.magic import output_can_be_silenced
from IPython.display import display
from tracetop import _tracetop
from tracetop.jupyter import cell, inline
from tracetop.jupyter.script import Script
from tracetop.jupyter.settings import Settings, check_arguments, parse_environment
from tracetop.messages import CommandError

# tracetop's name -> the Score-P kernel's name.
ALIASES = {
    "trace": "execute_with_scorep",
    "tracetop_env": "scorep_env",
    "tracetop_args": "scorep_python_binding_arguments",
    "multicell_begin": "enable_multicellmode",
    "multicell_end": "finalize_multicellmode",
    "multicell_abort": "abort_multicellmode",
    "writefile_begin": "start_writefile",
    "writefile_end": "end_writefile",
    "writefile_abort": "abort_writefile",
}
CONTROL = ("multicell_begin", "multicell_end", "multicell_abort", "writefile_begin", "writefile_end", "writefile_abort")
# The magics that are line magics too: `%tracetop_args --no-c-calls`, and a cell of theirs without a body.
LINE_TOO = CONTROL + ("tracetop_env", "tracetop_args")
TAKE = "_tracetop_take"
DEFAULT_SCRIPT = "jupyter_to_script"


def _as_scorep_kernel(alias, magic):
    """A control magic under the Score-P kernel's name: as that kernel does, code below it in the cell is
    not run, and says so, rather than failing the cell (which would stop "Run All")."""

    def scorep_magic(line, body=None):
        result = magic(line)
        if body is not None and body.strip():
            print(
                f"Note: the code below %%{alias} was not run: the cell of %%{alias} holds no code, as in "
                "the Score-P kernel."
            )
        return result

    return scorep_magic


def _names(*names):
    return {name for tracetop_name in names for name in (tracetop_name, ALIASES[tracetop_name])}


LINE_NAMES = _names(*LINE_TOO)
OWN_NAMES = _names(*ALIASES) | {TAKE}
TRACE_NAMES = _names("trace")


class Notebook:
    """The magics and the state they share in one IPython shell."""

    def __init__(self, shell):
        self.shell = shell
        self.settings = Settings()
        self.marked = None  # multicell mode: the cells marked so far
        self.script = None  # write mode: the Script being recorded

    def register(self):
        magics = {"trace": (self.trace, "cell")}
        magics.update({name: (getattr(self, name), "line_cell") for name in LINE_TOO})
        for name, (function, kind) in magics.items():
            self.shell.register_magic_function(function, magic_kind=kind, magic_name=name)
            alias = _as_scorep_kernel(ALIASES[name], function) if name in CONTROL else function
            self.shell.register_magic_function(alias, magic_kind=kind, magic_name=ALIASES[name])
        self.shell.register_magic_function(self.take, magic_kind="cell", magic_name=TAKE)
        self.shell.input_transformers_cleanup.append(self.transform)

    # ---- measuring ----

    @output_can_be_silenced
    def trace(self, line, body):
        """%%trace [run options]: measures this cell; shows its timeline and profile under it."""
        __tracebackhide__ = True  # noqa: F841 -- IPython leaves this frame out of tracebacks
        if self.script:
            self.script.add(body, measured=True)
            print("Python commands with instrumentation recorded.")
            return None
        configuration = self._configuration(line)
        codes = [cell.compile_cell(self.shell, body, first_line=2)]
        return self._measure(codes, configuration)

    def _measure(self, codes, configuration):
        __tracebackhide__ = True  # noqa: F841
        try:
            measured = cell.measure(self.shell, codes, configuration, program=f"In [{cell.cell_number(self.shell)}]")
        except _tracetop.TraceError as failure:
            raise UsageError(f"tracetop: {failure}") from None
        try:
            display(inline.render(measured), raw=True)
        finally:
            measured.drop_trace()
        if measured.failure is not None:
            raise measured.failure
        return measured.value

    def _configuration(self, line):
        try:
            arguments, not_needed = check_arguments(line)
            configuration = self.settings.configuration(arguments)
        except CommandError as problem:
            raise UsageError(f"tracetop: {problem}") from None
        if not_needed:
            print(f"Not needed with tracetop, ignored: {' '.join(not_needed)}")
        return configuration

    # ---- settings ----

    def tracetop_env(self, line, body=None):
        """%%tracetop_env: NAME=value lines, TRACETOP_ and SCOREP_ variables for measured cells (an empty
        value unsets one); `%tracetop_env NAME=value` in one line."""
        body = line if body is None else body
        try:
            if self.script:
                self.script.set_environment(parse_environment(body))
                print("Environment variables recorded.")
                return
            given, ignored = self.settings.set_environment(body)
        except (CommandError, OSError) as problem:
            raise UsageError(f"tracetop: {problem}") from None
        print(
            "Environment for measured cells set successfully: "
            + ", ".join(f"{name}={value}" for name, value in given.items())
        )
        if ignored:
            print(f"Not read by tracetop, set all the same: {', '.join(ignored)}")

    def tracetop_args(self, line, body=None):
        """%%tracetop_args: `tracetop run` options for measured cells, in place of those set before (none:
        the defaults again); `%tracetop_args OPTIONS` in one line."""
        body = line if body is None else body
        try:
            if self.script:
                self.script.set_arguments(check_arguments(body)[0])
                print("tracetop run arguments recorded.")
                return
            arguments, not_needed = self.settings.set_arguments(body)
        except (CommandError, OSError) as problem:
            raise UsageError(f"tracetop: {problem}") from None
        print(f"tracetop run arguments for measured cells set successfully: {arguments}")
        if not_needed:
            print(f"Not needed with tracetop, ignored: {' '.join(not_needed)}")

    # ---- multicell mode ----

    def multicell_begin(self, line, body=None):
        """Marks the cells that follow, to be run in order as one measurement by %%multicell_end."""
        self._no_body("multicell_begin", body)
        if self.script:
            self.script.measuring = True
            return
        if self.marked is not None:
            raise UsageError("tracetop: multicell mode is already on: end it with %%multicell_end or %%multicell_abort")
        self.marked = []
        print("Multicell mode enabled. The following cells will be marked for instrumented execution.")

    def multicell_end(self, line, body=None):
        """Runs the marked cells in order, as one measured cell."""
        __tracebackhide__ = True  # noqa: F841
        self._no_body("multicell_end", body)
        if self.script:
            self.script.measuring = False
            return None
        if self.marked is None:
            raise UsageError("tracetop: multicell mode is not on: start it with %%multicell_begin")
        marked, self.marked = self.marked, None
        if not marked:
            print("Multicell mode ended: no cell was marked.")
            return None
        configuration = self._configuration("")
        codes = [cell.compile_cell(self.shell, source) for source in marked]
        return self._measure(codes, configuration)

    def multicell_abort(self, line, body=None):
        self._no_body("multicell_abort", body)
        if self.script:
            self.script.measuring = False
            return
        if self.marked is None:
            raise UsageError("tracetop: multicell mode is not on")
        self.marked = None
        print("Multicell mode aborted.")

    # ---- write mode ----

    def writefile_begin(self, line, body=None):
        """%%writefile_begin [name]: records the cells that follow into name.py and name_run.sh."""
        self._no_body("writefile_begin", body)
        if self.script:
            raise UsageError(
                f"tracetop: already writing {self.script.python}: end it with %%writefile_end or %%writefile_abort"
            )
        words = line.split()
        if len(words) > 1:
            raise UsageError(f"tracetop: one name expected, not {line.strip()!r}")
        base = words[0] if words else DEFAULT_SCRIPT
        if base.endswith(".py"):
            base = base[:-3]
        script = Script(base, self.settings.environment, self.settings.arguments)
        try:
            script.write()
        except OSError as problem:
            raise UsageError(f"tracetop: cannot write {base}.py: {problem.strerror}") from None
        self.script = script
        print(f"Started converting to Python script. See files:\n{script.runner}\n{script.python}")

    def writefile_end(self, line, body=None):
        self._no_body("writefile_end", body)
        if not self.script:
            raise UsageError("tracetop: write mode is not on: start it with %%writefile_begin [name]")
        self.script = None
        print("Finished converting to Python script, files closed.")

    def writefile_abort(self, line, body=None):
        self._no_body("writefile_abort", body)
        if not self.script:
            raise UsageError("tracetop: write mode is not on")
        self.script.discard()
        self.script = None
        print("Writefile mode aborted.")

    # ---- taking the cells of multicell and write mode ----

    def take(self, line, body):
        """The hidden magic that each cell becomes in multicell or write mode (see transform)."""
        if self.script:
            try:
                self.script.add(body, measured=self.script.measuring)
            except OSError as problem:
                raise UsageError(f"tracetop: cannot write {self.script.python}: {problem.strerror}") from None
            print(f"Python commands {'with' if self.script.measuring else 'without'} instrumentation recorded.")
        elif self.marked is not None:
            self.marked.append(body)
            print(f"Cell marked for multicell mode. It will be executed at position {len(self.marked)}")

    def transform(self, lines):
        """The input transformer (IPython's cleanup stage, on the cell as typed)."""
        first = lines[0].strip() if lines else ""
        name = first[2:].split(maxsplit=1)[0] if first.startswith("%%") and len(first) > 2 else None
        rest = lines[1:]
        if name in LINE_NAMES and not "".join(rest).strip():
            return [f"%{first[2:]}\n"]
        if (self.marked is None and self.script is None) or name in OWN_NAMES - TRACE_NAMES:
            return lines
        if name in TRACE_NAMES:  # in multicell mode a cell is measured anyway; in write mode %%trace says so
            if self.script:
                return lines
            lines = rest
        elif name is not None and self.script:
            return lines  # another cell magic (%%bash, %%time, ...) is not Python: run, not recorded
        return [f"%%{TAKE}\n", *lines] if "".join(lines).strip() else lines

    @staticmethod
    def _no_body(name, body):
        if body is not None and body.strip():
            raise UsageError(f"tracetop: %%{name} takes no cell body")

"""Measuring cells in the kernel's own process: the cell's code runs in the notebook's namespace, as an
unmeasured cell's does, between the start and the stop of a measurement that records it alone.

Nothing crosses a process boundary: every object the notebook holds (a generator, an open file, a class)
is used by the measured cell as it is, and what the cell makes stays for the next one."""

import ast
import os
import sys
from dataclasses import dataclass

from tracetop import _tracetop
from tracetop.session import Session, command_line

# How often the CPU and memory of the kernel are sampled while a cell is measured (seconds); the sampler
# thins its samples out for long cells.
USAGE_INTERVAL = 0.01


@dataclass
class Measured:
    """What a measured cell (or a run of marked cells) leaves: its experiment and what it gave back."""

    experiment: str  # the experiment directory, absolute
    shown: str  # as the configuration named it, for messages
    stats: dict  # the writer's statistics (_tracetop.stop())
    usage: list  # [(seconds since the measurement began, CPU seconds of the process, resident bytes)]
    value: object = None  # the value of the cell's last expression, shown as the cell's result
    failure: BaseException = None  # what the cell raised, its traceback without tracetop's frames
    drop_trace: object = None  # called once the cell's result is shown: removes a trace not to be kept


class _CellSession(Session):
    """A session for one measured cell. It measures the cell's thread and the threads started while it
    runs, as the Score-P kernel's subprocess would, not the kernel's own threads (IOPub, control,
    heartbeat, history), which would only show the kernel at work. Where the experiment is is shown under
    the cell rather than said on stderr."""

    other_threads = False
    trace_shown_first = True  # its timeline is drawn under the cell from the trace (Measured.drop_trace)

    def _announce(self):
        pass


def _unmeasured(method):
    """`method`, run with the instrumentation off."""

    def call(*args, **kwargs):
        enabled = _tracetop.instrumenter_enabled()
        _tracetop.instrumenter_disable()
        try:
            return method(*args, **kwargs)
        finally:
            if enabled:
                _tracetop.instrumenter_enable()

    return call


class _KernelOutput:
    """While a cell is measured, the methods of the kernel's objects that the cell calls to show something
    (sys.stdout and sys.stderr, ipykernel's OutStream; the shell's display publisher) run with the
    instrumentation off: the cell's call (builtins:print, display) is recorded, what the kernel does with it
    (OutStream.write, zmq's Socket.send) is not. The objects stay the same; their methods are shadowed on
    the instance for the time of the cell."""

    METHODS = (
        ("stdout", ("write", "writelines", "flush")),
        ("stderr", ("write", "writelines", "flush")),
        ("display_pub", ("publish", "clear_output")),
    )

    def __init__(self):
        self._shadowed = []  # (object, method name)

    @classmethod
    def install(cls, shell):
        output = cls()
        for owner, (attribute, methods) in zip((sys, sys, shell), cls.METHODS):
            kernel_object = getattr(owner, attribute, None)
            for name in methods:
                method = getattr(kernel_object, name, None)
                if method is None:
                    continue
                try:
                    vars(kernel_object)[name] = _unmeasured(method)  # TypeError: no __dict__ (not the kernel's)
                except TypeError:
                    continue
                output._shadowed.append((kernel_object, name))
        return output

    def remove(self):
        for kernel_object, name in self._shadowed:
            vars(kernel_object).pop(name, None)
        self._shadowed.clear()


def compile_cell(shell, source, first_line=1):
    """The code of a cell as IPython runs it (its own syntax: %magics, !commands), in two parts: the
    statements, and the last expression whose value is the cell's result (None when the cell does not end
    with one). Line numbers count from `first_line`, as the cell shows them."""
    # Blank lines in place of the magic's: tracebacks number and quote the lines as the cell shows them.
    transformed = "\n" * (first_line - 1) + shell.transform_cell(source)
    filename = shell.compile.cache(transformed, cell_number(shell), raw_code=source)
    tree = shell.transform_ast(shell.compile.ast_parse(transformed, filename=filename))
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = shell.compile(ast.Expression(tree.body.pop().value), filename, "eval")
    statements = shell.compile(tree, filename, "exec")
    return statements, last


def cell_number(shell):
    """The number of the cell being run (In [n]). Not shell.execution_count, which IPython 9 advances
    before running the cell and earlier versions after: the input history holds the cell at its number."""
    history = shell.history_manager
    return len(history.input_hist_raw) - 1 if history else shell.execution_count


def measure(shell, codes, configuration, program):
    """Runs the compiled cells `codes` (from compile_cell) in order in the notebook's namespace, as one
    measurement configured by `configuration`; returns Measured. The measurement ends however the cells
    end; what they raised is in Measured.failure, and the rest of the cells is not run."""
    __tracebackhide__ = True  # noqa: F841 -- IPython leaves this frame out of tracebacks
    namespace = shell.user_ns
    value = raised = None
    kernel_streams = _KernelOutput.install(shell)
    _tracetop.usage_start(USAGE_INTERVAL)
    try:
        session = _CellSession.begin(configuration, program=program, command=command_line())
    except BaseException:
        _tracetop.usage_stop()
        kernel_streams.remove()
        raise
    # From here to instrumenter_disable() the only calls recorded are the cells' own: the functions of
    # _tracetop are tracetop's and never recorded, and the session switched the instrumenter on (or not,
    # as configured) as its last act.
    try:
        for statements, last in codes:
            _tracetop.run_code(statements, namespace)
            value = _tracetop.run_code(last, namespace) if last is not None else None
    except BaseException as failure:  # KeyboardInterrupt and SystemExit too: the measurement ends all the same
        raised = failure
    finally:
        _tracetop.instrumenter_disable()
        usage = _tracetop.usage_stop()
        kernel_streams.remove()
    stats = session.stop()
    failure = None if raised is None else raised.with_traceback(raised.__traceback__.tb_next)  # the cell's frames
    return Measured(session.directory, session.experiment.shown, stats, usage, value, failure, session.drop_trace)


def free_directory(requested):
    """`requested` when it can hold a new experiment (absent or empty), else the first of `requested-2`,
    `requested-3`, ... that can: each measured cell writes its own experiment, however it is named."""
    candidate, number = requested, 1
    while os.path.exists(candidate) and (not os.path.isdir(candidate) or os.listdir(candidate)):
        number += 1
        candidate = f"{requested}-{number}"
    return candidate

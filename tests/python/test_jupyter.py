"""The Jupyter kernel "tracetop" and the magics, driven as Jupyter drives them: the real kernel, started by
jupyter_client from the kernelspec that `tracetop jupyter install` writes, and whole notebooks run by
nbclient."""

import json
import os
import re
import subprocess

import nbformat
import pytest
from jupyter_client.manager import start_new_kernel
from nbclient import NotebookClient

from helpers import assert_complete, enters, environment, streams, tracetop

KERNEL = "tracetop"


@pytest.fixture(scope="module")
def jupyter_path(tmp_path_factory):
    """The kernelspec installed under a prefix of this test's own, found through JUPYTER_PATH."""
    prefix = tmp_path_factory.mktemp("prefix")
    installed = tracetop("jupyter", "install", "--prefix", prefix, cwd=prefix)
    assert installed.returncode == 0, installed.stderr
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JUPYTER_PATH", str(prefix / "share" / "jupyter"))
        for name in list(os.environ):
            if name.startswith(("TRACETOP_", "SCOREP_")):
                patch.delenv(name)
        yield prefix / "share" / "jupyter"


class Kernel:
    """A running kernel and a client to it."""

    def __init__(self, name, cwd):
        self.cwd = cwd
        self.manager, self.client = start_new_kernel(kernel_name=name, cwd=str(cwd), startup_timeout=120)

    def run(self, code):
        """Executes a cell: (status, outputs); outputs are (kind, content) with kind stdout, stderr, display
        (the data dict), result (the data dict) or error (ename, evalue, traceback text). A stream's messages in
        a row are one output, as a notebook shows them: the kernel may send one print's text and its newline
        apart."""
        outputs = []

        def take(message):
            kind, content = message["msg_type"], message["content"]
            if kind == "stream":
                if outputs and outputs[-1][0] == content["name"]:
                    outputs[-1] = (content["name"], outputs[-1][1] + content["text"])
                else:
                    outputs.append((content["name"], content["text"]))
            elif kind == "display_data":
                outputs.append(("display", content["data"]))
            elif kind == "execute_result":
                outputs.append(("result", content["data"]))
            elif kind == "error":
                outputs.append(("error", (content["ename"], content["evalue"], "\n".join(content["traceback"]))))

        reply = self.client.execute_interactive(code, output_hook=take, timeout=120)
        return reply["content"]["status"], outputs

    def stdout(self, code):
        status, outputs = self.run(code)
        assert status == "ok", outputs
        return "".join(text for kind, text in outputs if kind == "stdout")

    def close(self):
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


@pytest.fixture(scope="module")
def kernel(jupyter_path, tmp_path_factory):
    running = Kernel(KERNEL, tmp_path_factory.mktemp("notebook"))
    yield running
    running.close()


def experiments_in(directory):
    return sorted(path for path in directory.rglob("MANIFEST.md"))


def displayed(outputs):
    """The results shown under measured cells."""
    return [content for kind, content in outputs if kind == "display"]


def experiment_of(result):
    return re.search(r"experiment in (\S+)", result["text/plain"]).group(1)


def test_install_writes_the_kernelspec(jupyter_path):
    spec = json.loads((jupyter_path / "kernels" / KERNEL / "kernel.json").read_text())
    assert spec["argv"][1:4] == ["-m", "tracetop.jupyter.kernel", "-f"]
    assert spec["language"] == "python"


def test_objects_live_across_measured_and_plain_cells(kernel):
    (kernel.cwd / "lines.txt").write_text("first\nsecond\nthird\n")
    kernel.stdout(
        "def numbers():\n    yield from range(100)\n"
        "counting = numbers()\nprint(next(counting))\nlines = open('lines.txt')"
    )
    status, outputs = kernel.run(
        "%%trace\nprint(next(counting), next(counting), lines.readline().strip())\n"
        "class Made:\n    def twice(self, x):\n        return 2 * x"
    )
    assert status == "ok", outputs
    assert ("stdout", "1 2 first\n") in outputs
    # The generator was resumed inside the measured cell: its frame is recorded there.
    experiment = kernel.cwd / experiment_of(displayed(outputs)[0])
    assert enters(experiment)["__main__:numbers"] == 2
    assert_complete(experiment)
    assert kernel.stdout("print(next(counting), lines.readline().strip(), Made().twice(21))") == "3 second 42\n"


def test_measured_cell_shows_timeline_usage_and_top_regions(kernel):
    status, outputs = kernel.run(
        "%%trace\ndef work(n):\n    return sum(i * i for i in range(n))\n"
        "for _ in range(20):\n    work(2000)\nprint('worked')"
    )
    assert status == "ok", outputs
    assert outputs[0] == ("stdout", "worked\n")  # the cell's own output comes as it runs, before the result
    [result] = displayed(outputs)
    page = result["text/html"]
    assert "<svg class='tracetop-timeline'" in page and "<title>__main__:work</title>" in page
    assert "MainThread" in page
    assert page.count("<svg class='tracetop-usage'") == 2  # CPU and memory over the cell's run
    assert re.search(r"__main__:work</td><td>[^<]+</td><td>[^<]+</td><td>[^<]+</td><td>20</td>", page)
    assert re.search(r"\b20  __main__:work$", result["text/plain"], re.M)
    experiment = kernel.cwd / experiment_of(result)
    assert (experiment / "profile.txt").exists() and (experiment / "config.txt").exists()
    # Only the cell is measured: every call recorded is the cell's or made from it (print goes through the
    # kernel's output stream), none is tracetop's or the kernel's own, and no thread of the kernel is there.
    [(_, thread, events, _, _)] = streams(experiment)
    assert thread["name"] == "MainThread"
    assert {event[2] for event in events if event[0] == "enter"} >= {"__main__:<module>", "__main__:work"}
    assert all(_outermost(events, "__main__:<module>")), events[:5]
    assert enters(experiment)["__main__:work"] == 20
    assert_complete(experiment)


def test_measured_cell_profiling_itself(kernel):
    """A cell that runs cProfile is measured to its end: cProfile gets every event it gets in a plain
    cell (its counts), tracetop records every call, before, under and after cProfile."""
    code = (
        "import cProfile\ndef fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
        "fib(5)\ncProfile.run('fib(10)', sort='ncalls')\nfib(8)\n"
    )
    plain = kernel.stdout(code)
    status, outputs = kernel.run("%%trace\n" + code)
    assert status == "ok", outputs
    measured = "".join(text for kind, text in outputs if kind == "stdout")
    assert "177/1" in plain and [line.split()[:1] for line in measured.splitlines() if "fib" in line] == [
        line.split()[:1] for line in plain.splitlines() if "fib" in line
    ]
    experiment = kernel.cwd / experiment_of(displayed(outputs)[0])
    assert enters(experiment)["__main__:fib"] == 15 + 177 + 67
    assert_complete(experiment)


def _outermost(events, name):
    """Whether each call at the outermost level is `name`, for each one."""
    depth = 0
    for kind, _, *rest in events:
        if kind == "enter":
            yield depth > 0 or rest[0] == name
            depth += 1
        elif kind == "leave":
            depth -= 1


def test_last_expression_is_the_cell_result(kernel):
    status, outputs = kernel.run("%%trace\n6 * 7")
    assert status == "ok" and ("result", {"text/plain": "42"}) in outputs
    status, outputs = kernel.run("%%trace\n6 * 7;")
    assert status == "ok" and not [kind for kind, _ in outputs if kind == "result"]


def test_failing_cell_keeps_its_experiment_and_traceback(kernel):
    status, outputs = kernel.run("%%trace\nx = 1\n1 / 0")
    assert status == "error"
    ename, evalue, traceback = next(content for kind, content in outputs if kind == "error")
    assert ename == "ZeroDivisionError"
    plain = re.sub(r"\x1b\[[0-9;]*m", "", traceback)
    assert re.search(r"Cell In\[\d+\], line 3\n", plain) and "----> 3 1 / 0" in plain, plain  # as the cell shows it
    experiment = kernel.cwd / experiment_of(displayed(outputs)[0])
    assert_complete(experiment)
    assert kernel.stdout("print(x)") == "1\n"


@pytest.mark.parametrize(
    "cell, message",
    [
        ("%%trace --bogus\n1", "unrecognized arguments: --bogus"),
        ("%%tracetop_args\n--memory=lots", "argument --memory: invalid size"),
        ("%%scorep_python_binding_arguments\n--instrumenter=magic", "invalid choice 'magic'"),
        ("%%tracetop_env\nPATH=/nowhere", "PATH is not a TRACETOP_ or SCOREP_ variable"),
        ("%%scorep_env\nSCOREP_TOTAL_MEMORY=0.5k", "SCOREP_TOTAL_MEMORY"),
        ("%%scorep_env\njust words", "is not NAME=value"),
        ("%%finalize_multicellmode", "multicell mode is not on"),
        ("%%end_writefile", "write mode is not on"),
        ("%%start_writefile one two", "one name expected"),
        ("%%multicell_abort\nprint(1)", "takes no cell body"),
    ],
)
def test_bad_magic_arguments_give_a_clear_error(kernel, cell, message):
    status, outputs = kernel.run(cell)
    assert status == "error"
    # IPython shows a UsageError as one line in the cell's output, without a traceback; the stream may
    # reach the client in more than one message.
    assert {kind for kind, _ in outputs} == {"stderr"}, outputs
    text = "".join(text for _, text in outputs)
    assert text.startswith("UsageError: tracetop: ") and message in text and text.count("\n") == 1, text
    assert kernel.stdout("print('still running')") == "still running\n"


# ---- the Score-P kernel's documented flow, as a notebook ----

FLOW = [
    (
        "%%scorep_env\nSCOREP_ENABLE_TRACING=1\nSCOREP_ENABLE_PROFILING=0\nSCOREP_TOTAL_MEMORY=3g\n"
        "SCOREP_EXPERIMENT_DIRECTORY=tests_tmp/scorep-traces",
        "Environment for measured cells set successfully: SCOREP_ENABLE_TRACING=1, SCOREP_ENABLE_PROFILING=0, "
        "SCOREP_TOTAL_MEMORY=3g, SCOREP_EXPERIMENT_DIRECTORY=tests_tmp/scorep-traces\n",
    ),
    (
        "%%scorep_python_binding_arguments\n--noinstrumenter",
        "tracetop run arguments for measured cells set successfully: ['--noinstrumenter']\n",
    ),
    ("a = 5\nb = 10\na_vec = list(range(a))\nb_vec = list(range(a, b))\nprint('a + b =', a + b)", "a + b = 15\n"),
    (
        "%%execute_with_scorep\nimport scorep\n"
        "class Matrix:\n    def __init__(self, rows):\n        self.rows = rows\n"
        "    def total(self):\n        return sum(sum(row) for row in self.rows)\n"
        "def outer(u, v):\n    return Matrix([[x * y for y in v] for x in u])\n"
        "with scorep.instrumenter.enable():\n    print('a - b =', a - b)\n    c_mtx = outer(a_vec, b_vec)\n"
        "c_mtx.total()",
        "a - b = -5\n",
    ),
    ("print(type(c_mtx).__name__, c_mtx.total(), Matrix([[1, 2]]).total())", "Matrix 350 3\n"),
    (
        "%%enable_multicellmode",
        "Multicell mode enabled. The following cells will be marked for instrumented execution.\n",
    ),
    ("c = c_mtx.total()", "Cell marked for multicell mode. It will be executed at position 1\n"),
    (
        "with scorep.instrumenter.enable():\n    c_vec = list(range(b, c))\n    c_sum = sum(c_vec)",
        "Cell marked for multicell mode. It will be executed at position 2\n",
    ),
    ("%%execute_with_scorep\nprint('c =', c)", "Cell marked for multicell mode. It will be executed at position 3\n"),
    ("print('Sum(c_vec) =', sum(c_vec))", "Cell marked for multicell mode. It will be executed at position 4\n"),
    ("order = 'five cells in order'", "Cell marked for multicell mode. It will be executed at position 5\n"),
    ("%%finalize_multicellmode", "c = 350\nSum(c_vec) = 61030\n"),
    ("print(order)", "five cells in order\n"),
    (
        "%%enable_multicellmode",
        "Multicell mode enabled. The following cells will be marked for instrumented execution.\n",
    ),
    ("print('never run')", "Cell marked for multicell mode. It will be executed at position 1\n"),
    ("%%abort_multicellmode", "Multicell mode aborted.\n"),
    ("print('after the abort')", "after the abort\n"),
    ("%%start_writefile tests_tmp/my_jupyter_to_script", None),
    (
        "%%scorep_env\nSCOREP_ENABLE_TRACING=1\nSCOREP_ENABLE_PROFILING=0\nSCOREP_TOTAL_MEMORY=3g\n"
        "SCOREP_EXPERIMENT_DIRECTORY=tests_tmp/script-traces",
        "Environment variables recorded.\n",
    ),
    ("%%scorep_python_binding_arguments\n--noinstrumenter", "tracetop run arguments recorded.\n"),
    (
        "a = 5\nb = 10\na_vec = list(range(a))\nb_vec = list(range(a, b))\nprint('a + b =', a + b)",
        "Python commands without instrumentation recorded.\n",
    ),
    (
        "%%execute_with_scorep\nimport scorep\ndef outer(u, v):\n    return [[x * y for y in v] for x in u]\n"
        "with scorep.instrumenter.enable():\n    print('a - b =', a - b)\n    c_mtx = outer(a_vec, b_vec)",
        "Python commands with instrumentation recorded.\n",
    ),
    ("%%enable_multicellmode", ""),
    ("c = sum(map(sum, c_mtx))", "Python commands with instrumentation recorded.\n"),
    (
        "with scorep.instrumenter.enable():\n    c_vec = list(range(b, c))",
        "Python commands with instrumentation recorded.\n",
    ),
    ("print('c =', c)\nprint('Sum(c_vec) =', sum(c_vec))", "Python commands with instrumentation recorded.\n"),
    ("%%finalize_multicellmode", ""),
    ("%%end_writefile", "Finished converting to Python script, files closed.\n"),
]


def test_scorep_kernel_flow(jupyter_path, tmp_path):
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source, _ in FLOW])
    NotebookClient(notebook, kernel_name=KERNEL, timeout=120, resources={"metadata": {"path": str(tmp_path)}}).execute()
    for cell, (source, expected) in zip(notebook.cells, FLOW):
        errors = [output for output in cell.outputs if output.output_type == "error"]
        assert not errors, (source, errors)
        text = "".join(output.text for output in cell.outputs if output.output_type == "stream")
        if expected is not None:
            assert text == expected, source
    started = "".join(output.text for output in notebook.cells[17].outputs)
    assert started == (
        f"Started converting to Python script. See files:\n"
        f"{tmp_path}/tests_tmp/my_jupyter_to_script_run.sh\n{tmp_path}/tests_tmp/my_jupyter_to_script.py\n"
    )

    # The measured cell and the five marked cells: an experiment each, in the directory the environment named.
    measured, multicell = tmp_path / "tests_tmp" / "scorep-traces", tmp_path / "tests_tmp" / "scorep-traces-2"
    assert experiments_in(tmp_path) == [measured / "MANIFEST.md", multicell / "MANIFEST.md"]
    for experiment in (measured, multicell):
        configuration = (experiment / "config.txt").read_text()
        assert "TRACETOP_ENABLE_PROFILING=false" in configuration
        assert f"TRACETOP_TOTAL_MEMORY={3 << 30}" in configuration
        assert "TRACETOP_ENABLE_INSTRUMENTER=false" in configuration
        assert not (experiment / "profile.txt").exists()
        assert_complete(experiment)
    # --noinstrumenter: only what ran inside scorep.instrumenter.enable() is recorded.
    recorded = enters(measured)
    assert recorded["__main__:outer"] == 1 and recorded["builtins:print"] == 1
    assert "__main__:Matrix.total" not in recorded
    recorded = enters(multicell)
    assert recorded["builtins:sum"] == 1 and "__main__:Matrix.total" not in recorded

    # Write mode: a script and a runner that work from a shell.
    runner = tmp_path / "tests_tmp" / "my_jupyter_to_script_run.sh"
    completed = subprocess.run(
        [str(runner)], cwd=tmp_path, env=environment(), capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "a + b = 15\na - b = -5\nc = 350\nSum(c_vec) = 61030\n"
    script_experiment = tmp_path / "tests_tmp" / "script-traces"
    assert "TRACETOP_ENABLE_INSTRUMENTER=false" in (script_experiment / "config.txt").read_text()
    recorded = enters(script_experiment)
    assert recorded["__main__:outer"] == 1
    assert_complete(script_experiment)


def test_magics_in_any_ipython_kernel(jupyter_path, tmp_path):
    plain = Kernel("python3", tmp_path)
    try:
        assert plain.stdout("%load_ext tracetop") == ""
        status, outputs = plain.run("%%trace\nimport scorep\nwith scorep.user.region('loaded'):\n    print('in')")
        assert status == "ok", outputs
        assert enters(tmp_path / experiment_of(displayed(outputs)[0]))["user:loaded"] == 1
    finally:
        plain.close()


def test_arguments_and_environment_apply_to_measured_cells(kernel):
    assert kernel.stdout("%%tracetop_args\n--no-c-calls --thread=pthread") == (
        "tracetop run arguments for measured cells set successfully: ['--no-c-calls']\n"
        "Not needed with tracetop, ignored: --thread=pthread\n"
    )
    assert kernel.stdout("%%tracetop_env\nTRACETOP_EXPERIMENT_DIRECTORY=chosen\nSCOREP_METRIC_PAPI=PAPI_TOT_CYC") == (
        "Environment for measured cells set successfully: TRACETOP_EXPERIMENT_DIRECTORY=chosen, "
        "SCOREP_METRIC_PAPI=PAPI_TOT_CYC\nNot read by tracetop, set all the same: SCOREP_METRIC_PAPI\n"
    )
    status, outputs = kernel.run("%%trace\ndef f():\n    return len('abc')\nf()")
    assert status == "ok" and ("result", {"text/plain": "3"}) in outputs
    recorded = enters(kernel.cwd / "chosen")
    assert recorded["__main__:f"] == 1 and "builtins:len" not in recorded  # --no-c-calls
    # Options on the magic's line add to those set, for this cell only.
    status, outputs = kernel.run("%%trace --c-calls --output=own\nf()")
    assert status == "ok" and enters(kernel.cwd / "own")["builtins:len"] == 1
    kernel.stdout("%%tracetop_args\n")
    kernel.stdout("%%tracetop_env\nTRACETOP_EXPERIMENT_DIRECTORY=")


def test_write_mode_keeps_strings_and_comment_cells(kernel):
    assert kernel.stdout("%%writefile_begin kept").startswith("Started converting to Python script.")
    kernel.stdout("text = '''two\n  lines'''")
    kernel.stdout("# nothing but a comment")
    kernel.stdout("%%trace\nprint(repr(text))")
    kernel.stdout("%%writefile_end")
    completed = subprocess.run(
        [str(kernel.cwd / "kept_run.sh")],
        cwd=kernel.cwd,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "'two\\n  lines'\n"


def test_aborted_write_mode_leaves_no_files(kernel):
    kernel.stdout("%%writefile_begin dropped")
    kernel.stdout("x = 1")
    assert kernel.stdout("%%abort_writefile") == "Writefile mode aborted.\n"
    assert not (kernel.cwd / "dropped.py").exists() and not (kernel.cwd / "dropped_run.sh").exists()


# The kernel's own packages: what it does to show a cell's output is its machinery, not the cell's work.
KERNEL_PACKAGES = ("zmq", "ipykernel", "jupyter_client", "tornado", "traitlets", "IPython", "comm")

SCOREP_KERNEL_CELLS = [
    "%%enable_multicellmode\nprint('the Score-P kernel ignores this')",
    "x = 300",
    "%%finalize_multicellmode",
    "%%execute_with_scorep\nimport scorep\n"
    "def work(n):\n    return sum(range(n))\n"
    "with scorep.instrumenter.disable():\n    work(x)\n    with scorep.instrumenter.enable('named'):\n        work(x)\n"
    "for i in range(200):\n    print(i, work(i))",
    "%%scorep_env\nSCOREP_ENABLE_TRACING=false",
    "%%execute_with_scorep\nprint('not traced')",
    "print('ran to the end')",
]


def test_scorep_kernel_cells_run_as_that_kernel_runs_them(jupyter_path, tmp_path):
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in SCOREP_KERNEL_CELLS])
    NotebookClient(notebook, kernel_name=KERNEL, timeout=120, resources={"metadata": {"path": str(tmp_path)}}).execute()
    for cell in notebook.cells:
        assert not [output for output in cell.outputs if output.output_type == "error"], cell.source
    texts = ["".join(output.get("text", "") for output in cell.outputs) for cell in notebook.cells]
    assert texts[0] == (
        "Multicell mode enabled. The following cells will be marked for instrumented execution.\n"
        "Note: the code below %%enable_multicellmode was not run: the cell of "
        "%%enable_multicellmode holds no code, as in the Score-P kernel.\n"
    )
    assert texts[-1] == "ran to the end\n"
    measured = tmp_path / experiment_of(
        next(
            output.data
            for output in notebook.cells[3].outputs
            if output.output_type == "display_data" and "experiment in" in output.data.get("text/plain", "")
        )
    )
    recorded = enters(measured)
    # enable("named") switched the instrumentation on: the block is the region, as Score-P names it, and the one
    # work() in it.
    assert recorded["user_instrumenter:named"] == 1
    assert recorded["__main__:work"] == 1 + 200
    assert recorded["builtins:print"] == 200
    kernel_regions = [name for name in recorded if name.split(":")[0].split(".")[0] in KERNEL_PACKAGES]
    assert kernel_regions == [], kernel_regions
    assert_complete(measured)

    # Without tracing the cell still shows its timeline, then its experiment keeps the profile alone.
    untraced = tmp_path / experiment_of(
        next(output.data for output in notebook.cells[5].outputs if output.output_type == "display_data")
    )
    assert (
        "<svg class='tracetop-timeline'"
        in next(output.data for output in notebook.cells[5].outputs if output.output_type == "display_data")[
            "text/html"
        ]
    )
    assert sorted(path.name for path in untraced.iterdir()) == ["MANIFEST.md", "config.txt", "profile.txt"]
    assert "the trace was not kept" in (untraced / "MANIFEST.md").read_text()

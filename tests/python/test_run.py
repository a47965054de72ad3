"""`tracetop run` runs a program as Python does: same output, exit status, sys.argv, sys.path, __main__."""

import json
import shutil
import signal
import subprocess
import sys

import pytest

from helpers import (
    C_CALL_INSTRUMENTERS,
    INSTRUMENTERS,
    PROGRAMS,
    WORKLOADS,
    assert_complete,
    console_script,
    enters,
    environment,
    program_stderr,
    python,
    reader,
    run,
    tracetop,
    tracetop_lines,
)

WORKLOAD_NAMES = sorted(path.name for path in WORKLOADS.glob("*.py") if path.name != "processes.py")


@pytest.mark.parametrize("name", WORKLOAD_NAMES)
def test_workloads_compute_the_same(name, tmp_path):
    plain = python(WORKLOADS / name, cwd=tmp_path)
    traced = tracetop("--output", "exp", WORKLOADS / name, cwd=tmp_path)
    assert plain.returncode == 0 and plain.stdout.startswith(name[: -len(".py")])
    assert (traced.returncode, traced.stdout, program_stderr(traced.stderr)) == (0, plain.stdout, plain.stderr)
    assert_complete(tmp_path / "exp")


def what_it_sees(completed):
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)


@pytest.mark.parametrize("command", [[], ["run"], ["run", "--no-c-calls", "-v"]])
def test_a_script_sees_what_python_gives_it(command, tmp_path):
    shutil.copy(PROGRAMS / "context.py", tmp_path)
    plain = what_it_sees(python("context.py", "a", "-v", cwd=tmp_path))
    assert plain["path"][0] == str(tmp_path.resolve()) and plain["pickled"] == 3
    assert what_it_sees(tracetop(*command, "--output", "exp", "context.py", "a", "-v", cwd=tmp_path)) == plain


def test_a_script_run_by_the_console_script_sees_what_python_gives_it(tmp_path):
    shutil.copy(PROGRAMS / "context.py", tmp_path)
    plain = what_it_sees(python("context.py", "a", cwd=tmp_path))
    assert what_it_sees(run(console_script(), "run", "--output", "exp", "context.py", "a", cwd=tmp_path)) == plain


@pytest.mark.parametrize("module", [["-m", "pkg"], ["-mpkg"], ["-m", "pkg.context"]])
def test_a_module_sees_what_python_gives_it(module, tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    shutil.copy(PROGRAMS / "context.py", tmp_path / "pkg" / "__main__.py")
    shutil.copy(PROGRAMS / "context.py", tmp_path / "pkg" / "context.py")
    plain = what_it_sees(python(*module, "a", cwd=tmp_path))
    assert plain["__spec__"].startswith("pkg.")
    assert what_it_sees(tracetop("--output", "exp", *module, "a", cwd=tmp_path)) == plain


def test_code_sees_what_python_gives_it(tmp_path):
    source = (PROGRAMS / "context.py").read_text()
    plain = what_it_sees(python("-c", source, "a", cwd=tmp_path))
    assert plain["argv"] == ["-c", "a"] and plain["path"][0] == ""
    assert what_it_sees(tracetop("--output", "exp", "-c", source, "a", cwd=tmp_path)) == plain


@pytest.mark.parametrize(
    "how, status, manifest_says",
    [
        ("return", 0, "exit status 0"),
        ("exit-5", 5, "exit status 5"),
        ("exit-message", 1, "exit status 1"),
        ("raise", 1, "exit status 1"),
        ("interrupt", -signal.SIGINT, "killed by SIGINT"),
        ("os-exit-3", 3, "exit status 3"),
    ],
)
def test_ends_as_under_python(how, status, manifest_says, tmp_path):
    plain = python(PROGRAMS / "ending.py", how, cwd=tmp_path)
    traced = tracetop("--output", "exp", PROGRAMS / "ending.py", how, cwd=tmp_path)
    assert plain.returncode == status
    assert (traced.returncode, traced.stdout, program_stderr(traced.stderr)) == (
        plain.returncode,
        plain.stdout,
        plain.stderr,
    )
    assert len([line for line in tracetop_lines(traced.stderr) if "experiment in exp/" in line]) == 1
    assert_complete(tmp_path / "exp")
    assert manifest_says in (tmp_path / "exp" / "MANIFEST.md").read_text()
    # summary says how it ended in MANIFEST.md's words.
    process_line = tracetop("summary", "exp", cwd=tmp_path).stdout.splitlines()[1]
    assert process_line.endswith("(ended normally)" if status == 0 else f"(ended: {manifest_says})")
    recorded = enters(tmp_path / "exp")
    assert recorded["__main__:end"] == 1
    # The program's atexit handlers run measured, where Python runs them.
    assert recorded["__main__:goodbye"] == (0 if how == "os-exit-3" else 1)


@pytest.mark.parametrize("instrumenter", INSTRUMENTERS)
@pytest.mark.parametrize("ending, calls", [("", {}), ("import sys\nsys.exit(0)\n", {"sys:exit": 1})])
def test_the_profile_holds_the_programs_calls_alone(instrumenter, ending, calls, tmp_path):
    # What tracetop calls as the program ends (its status made, sys.exit, its stop) is never the program's.
    source = "def f():\n    return 2\nf()\n" + ending
    traced = tracetop("--output", "exp", "--instrumenter", instrumenter, "-c", source, cwd=tmp_path)
    assert traced.returncode == 0, traced.stderr
    profile = reader.profile(str(tmp_path / "exp"))
    visits = {region["name"]: region["visits"] for region in profile["regions"]}
    c_calls = calls if instrumenter in C_CALL_INSTRUMENTERS else {}
    assert visits == {"__main__:<module>": 1, "__main__:f": 1, **c_calls}


@pytest.mark.parametrize("instrumenter", INSTRUMENTERS)
@pytest.mark.parametrize(
    "hook", ["", "import sys\ndef hook(*failure):\n    print('hooked', failure[0].__name__)\nsys.excepthook = hook\n"]
)
def test_an_uncaught_exception_is_reported_as_python_reports_it(instrumenter, hook, tmp_path):
    """Python calls sys.excepthook from C, no call of the program's: the profile holds no sys:excepthook, but a
    hook of the program's own, which runs its code, is recorded as the call it is."""
    source = hook + "def f():\n    raise ValueError('x')\nf()\n"
    plain = python("-c", source, cwd=tmp_path)
    traced = tracetop("--output", "exp", "--instrumenter", instrumenter, "-c", source, cwd=tmp_path)
    assert (traced.returncode, traced.stdout, program_stderr(traced.stderr)) == (1, plain.stdout, plain.stderr)
    visits = {region["name"]: region["visits"] for region in reader.profile(str(tmp_path / "exp"))["regions"]}
    assert "sys:excepthook" not in visits
    assert visits["__main__:f"] == 1 and visits.get("__main__:hook", 0) == (1 if hook else 0)


REDIRECTS_STDERR = """
import os, sys
os.dup2(os.open("program.err", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 2)
print("the program's error", file=sys.stderr)
"""


def test_tracetops_lines_stay_out_of_the_programs_redirected_stderr(tmp_path):
    """A program that points its fd 2 at a file of its own gets only its lines there; tracetop's go to the stderr
    the run began with (a file here, opened again by its path: tracetop holds no descriptor of the program's), or,
    where that has no path (a pipe), nowhere."""
    plain = python("-c", REDIRECTS_STDERR, cwd=tmp_path)
    said = (tmp_path / "program.err").read_text()
    assert (plain.returncode, plain.stderr, said) == (0, "", "the program's error\n")
    with open(tmp_path / "tracetop.err", "w") as stderr:
        traced = subprocess.run(
            [sys.executable, "-m", "tracetop", "--output", "exp", "-c", REDIRECTS_STDERR],
            cwd=tmp_path,
            env=environment(),
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            timeout=300,
        )
    assert (traced.returncode, (tmp_path / "program.err").read_text()) == (0, said)
    assert [line for line in tracetop_lines((tmp_path / "tracetop.err").read_text()) if "experiment in exp/" in line]
    piped = tracetop("--output", "exp2", "-c", REDIRECTS_STDERR, cwd=tmp_path)
    assert (piped.returncode, (tmp_path / "program.err").read_text()) == (0, said)


def test_a_syntax_error_is_reported_as_by_python(tmp_path):
    (tmp_path / "broken.py").write_text("print('never')\ndef (:\n")
    plain = python("broken.py", cwd=tmp_path)
    traced = tracetop("--output", "exp", "broken.py", cwd=tmp_path)
    assert plain.returncode == 1 and "SyntaxError" in plain.stderr
    assert (traced.returncode, traced.stdout, traced.stderr) == (1, "", plain.stderr)
    assert not (tmp_path / "exp").exists()


def test_stdin_is_the_programs(tmp_path):
    traced = tracetop(
        "--output", "exp", "-c", "import sys; print(sys.stdin.read().upper())", cwd=tmp_path, input="hello"
    )
    assert traced.stdout == "HELLO\n"


def test_interpreter_flags_apply_to_the_program(tmp_path):
    traced = python("-O", "-m", "tracetop", "--output", "exp", "-c", "assert False; print(__debug__)", cwd=tmp_path)
    assert (traced.returncode, traced.stdout) == (0, "False\n")


def test_console_script_runs_the_shorthand(tmp_path):
    traced = run(console_script(), "--output", "exp", "-c", "print('ran')", cwd=tmp_path)
    assert (traced.returncode, traced.stdout) == (0, "ran\n")
    assert (tmp_path / "exp" / "MANIFEST.md").exists()


@pytest.mark.skipif(sys.version_info < (3, 11), reason="python -P is new in 3.11")
def test_safe_path_adds_no_directory(tmp_path):
    shutil.copy(PROGRAMS / "context.py", tmp_path)
    plain = what_it_sees(python("-P", "context.py", cwd=tmp_path))
    assert what_it_sees(python("-P", "-m", "tracetop", "--output", "exp", "context.py", cwd=tmp_path)) == plain

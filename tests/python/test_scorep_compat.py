"""Score-P users switching with zero edits: scripts with `import scorep`, the Score-P bindings' flags, the
SCOREP_ variables for the experiment directory and what it holds, typed as a Score-P user types them."""

import re
import shutil
import subprocess

import pytest
from tracetop.compat import real_scorep

from helpers import (
    PROGRAMS,
    assert_complete,
    console_script,
    enters,
    environment,
    python,
    run,
    tracetop,
    tracetop_lines,
)

real_scorep_installed = pytest.mark.skipif(
    real_scorep() is not None,
    reason="the real scorep package is installed: it is the one imported",
)

FIB_15_CALLS = 1973  # fib(15) calls fib 2 * fib(16) - 1 times


def config(experiment):
    return dict(line.split("=", 1) for line in (experiment / "config.txt").read_text().splitlines())


def check_annotations(experiment):
    recorded = enters(experiment)
    assert recorded["user:manual"] == 3
    assert recorded["user:block"] == 1
    assert recorded["user:named"] == 1
    # The function's own call: its decorator's region, named alike, is not entered too.
    assert recorded["__main__:decorated"] == 1
    # work(10) twice, work(6) inside instrumenter.enable("inner"); not work(5) nor work(7).
    assert recorded["__main__:work"] == 3
    # instrumenter.enable("inner") switched the instrumentation on: Score-P marks that block as a region.
    assert recorded["user_instrumenter:inner"] == 1
    assert_complete(experiment)


@real_scorep_installed
def test_import_scorep_without_a_flag(tmp_path):
    completed = tracetop("--output", "exp", PROGRAMS / "scorep_annotated.py", cwd=tmp_path)
    assert (completed.returncode, completed.stdout) == (0, "done\n"), completed.stderr
    check_annotations(tmp_path / "exp")


@real_scorep_installed
def test_import_scorep_under_tracetop_run(tmp_path):
    completed = run(console_script(), "run", "--output", "exp", PROGRAMS / "scorep_annotated.py", cwd=tmp_path)
    assert (completed.returncode, completed.stdout) == (0, "done\n"), completed.stderr
    check_annotations(tmp_path / "exp")


@real_scorep_installed
def test_switched_off_the_error_says_how(tmp_path):
    completed = tracetop("--no-scorep-compat", "--output", "exp", PROGRAMS / "scorep_annotated.py", cwd=tmp_path)
    assert completed.returncode == 1
    assert "ModuleNotFoundError: No module named 'scorep'" in completed.stderr
    assert (
        "tracetop: note: `import scorep` finds tracetop's compatibility module unless it is switched off: "
        "leave out --no-scorep-compat" in completed.stderr
    )


def test_a_real_scorep_the_error_says_how(tmp_path):
    """The real bindings refuse to work outside `python -m scorep`; tracetop says why the program failed."""
    package = tmp_path / "site" / "scorep"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('scorep: not initialised, use python -m scorep')\n")
    completed = tracetop(
        "--output",
        "exp",
        PROGRAMS / "scorep_annotated.py",
        cwd=tmp_path,
        env=environment(PYTHONPATH=str(tmp_path / "site")),
    )
    assert completed.returncode == 1
    assert "RuntimeError: scorep: not initialised" in completed.stderr
    assert (
        f"tracetop: note: the program imported the real scorep package ({package}/), which only works under "
        "`python -m scorep`" in completed.stderr
    )


@real_scorep_installed
@pytest.mark.parametrize(
    "flags, instrumenter, note",
    [
        (["--user"], "profile", "not needed with tracetop, ignored: --user"),
        (["--instrumenter-type=cProfile"], "profile", None),
        (["--instrumenter-type=cTrace"], "trace", None),
        (["--instrumenter-type=profile"], "profile", None),
        (["--instrumenter-type=trace"], "trace", None),
        (["--instrumenter-type=None"], "none", None),
        (
            ["--instrumenter-type=dummy"],
            "none",
            "instrumenter dummy: Score-P's dummy instrumenter records no calls; tracetop's none records user regions",
        ),
        (
            ["--mpp=none", "--thread=pthread", "--io=posix", "--user"],
            "profile",
            "not needed with tracetop, ignored: --mpp=none --thread=pthread --io=posix --user",
        ),
    ],
)
def test_binding_flags(tmp_path, flags, instrumenter, note):
    completed = tracetop(*flags, "--output", "exp", PROGRAMS / "scorep_annotated.py", cwd=tmp_path)
    assert (completed.returncode, completed.stdout) == (0, "done\n"), completed.stderr
    assert config(tmp_path / "exp")["TRACETOP_INSTRUMENTER"] == instrumenter
    notes = [line for line in tracetop_lines(completed.stderr) if line.startswith("tracetop: note:")]
    assert notes == ([f"tracetop: note: {note}"] if note else [])
    recorded = enters(tmp_path / "exp")
    assert recorded["user:manual"] == 3
    assert recorded["__main__:work"] == (0 if instrumenter == "none" else 3)


@real_scorep_installed
@pytest.mark.parametrize("flag", ["--noinstrumenter", "--nopython"])
def test_noinstrumenter(tmp_path, flag):
    completed = tracetop(flag, "--output", "exp", PROGRAMS / "scorep_annotated.py", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    recorded = enters(tmp_path / "exp")
    # Only work(6), in instrumenter.enable("inner"), the block that switched it on.
    assert (recorded["__main__:work"], recorded["user_instrumenter:inner"], recorded["user:manual"]) == (1, 1, 3)


@real_scorep_installed
def test_instrumenter_file(tmp_path):
    """--instrumenter-file: regions made from outside the program's code, which runs unchanged."""
    completed = tracetop(
        "--noinstrumenter",
        "--instrumenter-file",
        PROGRAMS / "scorep_instrumenter.py",
        "--output",
        "exp",
        PROGRAMS / "scorep_external.py",
        cwd=tmp_path,
    )
    assert (completed.returncode, completed.stdout, tracetop_lines(completed.stderr)[:-1]) == (0, "baz 46 46\n", [])
    recorded = enters(tmp_path / "exp")
    # baz() calls bar() through the module, wrapped too; no call recorded but the regions.
    assert (recorded["user:baz"], recorded["scorep_helper:bar"], recorded["__main__:foo"]) == (2, 2, 0), recorded
    assert (
        "TRACETOP_INSTRUMENTER_FILE=" + str(PROGRAMS / "scorep_instrumenter.py")
        in (tmp_path / "exp" / "config.txt").read_text().splitlines()
    )
    assert_complete(tmp_path / "exp")


@pytest.mark.parametrize(
    "content, said",
    [
        (None, "cannot read the instrumenter file missing.py: No such file or directory"),
        ("def (:", "the instrumenter file missing.py is not Python: invalid syntax (line 1)"),
    ],
)
def test_a_bad_instrumenter_file(tmp_path, content, said):
    if content is not None:
        (tmp_path / "missing.py").write_text(content)
    completed = tracetop("--instrumenter-file=missing.py", "--output", "exp", PROGRAMS / "fib.py", "5", cwd=tmp_path)
    assert (completed.returncode, completed.stdout, completed.stderr) == (2, "", f"tracetop: error: {said}\n")
    assert not (tmp_path / "exp").exists()


# ---- the experiment directory ----


def test_an_existing_directory_is_renamed(tmp_path):
    scorep = environment(SCOREP_EXPERIMENT_DIRECTORY="exp")
    first = tracetop(PROGRAMS / "fib.py", "5", cwd=tmp_path, env=scorep)
    assert first.returncode == 0 and not [line for line in tracetop_lines(first.stderr) if "renamed" in line]
    first_trace = sorted((tmp_path / "exp" / "trace").iterdir())
    second = tracetop(PROGRAMS / "fib.py", "5", cwd=tmp_path, env=scorep)
    assert second.returncode == 0, second.stderr
    (renamed,) = [path for path in tmp_path.iterdir() if path.name != "exp"]
    assert re.fullmatch(r"exp-\d{8}_\d{6}", renamed.name)
    said = [line for line in tracetop_lines(second.stderr) if "renamed" in line]
    assert said == [f"tracetop: note: experiment directory 'exp' existed: renamed to '{renamed.name}'"]
    assert [path.name for path in (renamed / "trace").iterdir()] == [path.name for path in first_trace]
    assert (tmp_path / "exp" / "profile.txt").exists() and (renamed / "profile.txt").exists()

    # --output too, and a third run finds a free name beside the second.
    third = tracetop("--output", "exp", PROGRAMS / "fib.py", "5", cwd=tmp_path)
    assert third.returncode == 0, third.stderr
    assert len(list(tmp_path.iterdir())) == 3 and (tmp_path / "exp" / "config.txt").exists()


def test_overwriting_switched_off(tmp_path):
    tracetop("--output", "exp", PROGRAMS / "fib.py", "5", cwd=tmp_path)
    before = sorted(path.name for path in (tmp_path / "exp").iterdir())
    completed = tracetop(
        "--output",
        "exp",
        PROGRAMS / "fib.py",
        "5",
        cwd=tmp_path,
        env=environment(SCOREP_OVERWRITE_EXPERIMENT_DIRECTORY="false"),
    )
    assert completed.returncode == 2 and completed.stdout == ""
    assert completed.stderr == (
        "tracetop: error: experiment directory 'exp' exists and is not empty, and overwriting "
        "is off (SCOREP_OVERWRITE_EXPERIMENT_DIRECTORY=false)\n"
    )
    assert [path.name for path in tmp_path.iterdir()] == ["exp"]
    assert sorted(path.name for path in (tmp_path / "exp").iterdir()) == before


# ---- what the experiment holds, asked the Score-P way ----


def fib_visits(profile_text):
    """The visits of __main__:fib in the tables of regions in profile.txt (visits, then the region)."""
    rows = [line.split() for line in profile_text.splitlines() if "__main__:fib" in line.split()]
    visits = {fields[fields.index("__main__:fib") - 1] for fields in rows}
    return {int(field) for field in visits if field.isdigit()}


@pytest.mark.skipif(shutil.which("otf2-print") is None, reason="otf2-print (otf2-tools) is missing")
def test_scorep_enable_tracing_leaves_traces_otf2(tmp_path):
    completed = tracetop(
        PROGRAMS / "fib.py",
        "15",
        cwd=tmp_path,
        env=environment(SCOREP_EXPERIMENT_DIRECTORY="exp", SCOREP_ENABLE_TRACING="true"),
    )
    assert completed.returncode == 0, completed.stderr
    experiment = tmp_path / "exp"
    assert {"traces.otf2", "traces.def", "traces", "trace", "profile.txt"} <= {
        path.name for path in experiment.iterdir()
    }
    events = subprocess.run(["otf2-print", experiment / "traces.otf2"], capture_output=True, text=True, timeout=60)
    assert events.returncode == 0, events.stderr
    assert (
        sum(1 for line in events.stdout.splitlines() if line.startswith("ENTER") and '"__main__:fib"' in line)
        == FIB_15_CALLS
    )
    assert "`traces.otf2`" in (experiment / "MANIFEST.md").read_text()


def test_scorep_enable_profiling_leaves_profile_cubex(tmp_path):
    pycubexr = pytest.importorskip("pycubexr")
    completed = tracetop(
        PROGRAMS / "fib.py",
        "15",
        cwd=tmp_path,
        env=environment(SCOREP_EXPERIMENT_DIRECTORY="exp", SCOREP_ENABLE_PROFILING="true"),
    )
    assert completed.returncode == 0, completed.stderr
    assert not (tmp_path / "exp" / "traces.otf2").exists()
    with pycubexr.CubexParser(tmp_path / "exp" / "profile.cubex") as parser:
        visits = parser.get_metric_values(parser.get_metric_by_name("visits"))
        fib = [cnode for cnode in parser.all_cnodes() if parser.get_region(cnode).name == "__main__:fib"]
        assert sum(sum(visits.cnode_values(cnode)) for cnode in fib) == FIB_15_CALLS


@pytest.mark.parametrize("how", [{"SCOREP_ENABLE_TRACING": "false"}, {"TRACETOP_ENABLE_TRACING": "0"}, "--no-trace"])
def test_no_trace_keeps_an_exact_profile_alone(tmp_path, how):
    variables = how if isinstance(how, dict) else {}
    flags = [how] if isinstance(how, str) else []
    completed = tracetop(
        *flags,
        "--output",
        "exp",
        PROGRAMS / "fib.py",
        "15",
        cwd=tmp_path,
        env=environment(**variables, SCOREP_ENABLE_PROFILING="true"),
    )
    assert (completed.returncode, completed.stdout) == (0, "fib 610\n"), completed.stderr
    experiment = tmp_path / "exp"
    assert sorted(path.name for path in experiment.iterdir()) == [
        "MANIFEST.md",
        "config.txt",
        "profile.cubex",
        "profile.txt",
    ]
    assert fib_visits((experiment / "profile.txt").read_text()) == {FIB_15_CALLS}
    assert tracetop_lines(completed.stderr)[-1].endswith("see: exp/profile.txt")
    assert "the trace was not kept" in (experiment / "MANIFEST.md").read_text()
    assert config(experiment)["TRACETOP_ENABLE_TRACING"] == "false"


@real_scorep_installed
@pytest.mark.parametrize("start_method", ["spawn", "forkserver"])
def test_import_scorep_in_spawned_workers(tmp_path, start_method):
    """A pool's workers import the main module again: its `import scorep` is found there too (else each worker
    dies at once, and the pool starts another, for ever), and their regions are recorded."""
    completed = tracetop("--output", "exp", PROGRAMS / "scorep_pool.py", start_method, cwd=tmp_path, timeout=120)
    assert (completed.returncode, completed.stdout) == (0, "328350\n"), completed.stderr
    assert "ModuleNotFoundError" not in completed.stderr
    assert enters(tmp_path / "exp")["user:square"] == 100


@real_scorep_installed
def test_import_scorep_in_a_plain_run(tmp_path):
    """An annotated script runs plain where tracetop is installed: its annotations do nothing, as tracetop's own
    API outside a measurement; TRACETOP_SCOREP_COMPAT=false leaves the finder out from the start."""
    plain = python(PROGRAMS / "scorep_annotated.py", cwd=tmp_path)
    assert (plain.returncode, plain.stdout, plain.stderr) == (0, "done\n", "")
    assert not list(tmp_path.iterdir())  # nothing measured, nothing written
    switched_off = python(
        PROGRAMS / "scorep_annotated.py", cwd=tmp_path, env={**environment(), "TRACETOP_SCOREP_COMPAT": "false"}
    )
    assert switched_off.returncode == 1 and "No module named 'scorep'" in switched_off.stderr


@real_scorep_installed
def test_python_m_scorep_measures_the_program(tmp_path):
    """`python -m scorep app.py`, a Score-P job script's line, measures as `python -m tracetop` does."""
    completed = python("-m", "scorep", "--output", "exp", PROGRAMS / "scorep_annotated.py", cwd=tmp_path)
    assert (completed.returncode, completed.stdout) == (0, "done\n"), completed.stderr
    check_annotations(tmp_path / "exp")
    pool = python("-m", "scorep", "--output", "pool", PROGRAMS / "scorep_pool.py", "spawn", cwd=tmp_path, timeout=120)
    assert (pool.returncode, pool.stdout) == (0, "328350\n"), pool.stderr
    assert enters(tmp_path / "pool")["user:square"] == 100

"""The experiment directory: name, contents, configuration from options and environment; the commands
that make and read it."""

import os
import re

import pytest
from tracetop.options import OPTIONS

from helpers import PROGRAMS, console_script, environment, python, run, tracetop, tracetop_lines


def config(experiment):
    return dict(line.split("=", 1) for line in (experiment / "config.txt").read_text().splitlines())


def test_default_name_and_last_line(tmp_path):
    completed = tracetop(PROGRAMS / "ending.py", "return", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    (experiment,) = tmp_path.iterdir()
    match = re.fullmatch(r"tracetop-ending-\d{8}_\d{6}_(\d+)", experiment.name)
    assert match
    assert os.listdir(experiment / "trace") == [match.group(1)]  # the program ran in tracetop's process
    (last,) = tracetop_lines(completed.stderr)
    assert re.fullmatch(
        rf"tracetop: experiment in {experiment.name}/ \(\d+ events, [\d.]+ (bytes|KiB|MiB)\); "
        rf"see: tracetop summary {experiment.name}",
        last,
    )


def test_contents(tmp_path):
    completed = tracetop(
        "run",
        "--output",
        "exp",
        "--memory",
        "2m",
        "--instrumenter=trace",
        PROGRAMS / "ending.py",
        "exit-5",
        "0.05",
        cwd=tmp_path,
    )
    assert completed.returncode == 5
    experiment = tmp_path / "exp"
    assert sorted(os.listdir(experiment)) == ["MANIFEST.md", "config.txt", "profile.txt", "trace"]
    settings = config(experiment)
    assert list(settings) == [f"TRACETOP_{option.name}" for option in OPTIONS]
    assert settings["TRACETOP_TOTAL_MEMORY"] == str(2 << 20)
    assert settings["TRACETOP_INSTRUMENTER"] == "trace"
    assert settings["TRACETOP_EXPERIMENT_DIRECTORY"] == str(experiment)
    assert settings["TRACETOP_C_CALLS"] == "true"
    manifest = (experiment / "MANIFEST.md").read_text()
    for says in (
        "--memory 2m --instrumenter=trace",
        "ending.py exit-5",
        "exit status 5",
        "events in",
        "TRACETOP_TOTAL_MEMORY=2097152",
        "`profile.txt`",
        "`trace/`",
        "`config.txt`",
        "tracetop summary exp",
    ):
        assert says in manifest
    summary = tracetop("summary", "exp", cwd=tmp_path)
    assert (summary.returncode, summary.stderr) == (0, "")
    assert (experiment / "profile.txt").read_text() == summary.stdout
    assert "__main__:work_for" in summary.stdout


def test_no_profile(tmp_path):
    tracetop("--output", "exp", "--no-profile", "-c", "pass", cwd=tmp_path)
    assert not (tmp_path / "exp" / "profile.txt").exists()
    assert "profile.txt" not in (tmp_path / "exp" / "MANIFEST.md").read_text()
    assert config(tmp_path / "exp")["TRACETOP_ENABLE_PROFILING"] == "false"


@pytest.mark.parametrize(
    "variables, arguments, expected",
    [
        ({"SCOREP_TOTAL_MEMORY": "16000k"}, [], {"TRACETOP_TOTAL_MEMORY": str(16000 << 10)}),
        (
            {"SCOREP_TOTAL_MEMORY": "16000k", "TRACETOP_TOTAL_MEMORY": "32M"},
            [],
            {"TRACETOP_TOTAL_MEMORY": str(32 << 20)},
        ),
        ({"TRACETOP_TOTAL_MEMORY": "32M"}, ["--memory", "2m"], {"TRACETOP_TOTAL_MEMORY": str(2 << 20)}),
        ({"SCOREP_ENABLE_PROFILING": "false"}, [], {"TRACETOP_ENABLE_PROFILING": "false"}),
        ({"SCOREP_ENABLE_PROFILING": "false"}, ["--profile"], {"TRACETOP_ENABLE_PROFILING": "true"}),
        ({"SCOREP_ENABLE_TRACING": "0"}, [], {"TRACETOP_ENABLE_TRACING": "false"}),
        (
            {"TRACETOP_INSTRUMENTER": "none", "TRACETOP_C_CALLS": "no"},
            [],
            {"TRACETOP_INSTRUMENTER": "none", "TRACETOP_C_CALLS": "false"},
        ),
    ],
)
def test_environment(variables, arguments, expected, tmp_path):
    completed = tracetop("--output", "exp", *arguments, "-c", "pass", cwd=tmp_path, env=environment(**variables))
    assert completed.returncode == 0, completed.stderr
    assert expected.items() <= config(tmp_path / "exp").items()


@pytest.mark.parametrize(
    "variables, used",
    [
        ({"SCOREP_EXPERIMENT_DIRECTORY": "theirs"}, "theirs"),
        ({"SCOREP_EXPERIMENT_DIRECTORY": "theirs", "TRACETOP_EXPERIMENT_DIRECTORY": "mine"}, "mine"),
    ],
)
def test_experiment_directory_from_the_environment(variables, used, tmp_path):
    tracetop("-c", "pass", cwd=tmp_path, env=environment(**variables))
    assert os.listdir(tmp_path) == [used]


def test_the_environment_chooses_what_is_recorded(tmp_path):
    tracetop(
        "--output",
        "exp",
        PROGRAMS / "ending.py",
        "return",
        "0.05",
        cwd=tmp_path,
        env=environment(TRACETOP_INSTRUMENTER="none"),
    )
    assert "__main__:work" not in (tmp_path / "exp" / "profile.txt").read_text()
    tracetop("--output", "exp2", PROGRAMS / "ending.py", "return", "0.05", cwd=tmp_path)
    assert "__main__:work" in (tmp_path / "exp2" / "profile.txt").read_text()


def test_notes_for_what_is_not_needed(tmp_path):
    completed = tracetop(
        "--output",
        "exp",
        "--thread=pthread",
        "--compiler",
        "--no-trace",
        "--format",
        "otf2",
        "-c",
        "print('ran')",
        cwd=tmp_path,
    )
    assert completed.stdout == "ran\n"
    notes = [line for line in tracetop_lines(completed.stderr) if line.startswith("tracetop: note: ")]
    assert notes == ["tracetop: note: not needed with tracetop, ignored: --thread=pthread --compiler"]
    assert {"TRACETOP_ENABLE_TRACING": "false", "TRACETOP_FORMAT": "otf2"}.items() <= config(tmp_path / "exp").items()


def test_verbose(tmp_path):
    completed = tracetop("-v", "--output", "exp", "-c", "pass", cwd=tmp_path)
    assert "tracetop:   TRACETOP_VERBOSE=true" in completed.stderr.splitlines()
    assert len(tracetop_lines(completed.stderr)) > len(OPTIONS)


@pytest.mark.parametrize("command", [["run"], []])
def test_python_m_tracetop_commands(command, tmp_path):
    assert tracetop(*command, "--output", "exp", "-c", "print('ran')", cwd=tmp_path).stdout == "ran\n"
    summary = tracetop("summary", "--top", "3", "exp", cwd=tmp_path)
    assert summary.returncode == 0 and summary.stdout


def test_console_script(tmp_path):
    tracetop_command = console_script()
    assert run(tracetop_command, "run", "--output", "exp", "-c", "print('ran')", cwd=tmp_path).stdout == "ran\n"
    summary = run(tracetop_command, "summary", "exp", cwd=tmp_path)
    assert summary.returncode == 0 and summary.stdout == (tmp_path / "exp" / "profile.txt").read_text()


@pytest.mark.parametrize("arguments", [["--help"], ["run", "--help"], ["summary", "--help"], ["--version"]])
def test_help_and_version(arguments, tmp_path):
    completed = tracetop(*arguments, cwd=tmp_path)
    assert completed.returncode == 0 and completed.stdout and completed.stderr == ""


def test_run_help_names_every_option_and_its_environment_variable(tmp_path):
    text = " ".join(tracetop("run", "--help", cwd=tmp_path).stdout.split())
    for option in OPTIONS:
        for flag in (*option.flags, *option.switches):
            assert flag in text
        assert f"TRACETOP_{option.name}" in text


def test_python_alone_is_unchanged(tmp_path):
    assert python("-c", "import tracetop; print('imported')", cwd=tmp_path).stdout == "imported\n"
    assert os.listdir(tmp_path) == []

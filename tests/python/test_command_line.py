"""The command line as a new user meets it: experiments named after their program, the latest one taken when none
is named (and said which), the report written into the experiment, did-you-mean for commands and options, and a
running experiment called running."""

import re
import subprocess
import sys

from browser import page_of, screenshot
from helpers import PROGRAMS, environment, tracetop, tracetop_lines


def test_names_and_the_latest_experiment(tmp_path):
    first = tracetop(PROGRAMS / "fib.py", "12", cwd=tmp_path)
    second = tracetop("-m", "json.tool", "--help", cwd=tmp_path)
    third = tracetop("-c", "print(1)", cwd=tmp_path)
    assert first.returncode == second.returncode == third.returncode == 0, (first.stderr, second.stderr, third.stderr)
    names = sorted(path.name for path in tmp_path.iterdir())
    assert [re.sub(r"-\d{8}_\d{6}_\d+$", "-DATE", name) for name in names] == [
        "tracetop-c-DATE",
        "tracetop-fib-DATE",
        "tracetop-json.tool-DATE",
    ]
    latest = next(name for name in names if name.startswith("tracetop-c-"))
    for command in (["summary"], ["score"], ["convert", "--to", "collapsed"], ["report"]):
        completed = tracetop(*command, cwd=tmp_path)
        assert completed.returncode == 0, completed.stderr
        assert f"tracetop: note: the latest experiment here: {latest}" in tracetop_lines(completed.stderr)
    view, url, said = view_of([], tmp_path)
    view.terminate()
    view.communicate(timeout=60)
    assert said[0] == f"tracetop: note: the latest experiment here: {latest}" and url.startswith("http://127.0.0.1:")
    assert (tmp_path / latest / "report.html").stat().st_size > 1000
    assert (tmp_path / latest / "collapsed.txt").exists() or any((tmp_path / latest).glob("*collapsed*"))
    named = tracetop("summary", names[1], cwd=tmp_path)
    assert "fib" in named.stdout and not any("latest" in line for line in tracetop_lines(named.stderr))


def test_no_experiment_here(tmp_path):
    completed = tracetop("summary", cwd=tmp_path)
    assert completed.returncode == 2
    assert tracetop_lines(completed.stderr) == [
        "tracetop: error: no experiment named and none in this directory: name one (tracetop COMMAND EXP)"
    ]


def test_did_you_mean(tmp_path):
    command = tracetop("sumary", "exp", cwd=tmp_path)
    assert command.returncode == 2
    (line,) = tracetop_lines(command.stderr)
    assert re.fullmatch(
        r"tracetop: error: no command or file 'sumary': did you mean `(\S+ -m )?tracetop summary`\?", line
    ), line
    option = tracetop("summary", "--tpo=3", cwd=tmp_path)
    assert option.returncode == 2
    assert "unrecognized arguments: --tpo=3 (did you mean --top?)" in option.stderr
    # A misspelled option whose right spelling is required: named, not only the required one said missing.
    required = tracetop("convert", "--too", "chrome", cwd=tmp_path)
    assert required.returncode == 2
    assert "the following arguments are required: --to (--too: did you mean --to?)" in required.stderr
    # Before the program's name, `run`'s options too; and a format's name.
    run = tracetop("run", "--objets", "-c", "pass", cwd=tmp_path)
    assert run.returncode == 2 and "unrecognized arguments: --objets (did you mean --objects?)" in run.stderr
    assert not any(tmp_path.iterdir())  # nothing was run
    completed = tracetop("-c", "pass", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    format = tracetop("convert", "--to", "chrme", cwd=tmp_path)
    assert format.returncode == 2 and tracetop_lines(format.stderr)[-1].endswith("collapsed): did you mean chrome?")
    assert "Traceback" not in command.stderr + option.stderr + required.stderr + run.stderr + format.stderr
    far = tracetop("no_such_script_anywhere.py", cwd=tmp_path)  # not near a command: a script that is missing
    assert far.returncode != 0 and "did you mean" not in far.stderr


def view_of(experiment, cwd):
    """`tracetop view --no-browser EXP` started: (the process, its URL, its stderr lines up to serving)."""
    view = subprocess.Popen(
        [sys.executable, "-m", "tracetop", "view", "--no-browser", *experiment],
        cwd=cwd,
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = view.stdout.readline().strip()
    said = []
    while not said or "serving the viewer" not in said[-1]:
        said.append(view.stderr.readline().rstrip("\n"))
        assert said[-1] or view.poll() is None, said
    return view, url, said


def test_a_running_experiment_is_called_running(browser, tmp_path):
    """Every command that reads an experiment says one that is still being measured is running, and calls what
    its trace lacks so far neither a crash nor a warning: summary, score, convert, report, and view (on the
    command line and on the page)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tracetop", "--output", "exp", str(PROGRAMS / "waiting.py")],
        cwd=tmp_path,
        env=environment(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    being_measured = f"tracetop: note: exp is still being measured (process {process.pid} running)"
    try:
        assert process.stdout.readline().startswith("waiting")
        running = tracetop("summary", "exp", cwd=tmp_path)
        assert running.returncode == 0, running.stderr
        assert re.search(rf"^process {process.pid} .*\(still running\)$", running.stdout, re.M), running.stdout
        assert "did not end normally" not in running.stdout
        for command in (["summary", "exp"], ["score", "exp"], ["convert", "exp", "--to", "chrome"], ["report", "exp"]):
            completed = tracetop(*command, cwd=tmp_path)
            assert completed.returncode == 0, completed.stderr
            lines = tracetop_lines(completed.stderr)
            assert any(line.startswith(being_measured) for line in lines), (command, lines)
            assert not any(line.startswith("tracetop: warning:") for line in lines), (command, lines)
        view, url, said = view_of(["exp"], tmp_path)
        try:
            assert any(line.startswith(being_measured) for line in said), said
            assert not any(line.startswith("tracetop: warning:") for line in said), said
            with page_of(browser, url) as page:
                page.wait_for_function("window.tracetopViewer && window.tracetopViewer.ready()")
                assert page.inner_text("#status") == (
                    f"still being measured (process {process.pid} running): what it had written when opened"
                )
                screenshot(page, "viewer-running-experiment")
            with page_of(browser, (tmp_path / "exp" / "report.html").as_uri()) as page:
                assert page.inner_text("#running").startswith(f"Still being measured (process {process.pid} running)")
                assert page.locator("#problems").is_hidden()
        finally:
            view.terminate()
            view.communicate(timeout=60)
    finally:
        process.communicate("", timeout=60)
    ended = tracetop("summary", "exp", cwd=tmp_path)
    assert ended.returncode == 0 and "(ended normally)" in ended.stdout
    assert not any("still" in line for line in tracetop_lines(ended.stderr))
    view, url, said = view_of(["exp"], tmp_path)  # the index of the part written so far is made anew
    try:
        assert any(line.startswith("tracetop: note: indexed exp in") for line in said), said
        with page_of(browser, url) as page:
            page.wait_for_function("window.tracetopViewer && window.tracetopViewer.ready()")
            assert not page.inner_text("#status").startswith("still")
    finally:
        view.terminate()
        view.communicate(timeout=60)

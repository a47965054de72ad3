"""An experiment is its user's alone: tracetop makes it owner-only (files 0600, folders 0700, as the live channel),
writes only into a directory of its user's that no one else may change, and never writes through a symbolic link
another local user planted where it writes (the trace's files, MANIFEST.md, report.html, view.idx, conversions): the
file the link names stays as it was. The second user is a child process that takes another uid, as root may."""

import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest

from helpers import PROGRAMS, python, reader, tracetop

OTHER_UID = 54321  # no such user needs to exist for a process to take its uid

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="taking another uid needs root")


def as_other_user(action):
    """Calls `action` in a child process that has taken the other user's uid."""
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            os.setgid(OTHER_UID)
            os.setuid(OTHER_UID)
            action()
            status = 0
        finally:
            os._exit(status)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


@pytest.fixture
def shared():
    """A directory every user may make things in, as /tmp (pytest's own are its user's alone), removed after."""
    path = Path(tempfile.mkdtemp(prefix="tracetop-test-"))
    path.chmod(0o1777)
    yield path
    shutil.rmtree(path)


def assert_one_error(completed, message):
    assert completed.returncode != 0 and "Traceback" not in completed.stderr
    assert completed.stderr.splitlines() == [f"tracetop: error: {message}"], completed.stderr


@needs_root
def test_an_experiment_directory_another_user_made_first_is_refused(shared, tmp_path):

    def make():
        os.mkdir(shared / "exp")
        os.chmod(shared / "exp", 0o777)

    as_other_user(make)
    run = tracetop("--output", shared / "exp", "-c", "print('ran')", cwd=tmp_path)
    assert_one_error(run, f"cannot use {str(shared / 'exp')!r} as experiment directory: it belongs to another user")
    assert run.stdout == "" and os.listdir(shared / "exp") == []


def test_an_experiment_directory_others_may_write_in_is_refused(tmp_path):
    (tmp_path / "exp").mkdir()
    (tmp_path / "exp").chmod(0o757)
    run = tracetop("--output", "exp", "-c", "print('ran')", cwd=tmp_path)
    assert_one_error(run, "cannot use 'exp' as experiment directory: other users may write in it (chmod go-w it first)")
    (tmp_path / "exp").chmod(0o755)
    assert tracetop("--output", "exp", "-c", "print('ran')", cwd=tmp_path).stdout == "ran\n"


@needs_root
def test_an_experiment_directory_another_group_may_write_in_is_refused(tmp_path):
    (tmp_path / "exp").mkdir()
    os.chown(tmp_path / "exp", 0, OTHER_UID)
    (tmp_path / "exp").chmod(0o775)
    run = tracetop("--output", "exp", "-c", "print('ran')", cwd=tmp_path)
    assert_one_error(run, "cannot use 'exp' as experiment directory: other users may write in it (chmod go-w it first)")


@needs_root
def test_links_planted_in_another_users_experiment_are_not_followed(shared, tmp_path):
    """`tracetop report`/`convert` on an experiment another user owns: their report.html, trace.chrome.json,
    view.idx and traces.def (OTF2's) may be links to a file of ours. Each is refused or replaced, never written
    through."""
    assert tracetop("--output", shared / "exp", PROGRAMS / "fib.py", cwd=tmp_path).returncode == 0
    for root, folders, files in os.walk(shared / "exp"):
        for name in folders + files:
            os.chmod(os.path.join(root, name), 0o755 if name in folders else 0o644)
    os.chmod(shared / "exp", 0o777)
    os.chown(shared / "exp", OTHER_UID, OTHER_UID)
    victim = shared / "victim.txt"
    victim.write_text("precious\n")

    def plant():
        for name in ("report.html", "trace.chrome.json", "view.idx", "traces.def"):
            os.symlink(victim, shared / "exp" / name)

    as_other_user(plant)

    report = tracetop("report", shared / "exp", cwd=tmp_path)
    assert report.returncode == 2 and "Traceback" not in report.stderr
    assert report.stderr.splitlines()[-1] == (
        f"tracetop: error: cannot write {shared / 'exp' / 'report.html'}: it is a symbolic link, which is not followed"
    )
    converted = tracetop("convert", shared / "exp", "--to", "chrome", cwd=tmp_path)
    assert converted.returncode == 2 and converted.stderr.splitlines()[-1] == (
        f"tracetop: error: cannot write {shared / 'exp' / 'trace.chrome.json'}: it is a symbolic link, which is not followed"
    )
    if "otf2" in reader.FORMATS:  # libotf2 opens its files by name: their names are looked at first
        archive = tracetop("convert", shared / "exp", "--to", "otf2", cwd=tmp_path)
        assert archive.returncode == 2 and archive.stderr.splitlines()[-1] == (
            f"tracetop: error: cannot write {shared / 'exp' / 'traces.def'}: it is a symbolic link, which is not "
            "followed"
        )
    elsewhere = tracetop("report", shared / "exp", "-o", tmp_path / "report.html", cwd=tmp_path)
    assert elsewhere.returncode == 0, elsewhere.stderr
    assert victim.read_text() == "precious\n"
    assert victim.stat().st_mode & 0o777 == 0o644 and victim.stat().st_uid == 0


def test_a_link_planted_in_the_trace_is_not_followed(tmp_path):
    """Links where the writer will create a thread's file (as another user could plant them in a directory of
    theirs while the program runs): the writer stops there, says why, and the linked file stays as it was."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    run = tracetop("--output", "exp", PROGRAMS / "planted.py", "exp", victim, cwd=tmp_path)
    assert (run.returncode, run.stdout) == (0, "ran\n"), run.stderr
    assert victim.read_text() == "precious\n"
    pid = next(name for name in os.listdir(tmp_path / "exp" / "trace"))
    cut = (
        f"trace cut short in process {pid}: something not made by tracetop lay where it writes, and is left alone "
        f"(cannot create {tmp_path / 'exp' / 'trace' / pid / '1.tts'}: File exists); what the program did after "
        "that is not recorded"
    )
    assert f"tracetop: warning: {cut}\n" in run.stderr
    assert f"- {cut}\n" in (tmp_path / "exp" / "MANIFEST.md").read_text()
    summary = tracetop("summary", "exp", cwd=tmp_path)
    assert f"tracetop: warning: {cut}" in summary.stderr.splitlines()


def test_every_file_of_an_experiment_is_its_owners_alone(tmp_path):
    run = tracetop("--output", "exp", "--format", "chrome", PROGRAMS / "fib.py", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert tracetop("report", "exp", cwd=tmp_path).returncode == 0
    modes = {}
    for root, folders, files in os.walk(tmp_path / "exp"):
        for name in folders + files:
            path = os.path.join(root, name)
            modes[os.path.relpath(path, tmp_path / "exp")] = stat.S_IMODE(os.lstat(path).st_mode)
    modes["."] = stat.S_IMODE(os.lstat(tmp_path / "exp").st_mode)
    assert {"MANIFEST.md", "config.txt", "profile.txt", "trace.chrome.json", "report.html", "view.idx"} <= modes.keys()
    assert any(name.endswith("defs.tts") for name in modes) and any(name.endswith("0.tts") for name in modes)
    assert {name: mode for name, mode in modes.items() if mode not in (0o600, 0o700)} == {}
    assert all((mode == 0o700) == os.path.isdir(tmp_path / "exp" / name) for name, mode in modes.items())
    assert python("-c", "pass", cwd=tmp_path).returncode == 0

"""`--objects` where the Python cannot count objects: one line says so, the run goes on without them, and
MANIFEST.md says why. Shown with a real such Python when the machine has one: Debian's python3.X (its
libpython linked into the executable, nothing to wedge) of the version running the tests, importing the
tracetop installed here (the same minor version keeps the same ABI)."""

import subprocess
import sys
from pathlib import Path

import pytest
import tracetop

from helpers import PROGRAMS, environment, streams, tracetop_lines

SYSTEM_PYTHON = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")


def static_libpython(executable):
    """Whether `executable` runs with its libpython linked in (no libpython among the libraries it loads)."""
    if sys.version_info >= (3, 13) or not executable.exists() or executable.resolve() == Path(sys.executable).resolve():
        return False
    libraries = subprocess.run(["ldd", str(executable)], capture_output=True, text=True)
    return libraries.returncode == 0 and "libpython" not in libraries.stdout


@pytest.mark.skipif(not static_libpython(SYSTEM_PYTHON), reason=f"no {SYSTEM_PYTHON} with a static libpython")
def test_a_python_that_cannot_count_says_so_once_and_runs_on(tmp_path):
    env = environment(PYTHONPATH=str(Path(tracetop.__file__).parent.parent))
    version = subprocess.run(
        [SYSTEM_PYTHON, "-c", "import platform; print(platform.python_version())"],
        capture_output=True,
        text=True,
        env=env,
    ).stdout.strip()
    program = PROGRAMS / "objects.py"
    plain = subprocess.run([SYSTEM_PYTHON, program], capture_output=True, text=True, cwd=tmp_path, env=env)
    completed = subprocess.run(
        [SYSTEM_PYTHON, "-m", "tracetop", "run", "--objects", "--output", "exp", program],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert (completed.returncode, completed.stdout) == (plain.returncode, plain.stdout) == (0, "done 3000\n")
    said = [line for line in tracetop_lines(completed.stderr) if "objects" in line]
    assert said == [
        f"tracetop: note: objects cannot be counted on this Python {version}: its libpython is not a "
        "shared library whose own calls can be wedged (Python 3.13 and later need no wedge); the run "
        "goes on without --objects"
    ], completed.stderr
    assert "Traceback" not in completed.stderr
    manifest = (tmp_path / "exp" / "MANIFEST.md").read_text()
    assert f"- objects: not counted: objects cannot be counted on this Python {version}" in manifest
    events = [event for *_, events, state, _ in streams(tmp_path / "exp") for event in events]
    assert not [event for event in events if event[0] == "objects"]
    assert [event for event in events if event[0] == "enter"]  # the calls were recorded all the same

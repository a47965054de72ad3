"""`import scorep` under `tracetop run --scorep-compat`: Score-P annotations recorded by tracetop."""
import importlib.util

import pytest

from helpers import PROGRAMS, assert_complete, enters, environment, tracetop

pytestmark = pytest.mark.skipif(importlib.util.find_spec("scorep") is not None,
                                reason="the real scorep package is installed: it is the one imported")


def test_scorep_annotations_are_recorded(tmp_path):
    completed = tracetop("run", "--scorep-compat", "--output", "exp", PROGRAMS / "scorep_annotated.py", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "done\n"
    recorded = enters(tmp_path / "exp")
    assert recorded["user:manual"] == 3
    assert recorded["user:block"] == 1
    assert recorded["user:named"] == 1
    # The function's own call and the decorator's region, named alike.
    assert recorded["__main__:decorated"] == 2
    # work(10) twice, work(6) inside instrumenter.enable(); not work(5) nor work(7).
    assert recorded["__main__:work"] == 3
    assert_complete(tmp_path / "exp")


def test_without_the_option_scorep_is_not_importable(tmp_path):
    completed = tracetop("run", "--output", "exp", PROGRAMS / "scorep_annotated.py", cwd=tmp_path)
    assert completed.returncode == 1
    assert "ModuleNotFoundError: No module named 'scorep'" in completed.stderr


def test_scorep_compat_from_the_environment(tmp_path):
    completed = tracetop("run", "--output", "exp", PROGRAMS / "scorep_annotated.py", cwd=tmp_path,
                         env=environment(TRACETOP_SCOREP_COMPAT="1"))
    assert completed.returncode == 0, completed.stderr
    assert enters(tmp_path / "exp")["user:manual"] == 3

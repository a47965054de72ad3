"""Off means untouched (issue 10): on Python 3.11 and 3.12, libpython's offset table sends its calls of
_Py_NewReference and _Py_Dealloc to tracetop only while objects are counted; a run without --objects
changes nothing there (read by the program itself: programs/objects_wedges.py). 3.13's reference tracer:
test_objects.py::test_without_objects_nothing_is_counted_or_changed."""

import sys

import pytest

from helpers import COUNTS_OBJECTS, PROGRAMS, tracetop

pytestmark = pytest.mark.skipif(
    not COUNTS_OBJECTS or sys.version_info >= (3, 13),
    reason="objects are counted by wedges on shared libpythons before 3.13",
)


def test_the_offset_table_is_wedged_only_while_counting(tmp_path):
    completed = tracetop("--output", "exp", PROGRAMS / "objects_wedges.py", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "before [False, False]\ncounting [True, True]\nafter [False, False]\n"

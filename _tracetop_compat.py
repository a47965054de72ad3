"""The finder of tracetop's compatibility modules (tracetop/compat: `scorep`), which programs written for
other tools import by those tools' names.

tracetop-follow.pth imports this module in every interpreter of the environment tracetop is installed in, as
it starts, so that `import scorep` and `python -m scorep` work there, in a plain run as in a measured one and in
the child processes of either, without touching sys.path. The finder sits at the end of sys.meta_path, asked
only once the usual finders found nothing: a real package of the same name, where installed, is found first
and wins. It is kept apart from the tracetop package so that an interpreter's start imports this file alone
(the way setuptools' distutils-precedence.pth imports _distutils_hack); tracetop is imported only by a
program that imports a compatibility module. TRACETOP_SCOREP_COMPAT=false (tracetop's option
--no-scorep-compat) leaves it out."""

import os
import sys
from _frozen_importlib_external import PathFinder  # importlib.machinery's; importlib's __init__ is start-up

DIRECTORY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tracetop", "compat")
NAMES = ("scorep",)  # the top-level modules there


class Finder:
    """A meta path finder (importlib.abc.MetaPathFinder's protocol; importlib.abc itself imports
    importlib.resources, more start-up than all of this)."""

    def find_spec(self, name, path=None, target=None):
        if name in NAMES:
            return PathFinder.find_spec(name, [DIRECTORY], target)
        return None  # submodules are found by the usual finders, in their package's __path__


FINDER = Finder()


def install():
    if FINDER not in sys.meta_path:
        sys.meta_path.append(FINDER)


def uninstall():
    if FINDER in sys.meta_path:
        sys.meta_path.remove(FINDER)


if os.environ.get("TRACETOP_SCOREP_COMPAT", "").strip().lower() not in ("0", "false", "no", "off"):
    install()

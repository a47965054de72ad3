"""Compatibility modules that programs written for other tools import by those tools' names.

install() makes them importable without touching sys.path, which the program sees as python gives it:
a finder at the end of sys.meta_path, asked only once the usual ones found nothing, so that a real package
of the same name, where installed, is found first and wins. `tracetop run` (unless
--no-scorep-compat), tracetop.start() and the Jupyter magics call it."""

import os
import sys
from _frozen_importlib_external import PathFinder  # importlib.machinery's; importlib's __init__ is start-up

DIRECTORY = os.path.dirname(os.path.abspath(__file__))
NAMES = ("scorep",)  # the top-level modules here


class _Finder:
    """A meta path finder (importlib.abc.MetaPathFinder's protocol; importlib.abc itself imports
    importlib.resources, more start-up than the rest of tracetop)."""

    def find_spec(self, name, path=None, target=None):
        if name in NAMES:
            return PathFinder.find_spec(name, [DIRECTORY], target)
        return None  # submodules are found by the usual finders, in their package's __path__


_FINDER = _Finder()


def install():
    """Makes `import scorep` find tracetop's compatibility module unless the real scorep is installed."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.append(_FINDER)


def explain(failure, installed):
    """What to do about `failure`, an exception that ended the program, where it comes from `import scorep`
    not finding tracetop's module (`installed`: whether install() was called); else None."""
    if isinstance(failure, ModuleNotFoundError) and failure.name == "scorep" and not installed:
        return (
            "`import scorep` finds tracetop's compatibility module unless it is switched off: leave out "
            "--no-scorep-compat (or TRACETOP_SCOREP_COMPAT=false)"
        )
    real = real_scorep()
    frames = failure.__traceback__
    while real and frames is not None:
        if frames.tb_frame.f_code.co_filename.startswith(real):
            return (
                f"the program imported the real scorep package ({real}), which only works under "
                "`python -m scorep`; to measure it with tracetop, run it where that package is not installed"
            )
        frames = frames.tb_next
    return None


def real_scorep():
    """The directory of the real scorep package when one is installed, else None."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("scorep")
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec else []
    real = [location for location in locations if not location.startswith(DIRECTORY)]
    return os.path.join(real[0], "") if real else None

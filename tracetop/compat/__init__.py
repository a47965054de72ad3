"""Compatibility modules that programs written for other tools import by those tools' names.

Found through _tracetop_compat's finder, which every interpreter of tracetop's environment installs as it starts
(tracetop-follow.pth): at the end of sys.meta_path, asked only once the usual ones found nothing, so that a real
package of the same name, where installed, is found first and wins. A measurement installs it too (an
interpreter started with -S reads no .pth) unless --no-scorep-compat, which takes it out, as
TRACETOP_SCOREP_COMPAT=false does at the start."""

import os

from _tracetop_compat import DIRECTORY, install, uninstall  # noqa: F401 (tracetop.compat.install, .uninstall)


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

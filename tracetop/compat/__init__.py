"""Compatibility modules that programs written for other tools import by those tools' names.

This directory is never on sys.path by itself: install() appends it, at the end, so that a real
package of the same name, where installed, is found first and wins. Only `tracetop run --scorep-compat`
and the Jupyter magics call it."""

import os
import sys

DIRECTORY = os.path.dirname(os.path.abspath(__file__))


def install():
    """Makes `import scorep` find tracetop's compatibility module unless the real scorep is installed."""
    if DIRECTORY not in sys.path:
        sys.path.append(DIRECTORY)

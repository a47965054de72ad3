"""`import scorep` for programs and notebooks written for the Score-P Python bindings, measured by tracetop
(`tracetop run`, `python -m tracetop`, the Jupyter magics). Only found when the real scorep package is not
installed; see tracetop.compat.

scorep.user.* and scorep.instrumenter.* are tracetop's own API under Score-P's names, so annotations
run unchanged; outside a measurement each call is a cheap no-op, as tracetop's are."""

from scorep import instrumenter, user

__all__ = ["instrumenter", "user"]

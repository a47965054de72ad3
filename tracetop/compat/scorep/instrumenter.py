"""scorep.instrumenter: the automatic instrumentation switched on and off, as the Score-P Python bindings
name it. Both work as context managers and decorators, as tracetop.instrumenter's do."""

from tracetop import instrumenter


def enable(region_name=""):
    """Records every call from here (to the end of the block, or during each call of a decorated function).
    Score-P opens a region named `region_name` around the block; tracetop records the calls in it, which
    show the same span, and takes the name for Score-P's sake only."""
    return instrumenter.enable()


def disable(region_name=""):
    """Records no automatic calls from here; user regions still are."""
    return instrumenter.disable()

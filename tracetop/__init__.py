"""tracetop: timeline tracing and profiling of Python programs, with a C measurement core.

Run a program under measurement with `tracetop run script.py` (or `python -m tracetop script.py`), or
measure part of one with tracetop.start(). The program annotates itself with the API below; outside a
measurement every call is a cheap no-op, so annotated code runs unchanged without tracetop.

    with tracetop.region("load"): ...          # a user region, user:load; @tracetop.region() on a function
    tracetop.region_begin("x"); tracetop.region_end("x")
    tracetop.parameter_int("n", 5); tracetop.parameter_uint("u", 5); tracetop.parameter_string("mode", "fast")
    tracetop.counter("queue_len", 17); tracetop.mark("checkpoint")
    tracetop.disable_recording(); tracetop.enable_recording()
    with tracetop.instrumenter.disable(): ...  # also enable(); both work as decorators
    tracetop.objects.enable(); tracetop.objects.disable()  # count objects by type and creating region (3.13+)
    with tracetop.start(output="exp"): ...     # or session = tracetop.start(...); session.stop()
"""

from tracetop._tracetop import (
    TraceError,
    __version__,  # noqa: F401 (tracetop.__version__)
    counter,
    disable_recording,
    enable_recording,
    mark,
    parameter_int,
    parameter_string,
    parameter_uint,
    region_begin,
    region_end,
)

__all__ = [
    "Session",
    "TraceError",
    "counter",
    "disable_recording",
    "enable_recording",
    "instrumenter",
    "mark",
    "objects",
    "parameter_int",
    "parameter_string",
    "parameter_uint",
    "region",
    "region_begin",
    "region_end",
    "start",
]


def load_ipython_extension(ipython):
    """`%load_ext tracetop`: tracetop's magics in this IPython (tracetop.jupyter)."""
    from tracetop import jupyter

    jupyter.load_ipython_extension(ipython)


# Loaded when first asked for, so that `import tracetop` stays light: for programs that are not measured, and
# at the start of every measured one (each module is start-up that every run would pay).
def __getattr__(name):
    if name in ("Session", "start"):
        from tracetop import session

        return getattr(session, name)
    if name == "region":
        from tracetop.regions import region

        return region
    if name in ("instrumenter", "objects"):
        __import__(f"tracetop.{name}")  # sets the attribute: `from tracetop import` would ask for it again, here
        return globals()[name]
    raise AttributeError(f"module 'tracetop' has no attribute {name!r}")

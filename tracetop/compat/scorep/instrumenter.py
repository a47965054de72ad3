"""scorep.instrumenter: the automatic instrumentation switched on and off, as the Score-P Python bindings
name it. enable() and disable() work as context managers and decorators, as tracetop.instrumenter's do;
register() and unregister() switch for good."""

import functools

from tracetop import _tracetop, instrumenter
from tracetop.instrumenter import _set


def enable(region_name=""):
    """Records every call from here (to the end of the block, or during each call of a decorated function).
    Where this switches the instrumentation on, the block is also the user region `region_name`, as
    Score-P marks it (recorded as `user:<region_name>`, as scorep.user.region names its regions)."""
    return _switch(True, region_name)


def disable(region_name=""):
    """Records no automatic calls from here; user regions still are. Where this switches the
    instrumentation off, the block is the user region `region_name`, as for enable()."""
    return _switch(False, region_name)


def register():
    _tracetop.instrumenter_enable()


def unregister():
    _tracetop.instrumenter_disable()


def _switch(enabled, region_name):
    if region_name and _tracetop.instrumenter_enabled() != enabled:
        return _NamedSwitch(enabled, region_name)
    return (instrumenter.enable if enabled else instrumenter.disable)()


class _NamedSwitch(_tracetop.Region):
    """A switch that is a user region too. The region opens in the C __enter__ that the `with` statement
    calls after __init__ switched, and closes in the C __exit__, so that it is well nested in the caller's
    frame (see tracetop.regions); only the switch back is Python."""

    __slots__ = ("_enabled", "_previous")

    def __init__(self, enabled, region_name):
        super().__init__("user:" + region_name)
        self._enabled = enabled
        self._previous = _tracetop.instrumenter_enabled()
        _set(enabled)

    def __exit__(self, *exc_info):
        _set(self._previous)
        return super().__exit__(*exc_info)

    def __call__(self, function):
        _set(self._previous)  # as a decorator it switches during calls, not now
        enabled, region_name = self._enabled, self.name.removeprefix("user:")

        @functools.wraps(function)
        def switched(*args, **kwargs):
            with _switch(enabled, region_name):
                return function(*args, **kwargs)

        return switched

"""scorep.instrumenter: the automatic instrumentation switched on and off, as the Score-P Python bindings
name it. enable() and disable() work as context managers and decorators, as tracetop.instrumenter's do;
register() and unregister() switch for good."""

import functools

from tracetop import _tracetop, instrumenter


def enable(region_name=""):
    """Records every call from here (to the end of the block, or during each call of a decorated function).
    Where this switches the instrumentation on, the block is also the user region `region_name`, recorded as
    `user_instrumenter:<region_name>`, as Score-P names it."""
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
    if region_name:
        return _NamedSwitch("user_instrumenter:" + region_name, switch=enabled)
    return (instrumenter.enable if enabled else instrumenter.disable)()


class _NamedSwitch(_tracetop.Region):
    """A switch that is a user region too, as a context manager or decorator: the switch, the region's begin and
    end, and the switch back are all made by the C __enter__ and __exit__, which keeps the region well nested
    in the caller's frame (see tracetop.regions), and which, as Score-P's, switch (and mark the region) only
    where the instrumenter is not already as asked."""

    __slots__ = ()

    def __call__(self, function):
        name, enabled = self.name, bool(self.switch)

        @functools.wraps(function)
        def switched(*args, **kwargs):
            with _NamedSwitch(name, switch=enabled):
                return function(*args, **kwargs)

        return switched

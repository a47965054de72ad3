"""Switching the automatic instrumentation (the recording of every call) on and off while measuring.

`tracetop.instrumenter.disable()` switches it off at once; used in a `with` statement it switches back
to what it was at the end of the block; used as a decorator it switches for each call of the function.
`enable()` likewise. User regions are recorded either way. Off, tracetop's hook leaves every thread, so that
the program runs at its own speed; the calls running across a switch still end where they end."""

from tracetop import _tracetop


def enable():
    return _Switch(True)


def disable():
    return _Switch(False)


def _set(enabled):
    (_tracetop.instrumenter_enable if enabled else _tracetop.instrumenter_disable)()


class _Switch:
    __slots__ = ("_enabled", "_previous")

    def __init__(self, enabled):
        self._enabled = enabled
        self._previous = _tracetop.instrumenter_enabled()
        _set(enabled)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        _set(self._previous)

    def __call__(self, function):
        _set(self._previous)  # as a decorator it switches during calls, not now
        enabled = self._enabled
        import functools  # here, when a function is decorated: not start-up that every measured process pays

        @functools.wraps(function)
        def switched(*args, **kwargs):
            previous = _tracetop.instrumenter_enabled()
            _set(enabled)
            try:
                return function(*args, **kwargs)
            finally:
                _set(previous)

        return switched

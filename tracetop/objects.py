"""Counting the objects the program creates and destroys, by type and by the region that created them, while
measuring (as `tracetop run --objects` does from the start).

`tracetop.objects.enable()` starts counting, `disable()` stops it and records what was counted. Outside a
measurement both do nothing. Where this Python cannot count objects (free-threaded builds; before 3.13, a libpython
linked into the executable) enable() says so in one line on stderr, once, and returns False: the program goes on
without counting objects."""

from tracetop import _tracetop, messages

_refused = False


def enable():
    """Starts counting objects; returns whether they are counted (False outside a measurement, and where this
    Python cannot)."""
    global _refused
    try:
        _tracetop.objects_enable()
    except _tracetop.TraceError as error:
        if not _refused:
            messages.note(f"{error}; the program goes on without counting objects")
        _refused = True
    return _tracetop.objects_enabled()


def disable():
    _tracetop.objects_disable()


def enabled():
    return _tracetop.objects_enabled()

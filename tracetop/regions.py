"""User regions: spans of the timeline that the program names itself. Outside a measurement they cost
next to nothing: the C calls return at once.

A region begins and ends where the program says, across calls and frames: a call that returns while a
region begun inside it is open, or that is open where a region begun outside it ends, is split there, so
that the trace stays well nested (src/record/stream.h). The C side places a region beneath its own call on
the profile stack, so every way in here reaches C directly: region_begin/region_end are the C functions,
and a region's __enter__ and __exit__ are C methods. A Python function in between would split each region
where it returns, into parts that cost records."""

from tracetop import _tracetop

region_begin = _tracetop.region_begin  # region_begin("x") opens user:x
region_end = _tracetop.region_end


class _Region(_tracetop.Region):
    """A region as context manager (C) and as decorator."""

    __slots__ = ()

    def __call__(self, function):
        return _recorded(function, self.name)


class _FunctionRegion:
    """The region of a decorated function, named after the function."""

    __slots__ = ()

    def __call__(self, function):
        return _recorded(function, f"{function.__module__}:{function.__qualname__}", own_call=True)


# A region object holds nothing but its name, so one per name is made and shared (up to _SHARED_MAX names).
# A dict rather than functools.lru_cache: functools is start-up that every measured process would pay.
_shared = {}
_SHARED_MAX = 1024


def region(name=None):
    """A user region. `with region("load"):` records the block as `user:load`. As a decorator,
    `@region()` records each call of the function as `module:qualname` (where the instrumenter records no
    calls: where it does, it records the call so already), `@region("x")` as `user:x`, both with the
    function's file and first line."""
    made = _shared.get(name)
    if made is None:
        made = _FunctionRegion() if name is None else _Region("user:" + name)
        if len(_shared) >= _SHARED_MAX:
            _shared.clear()
        _shared[name] = made
    return made


def _recorded(function, name, own_call=False):
    """`function`, recording each call as the region `name`. A Python function's `own_call` region is its call
    as the hook records it: it is recorded only where the hook records no calls (the instrumenter off or none),
    so that each call is entered once, as the Score-P bindings do."""
    code = getattr(function, "__code__", None)
    file, line = (code.co_filename, code.co_firstlineno) if code else ("", 0)
    span = _tracetop.Region(name, file, line)
    import functools  # here, when a function is decorated: not start-up that every measured process pays

    if own_call and code is not None:
        calls_recorded = _tracetop.calls_recorded

        @functools.wraps(function)
        def in_own_region(*args, **kwargs):
            if calls_recorded():
                return function(*args, **kwargs)
            with span:
                return function(*args, **kwargs)

        return in_own_region

    @functools.wraps(function)
    def in_region(*args, **kwargs):
        with span:
            return function(*args, **kwargs)

    return in_region

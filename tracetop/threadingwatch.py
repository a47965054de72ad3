"""threading, imported when the program imports it, not before: importing it at every start would be most of
the start-up of a measured process (it imports functools, collections ...). What a measurement needs of it, once
it is there (src/ext/hooks.c: the hook handed to the threads it starts; tracetop/session.py: at-fork hooks that
run after threading's), is done then, by a callback.

A finder at the front of sys.meta_path sees the import: it lets the other finders find threading, and has the
loader they found run it, then calls the callback before the import statement returns, so before the program
can start a thread with it. It steps out of sys.meta_path as it sees the import, and threading's spec and
__loader__ are the found loader's again before threading runs: the program finds no trace of it after."""

import sys

_NAME = "threading"
_callback = None


def when_imported(callback):
    """Calls callback() once threading is imported: at once if it is, else when the program imports it. A later
    call replaces a callback still waiting."""
    global _callback
    if _NAME in sys.modules:
        _callback = None
        _leave()
        callback()
        return
    _callback = callback
    if _Finder not in sys.meta_path:
        sys.meta_path.insert(0, _Finder)


def _leave():
    try:
        sys.meta_path.remove(_Finder)
    except ValueError:  # the program set sys.meta_path anew
        pass


class _Finder:
    """A meta path finder (importlib's protocol) for threading alone."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != _NAME:
            return None
        _leave()
        for finder in sys.meta_path:
            find_spec = getattr(finder, "find_spec", None)
            spec = find_spec(name, path, target) if find_spec else None
            if spec is not None:
                break
        else:
            return None
        if hasattr(spec.loader, "exec_module"):
            spec.loader = _Loader(spec.loader)
        return spec


class _Loader:
    """The found loader, and the callback once threading has run."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        module.__loader__ = module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        global _callback
        callback, _callback = _callback, None
        if callback is not None:
            callback()

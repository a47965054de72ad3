"""Prints what a program sees of how it was started, as JSON: must be the same under tracetop."""
import json
import pickle
import sys


class Point:
    def __init__(self, x):
        self.x = x


def loader_name(loader):
    return loader.__name__ if isinstance(loader, type) else type(loader).__name__


main = sys.modules["__main__"]
print(json.dumps({
    "argv": sys.argv,
    "path": sys.path,
    "globals": [name for name in globals() if name not in ("json", "pickle", "sys", "Point", "loader_name")],
    "__name__": __name__,
    "__file__": globals().get("__file__"),
    "__cached__": globals().get("__cached__"),
    "__package__": __package__,
    "__spec__": __spec__ and __spec__.name,
    "__loader__": loader_name(__loader__),
    "__builtins__": type(__builtins__).__name__,
    "main is this module": vars(main) is globals(),
    "pickled": pickle.loads(pickle.dumps(Point(3))).x,
}, indent=1))

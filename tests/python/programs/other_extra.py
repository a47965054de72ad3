"""fib, with another tool's data in its code object's extra slot 0 when run with "other": the slot that tool
asked for before tracetop was imported (tests/python/test_code_extra.py), where tracetop would otherwise have
its own."""
import ctypes
import sys


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


if __name__ == "__main__":
    if sys.argv[1:] == ["other"]:
        api = ctypes.pythonapi
        set_extra = getattr(api, "PyUnstable_Code_SetExtra", None) or api._PyCode_SetExtra
        set_extra.restype, set_extra.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_ssize_t, ctypes.c_void_p]
        assert set_extra(fib.__code__, 0, 4661) == 0
    print("fib", fib(18))

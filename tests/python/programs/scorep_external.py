"""A program that knows nothing of Score-P; scorep_instrumenter.py (--instrumenter-file) makes regions of its
helper module's functions."""
import scorep_helper


def foo():
    return scorep_helper.baz()


print("baz", foo(), foo())

"""A module of the program that scorep_external.py runs, instrumented from outside by scorep_instrumenter.py."""


def bar():
    return sum(range(10))


def baz():
    return bar() + 1

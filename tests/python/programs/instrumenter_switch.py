"""Switches automatic instrumentation off and on in every way: f() is recorded 4 times, quiet() never,
the region `inside` once."""
import tracetop


def f():
    pass


@tracetop.instrumenter.disable()
def quiet():
    f()


f()  # recorded: 1
with tracetop.instrumenter.disable():
    f()
    with tracetop.region("inside"):
        f()
    with tracetop.instrumenter.enable():
        f()  # recorded: 2
    f()
f()  # recorded: 3, the state before the with block is back
quiet()
quiet()
tracetop.instrumenter.disable()
f()
tracetop.instrumenter.enable()
f()  # recorded: 4

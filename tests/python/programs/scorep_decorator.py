"""The Score-P bindings' decorator case: a function decorated without a region name, called with the
instrumenter as the run has it, switched off, and switched on inside that."""
import scorep.instrumenter
import scorep.user


@scorep.user.region()
def foo():
    return sum(range(10))


foo()
with scorep.instrumenter.disable():
    foo()
    with scorep.instrumenter.enable():
        foo()

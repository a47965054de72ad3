"""scorep.instrumenter.enable("name") and disable("name") as context managers and decorators: each marks its
block as the region user_instrumenter:<name> where it switches the instrumenter, and only there."""
import scorep.instrumenter


def work():
    return sum(range(100))


@scorep.instrumenter.enable("decorated_on")
def switched_on():
    return work()


@scorep.instrumenter.disable("decorated_off")
def switched_off():
    return work()


with scorep.instrumenter.enable("block_on"):
    work()
work()
switched_on()
with scorep.instrumenter.disable("block_off"):
    work()
switched_off()
work()

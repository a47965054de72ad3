"""The start()/stop() pattern of the Score-P bindings: a user region begun in one function and ended in another,
with the work between them called from the caller."""
import scorep.user


def start():
    scorep.user.region_begin("phase")


def stop():
    scorep.user.region_end("phase")


def work():
    return sum(range(100000))


start()
work()
stop()

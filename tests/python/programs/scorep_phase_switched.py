"""start()/stop() with the instrumenter switched off around start(): the region begun there, in a call that
returns unseen, goes on after the switch back on."""
import scorep.instrumenter
import scorep.user


def start():
    scorep.user.region_begin("phase")


def stop():
    scorep.user.region_end("phase")


def work():
    return sum(range(100000))


with scorep.instrumenter.disable():
    start()
work()
stop()

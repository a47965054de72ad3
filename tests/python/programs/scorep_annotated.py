"""A program annotated for the Score-P Python bindings, as their README writes it."""
import scorep


def work(n):
    return sum(range(n))


@scorep.user.region()
def decorated():
    return work(10)


@scorep.user.region("named")
def named():
    return work(10)


for _ in range(3):
    scorep.user.region_begin("manual")
    scorep.user.parameter_int("n", 3)
    scorep.user.parameter_uint("u", 4)
    scorep.user.parameter_string("mode", "fast")
    scorep.user.region_end("manual")

with scorep.user.region("block"):
    decorated()
named()

with scorep.instrumenter.disable():
    work(5)  # not recorded
    with scorep.instrumenter.enable("inner"):
        work(6)

scorep.user.disable_recording()
work(7)  # not recorded
scorep.user.enable_recording()
print("done")

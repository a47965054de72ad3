"""Uses every kind of user region, parameters, counters and marks."""
import tracetop


@tracetop.region()
def decorated():
    return "value"


@tracetop.region("named")
def named():
    pass


class Box:
    @tracetop.region()
    def method(self):
        pass


for _ in range(3):
    with tracetop.region("load"):
        pass
for _ in range(4):
    assert decorated() == "value"
for _ in range(2):
    named()
for _ in range(5):
    tracetop.region_begin("manual")
    tracetop.region_end("manual")
Box().method()
tracetop.parameter_int("n", -5)
tracetop.parameter_uint("u", 7)
tracetop.parameter_string("mode", "fast")
tracetop.counter("queue_len", 17)
tracetop.counter("ratio", 0.5)
tracetop.mark("checkpoint")

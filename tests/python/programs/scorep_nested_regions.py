"""User regions nested and crossing across functions: outer and inner begun and ended by helpers, and a region
begun inside a `with` region that it outlives. The error_region case of the Score-P bindings last: ends of
regions that are not open."""
import scorep.user


def begin(name):
    scorep.user.region_begin(name)


def end(name):
    scorep.user.region_end(name)


def work(n):
    return sum(range(n))


begin("outer")
begin("inner")
work(1000)
end("inner")
work(2000)
end("outer")
with scorep.user.region("block"):
    begin("crossing")
work(3000)
end("crossing")
end("test_region")
end("test_region_2")
print("done")

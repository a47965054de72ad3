"""Calls f() 3 times, 5 times with recording off (and a region), then 2 times: 5 recorded."""
import tracetop


def f():
    pass


for _ in range(3):
    f()
with tracetop.region("outer"):
    tracetop.disable_recording()
    for _ in range(5):
        f()
    with tracetop.region("hidden"):
        f()
    tracetop.enable_recording()
    for _ in range(2):
        f()

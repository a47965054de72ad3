"""What a program sees of its own code's instructions, and what another tool's line events see of it.

Prints the superinstructions the interpreter runs `work` with (CPython 3.12 makes them of LOAD_FAST,
STORE_FAST and LOAD_CONST pairs; 3.11's are alike; 3.13's compiler writes its own, named otherwise), then
the lines sys.settrace sees of `work` called under it after its first calls, and of `fresh`, whose first call
is under it: as the program runs without tracetop.
"""
import dis
import sys


def work(count, step):
    total = 0
    for i in range(count):
        x = i
        y = x
        total = x + y + step
    return total


def fresh(count, step):
    total = 0
    for i in range(count):
        x = i
        total = x + step
    return total


def supers(code):
    return sorted({i.opname for i in dis.get_instructions(code, adaptive=True) if "__" in i.opname})


def traced(function, *arguments):
    code, lines = function.__code__, []

    def tracer(frame, event, arg):
        if frame.f_code is code and event == "line":
            lines.append(frame.f_lineno - code.co_firstlineno)
        return tracer

    sys.settrace(tracer)
    try:
        result = function(*arguments)
    finally:
        sys.settrace(None)
    return result, lines


print("result", sum(work(50, k) for k in range(20)))
print("supers", supers(work.__code__))
print("traced work", *traced(work, 3, 1))
print("traced fresh", *traced(fresh, 3, 1))
print("again", work(50, 1), fresh(50, 1))

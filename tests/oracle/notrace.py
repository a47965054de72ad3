"""`python tests/oracle/notrace.py -m MODULE ARGS...` is `python -m MODULE ARGS...` with a trace function that does
nothing installed in every thread (sys.settrace and threading.settrace), as tracetop's trace instrumenter
installs its hook: the oracle's reference for that instrumenter (run.py). A test that inspects tracing
itself (test_monitoring's events while a trace function is set) fails the same here as under tracetop."""

import runpy
import sys
import threading


def trace(frame, event, arg):
    return None


if sys.argv[1:2] != ["-m"] or len(sys.argv) < 3:
    sys.exit("usage: python notrace.py -m MODULE [ARGS...]")
sys.argv = sys.argv[2:]
threading.settrace(trace)
sys.settrace(trace)
runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)

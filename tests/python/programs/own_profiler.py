"""A program with a profiler of its own: it prints the events its sys.setprofile, threading.setprofile and
sys.settrace callbacks receive, which must be the same with and without tracetop."""
import sys
import threading

events = []


def record(frame, event, arg):
    name = getattr(arg, "__name__", None) if event.startswith("c_") else frame.f_code.co_name
    events.append((event, name))


def work(n):
    return sum(abs(i) for i in range(n))


def profiled():
    sys.setprofile(record)
    work(3)
    len("abc")
    sys.setprofile(None)


def traced():
    sys.settrace(lambda frame, event, arg: record(frame, event, arg) or None)
    work(2)
    sys.settrace(None)


def in_thread():
    threading.setprofile(record)
    t = threading.Thread(target=work, args=(2,))
    t.start()
    t.join()
    threading.setprofile(None)


for case in (profiled, traced, in_thread):
    events.clear()
    case()
    print(case.__name__, events)
if hasattr(threading, "setprofile_all_threads"):
    events.clear()
    threading.setprofile_all_threads(record)
    work(1)
    threading.setprofile_all_threads(None)
    print("all_threads", events)

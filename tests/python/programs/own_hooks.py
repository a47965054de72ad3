"""A program that sets profile and trace functions of its own while it runs, and counts its calls of `work`.
It prints what each of its functions received and how often `work` was called: the same with and without
tracetop, which must record every one of those calls, before, while and after the program's own function
is set, in every thread, and whether or not that function fails."""
import sys
import threading

calls = 0
events = []


def work(n):
    global calls
    calls += 1
    return n if n < 2 else work(n - 1) + work(n - 2)


def name(frame, event, arg):
    return getattr(arg, "__name__", None) if event.startswith("c_") else frame.f_code.co_name


def profiler(frame, event, arg):
    events.append((event, name(frame, event, arg)))


def tracer(frame, event, arg):
    events.append((event, name(frame, event, arg), frame.f_lineno if event == "line" else None))
    return tracer


def failing(frame, event, arg):
    profiler(frame, event, arg)
    if event == "call" and frame.f_code.co_name == "work":
        raise ValueError("the program's profile function fails")


def profiled():
    work(3)
    sys.setprofile(profiler)
    print("getprofile is the program's:", sys.getprofile() is profiler)
    work(4)
    sys.setprofile(None)
    print("getprofile after:", sys.getprofile())
    work(5)


def traced():
    sys.settrace(tracer)
    print("gettrace is the program's:", sys.gettrace() is tracer)
    work(3)
    sys.settrace(None)
    print("gettrace after:", sys.gettrace())
    work(5)


def profile_function_fails():
    sys.setprofile(failing)
    try:
        work(3)
    except ValueError as e:
        print("raised:", e)
    print("getprofile after the failure:", sys.getprofile())
    work(5)


def in_threads():
    def start(name):
        t = threading.Thread(target=work, args=(4,), name=name)
        t.start()
        t.join()

    print("threading.getprofile before:", threading.getprofile())
    threading.setprofile(profiler)
    print("threading.getprofile is the program's:", threading.getprofile() is profiler)
    start("worker0")
    threading.setprofile(None)
    print("threading.getprofile after:", threading.getprofile())
    start("worker1")
    start("worker2")


for case in (profiled, traced, profile_function_fails, in_threads):
    events.clear()
    case()
    print(case.__name__, events)
print("work called", calls, "times")

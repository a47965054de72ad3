"""Something of everything a converter carries: two threads, recursion, builtins, a user region with
parameters of each kind, counters and marks, and a parameter set outside any region."""
import threading

import tracetop


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def work(n):
    tracetop.parameter_int("n", -n)
    tracetop.parameter_uint("size", n)
    tracetop.parameter_string("mode", 'fa"st\u00e9')
    for i in range(3):
        tracetop.counter("queue", i * 1.5)
    tracetop.mark("checkpoint")
    return sum(sorted(range(n))) + fib(n)


def main():
    tracetop.parameter_int("outside", 1)
    worker = threading.Thread(target=work, args=(9,), name="worker")
    worker.start()
    with tracetop.region("phase"):
        total = work(7)
    worker.join()
    print("total", total)


main()

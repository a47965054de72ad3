"""A program with what the viewer shows: named threads, nested calls, parameters, counters and marks."""
import sys
import threading

import tracetop


def leaf(n):
    return n * 2


def middle(n):
    tracetop.parameter_int("n", n)
    tracetop.parameter_string("mode", "even" if n % 2 == 0 else "odd")
    return sum(leaf(i) for i in range(n % 7))


def work(name, count):
    total = 0
    for i in range(count):
        total += middle(i)
        tracetop.counter("progress_" + name, i)
    tracetop.mark("done " + name)
    return total


def main(count):
    threads = [threading.Thread(target=work, args=("w%d" % k, count), name="worker-%d" % k) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with tracetop.region("finish"):
        print("viewer_demo", work("main", count // 2))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)

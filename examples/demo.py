"""A small program to look at under tracetop: a few threads, user regions,
parameters and a counter. Run it with `make demo` or
`tracetop run examples/demo.py`."""

import threading

import tracetop


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


class Grid:
    def __init__(self, size):
        self.cells = [[(x * y) % 7 for x in range(size)] for y in range(size)]

    def smooth(self):
        size = len(self.cells)
        self.cells = [
            [
                sum(self.cells[(y + dy) % size][(x + dx) % size] for dy in (-1, 0, 1) for dx in (-1, 0, 1)) // 9
                for x in range(size)
            ]
            for y in range(size)
        ]
        return sum(map(sum, self.cells))


def worker(k):
    total = 0
    for _step in range(20):
        total += fib(12 + k % 3)
    return total


def main():
    with tracetop.region("setup"):
        grid = Grid(40)
    tracetop.parameter_int("steps", 10)
    for _step in range(10):
        with tracetop.region("smooth"):
            tracetop.counter("checksum", grid.smooth())
    threads = [threading.Thread(target=worker, args=(k,), name=f"worker-{k}") for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    tracetop.mark("done")
    print("demo done")


if __name__ == "__main__":
    main()

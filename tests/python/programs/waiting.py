"""Calls a function many times, then waits until its stdin is closed: an experiment that is still being
measured for as long as the test wants."""
import sys


def step(i):
    return i * i


if __name__ == "__main__":
    total = sum(step(i) for i in range(20000))
    print("waiting", total, flush=True)
    sys.stdin.read()

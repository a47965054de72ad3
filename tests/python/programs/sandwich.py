"""One function called from three places, for its callers and callees: leaf() from a() three times, from b()
once and from other() once; leaf() calls time.sleep and helper()."""
import time


def helper():
    return sum(range(1000))


def leaf(seconds):
    helper()
    time.sleep(seconds)


def a():
    for _ in range(3):
        leaf(0.01)


def other():
    leaf(0.005)


def b():
    leaf(0.03)
    other()


if __name__ == "__main__":
    a()
    b()

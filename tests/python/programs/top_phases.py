"""A program whose hot function changes, for `tracetop top`'s window: alpha() until a file named `next` appears,
then beta() for as many seconds as `next` says, then rest(), asleep, until a file named `stop` appears. It says
`beta` on stdout as beta's phase begins, and `rest` as rest's does."""
import os
import time


def alpha(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


def beta(n):
    total = 0
    for i in range(n):
        total += i ^ 7
    return total


def rest():
    time.sleep(0.02)


while not os.path.exists("next"):
    alpha(20000)
with open("next") as announced:
    seconds = float(announced.read())
print("beta", flush=True)
start = time.monotonic()
while time.monotonic() - start < seconds:
    beta(20000)
print("rest", flush=True)
while not os.path.exists("stop"):
    rest()

"""Two phases of about equal length, one after the other, each with one call inside."""
import time


def inner():
    time.sleep(0.2)


def first():
    inner()


def second():
    inner()


first()
second()

"""fib(N) measured only once a file named `go` appears in the working directory: run it with
--noinstrumenter, so that a live reader can attach before the first call is recorded."""
import os
import sys
import time

import tracetop


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


while not os.path.exists("go"):
    time.sleep(0.01)
with tracetop.instrumenter.enable():
    print("fib", fib(int(sys.argv[1])))

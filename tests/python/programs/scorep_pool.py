"""A Score-P user's script with a multiprocessing pool of START_METHOD (spawn or forkserver): each worker
imports this file, `import scorep` and all, before it runs a task."""
import multiprocessing
import sys

import scorep.user


def square(x):
    with scorep.user.region("square"):
        return x * x


if __name__ == "__main__":
    with multiprocessing.get_context(sys.argv[1]).Pool(2) as pool:
        print(sum(pool.map(square, range(100))))

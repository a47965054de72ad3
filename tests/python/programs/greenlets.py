"""Three gevent greenlets that each compute and sleep in turn, switching through gevent's hub; prints the sum of
their results, the same with or without tracetop. Without gevent it runs the same work with no greenlet: the
program that imports none."""

import sys

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20


def work(n, sleep):
    total = 0
    for _ in range(n):
        total += sum(range(200))
        sleep(0.001)
    return total


if "--without" in sys.argv:
    import time

    print(sum(work(rounds, time.sleep) for _ in range(3)))
else:
    import gevent

    jobs = [gevent.spawn(work, rounds, gevent.sleep) for _ in range(3)]
    gevent.joinall(jobs)
    print(sum(job.value for job in jobs))

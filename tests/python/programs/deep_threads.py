"""Four named worker threads that now and then recurse deep (a lane as tall as 40 calls), and a main thread
that waits for them: what the first screen of the viewer must show all of."""
import sys
import threading


def descend(depth):
    return leaf(depth) if depth == 0 else descend(depth - 1) + 1


def leaf(n):
    return sum(range(50 + n))


def work(rounds):
    total = 0
    for i in range(rounds):
        total += descend(40 if i % 25 == 0 else 3)
    return total


def main(rounds):
    threads = [threading.Thread(target=work, args=(rounds,), name="worker-%d" % k) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("deep_threads", rounds)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 400)

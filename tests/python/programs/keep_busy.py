"""Four worker threads that call down a chain of 12 frames, round after round, for long enough to write many
times what `--keep` keeps; prints how many times each function was called, which the profile of its trace,
whose oldest chunks were dropped, must count the same."""
import sys
import threading

DEPTH = 12


def descend(depth):
    return leaf(depth) if depth == 0 else descend(depth - 1) + 1


def leaf(n):
    return n + 1


def work(rounds):
    total = 0
    for _ in range(rounds):
        total += descend(DEPTH)
    return total


def main(rounds):
    threads = [threading.Thread(target=work, args=(rounds,), name=f"worker-{k}") for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"calls work={len(threads)} descend={len(threads) * rounds * (DEPTH + 1)} leaf={len(threads) * rounds}")


main(int(sys.argv[1]))

"""With the multiprocessing start method given (fork, spawn or forkserver): a Pool of 2 maps square_sum over 8
numbers (both workers started before the work is handed out), a Process runs it once, a ProcessPoolExecutor of
2 maps it over 4 numbers; prints the results."""
import concurrent.futures
import multiprocessing
import sys


def square_sum(n):
    return sum(i * i for i in range(n))


def meet(barrier):
    barrier.wait()


if __name__ == "__main__":
    context = multiprocessing.get_context(sys.argv[1])
    with context.Pool(2, initializer=meet, initargs=(context.Barrier(2),)) as pool:
        pooled = pool.map(square_sum, range(100, 108))
    process = context.Process(target=square_sum, args=(50,))
    process.start()
    process.join()
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=context) as executor:
        executed = list(executor.map(square_sum, range(200, 204)))
    print(sum(pooled), process.exitcode, sum(executed))

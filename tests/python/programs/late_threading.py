"""Starts a thread with _thread, then imports threading (in a function, as a program may: tracetop does not
import it first) and starts three named threads with it; each thread calls work(). Prints what it sees of
the import: whether threading was there at the start, and threading's loader."""
import _thread
import sys


def work(n):
    return sum(i * i for i in range(n))


def with_thread_module():
    done = _thread.allocate_lock()
    done.acquire()

    def body():
        work(2000)
        done.release()

    _thread.start_new_thread(body, ())
    done.acquire()


def main():
    print("threading at the start:", "threading" in sys.modules)
    with_thread_module()
    import threading

    print("loader:", type(threading.__loader__).__name__, threading.__spec__.loader is threading.__loader__)
    threads = [threading.Thread(target=work, args=(5000,), name=f"late-{n}") for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print("done")


main()

"""An MPI program that mostly calls Python functions, for test_calltree_counted.py: three rounds of calls, each
followed by a token passed round the ring of ranks (MPI_Send, MPI_Recv), then an MPI_Allreduce; rank 0 prints the
results. Most chunks of its streams hold calls alone, a few its messages and collective."""
import array
import itertools

from mpi4py import MPI


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def ring(comm, rank, size):
    token = array.array("q", [rank])
    if rank == 0:
        comm.Send([token, MPI.INT64_T], dest=1 % size, tag=7)
        comm.Recv([token, MPI.INT64_T], source=size - 1, tag=7)
    else:
        comm.Recv([token, MPI.INT64_T], source=rank - 1, tag=7)
        token[0] += rank
        comm.Send([token, MPI.INT64_T], dest=(rank + 1) % size, tag=7)
    return token[0]


world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()
tokens = []
for _ in range(3):
    for _ in itertools.repeat(None, 60):
        fib(12)
    tokens.append(ring(world, rank, size))
mine, summed = array.array("d", [float(rank)]), array.array("d", [0.0])
world.Allreduce([mine, MPI.DOUBLE], [summed, MPI.DOUBLE], op=MPI.SUM)
if rank == 0:
    print("tokens", tokens, "sum", summed[0], "ranks", size, flush=True)

"""An MPI program: each rank passes a token around the ring (MPI_Send / MPI_Recv, tag 7), then all ranks sum
their ranks with MPI_Allreduce; rank 0 prints the results. With `pickled`, the same with mpi4py's pickling calls
(send/recv by matched probes, isend/wait); with `split`, the same in the communicators of odd and even ranks; with
`crash`, rank 1 dies of a segmentation fault after the ring, once the writer has had time to write."""
import array
import sys

from mpi4py import MPI


def ring(comm, rank, size):
    token = array.array("q", [0])
    if rank == 0:
        token[0] = 1
        comm.Send([token, MPI.INT64_T], dest=1 % size, tag=7)
        comm.Recv([token, MPI.INT64_T], source=size - 1, tag=7)
    else:
        comm.Recv([token, MPI.INT64_T], source=rank - 1, tag=7)
        token[0] += rank
        comm.Send([token, MPI.INT64_T], dest=(rank + 1) % size, tag=7)
    return token[0]


def ring_pickled(comm, rank, size):
    if rank == 0:
        request = comm.isend({"token": 1}, dest=1 % size, tag=8)
        request.wait()
        return comm.recv(source=size - 1, tag=8)["token"]
    token = comm.recv(source=rank - 1, tag=8)
    comm.send({"token": token["token"] + rank}, dest=(rank + 1) % size, tag=8)
    return None


def total(comm, rank):
    mine, summed = array.array("d", [float(rank)]), array.array("d", [0.0])
    comm.Allreduce([mine, MPI.DOUBLE], [summed, MPI.DOUBLE], op=MPI.SUM)
    return summed[0]


world = MPI.COMM_WORLD
comm = world.Split(color=world.Get_rank() % 2, key=world.Get_rank()) if sys.argv[1:] == ["split"] else world
rank, size = comm.Get_rank(), comm.Get_size()
token = (ring_pickled if sys.argv[1:] == ["pickled"] else ring)(comm, rank, size)
if sys.argv[1:] == ["crash"] and rank == 1:
    import ctypes
    import resource
    import time

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    time.sleep(0.5)
    ctypes.string_at(0)
summed = total(comm, rank)
if world.Get_rank() == 0:
    print("token", token, "sum", summed, "ranks", world.Get_size(), flush=True)
if comm is not world:
    comm.Free()

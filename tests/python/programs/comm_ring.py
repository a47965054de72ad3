"""An MPI program for the communication view: each rank passes a token to rank + 1 (mod size) for LAPS laps
(MPI_Send / MPI_Recv, tag 7, a size of its own per message); then two nonblocking messages to the same neighbour
with the same tag, received in the other order than posted (so matching by completion would pair them wrongly); a
ring in the communicator of the odd and of the even ranks (tag 7 again); collectives on both. Rank 0 prints one
line."""
import sys
import time

from mpi4py import MPI

LAPS = int(sys.argv[1]) if sys.argv[1:] else 3


def exchange(comm, tag, size_of):
    """One message to the right neighbour and one from the left, of size_of(sender) bytes."""
    rank, size = comm.Get_rank(), comm.Get_size()
    right, left = (rank + 1) % size, (rank - 1) % size
    out, into = bytearray(size_of(rank)), bytearray(size_of(left))
    if rank % 2 == 0:
        comm.Send([out, MPI.BYTE], dest=right, tag=tag)
        comm.Recv([into, MPI.BYTE], source=left, tag=tag)
    else:
        comm.Recv([into, MPI.BYTE], source=left, tag=tag)
        comm.Send([out, MPI.BYTE], dest=right, tag=tag)


def reversed_waits(comm):
    """Two receives posted first and second, waited for second first: the first sent is the first posted's."""
    rank, size = comm.Get_rank(), comm.Get_size()
    right, left = (rank + 1) % size, (rank - 1) % size
    first, second = bytearray(4096), bytearray(4096)
    posted = [comm.Irecv([first, MPI.BYTE], source=left, tag=9), comm.Irecv([second, MPI.BYTE], source=left, tag=9)]
    sent = [comm.Isend([bytearray(100 + rank), MPI.BYTE], dest=right, tag=9),
            comm.Isend([bytearray(2000 + rank), MPI.BYTE], dest=right, tag=9)]
    time.sleep(0.01)
    posted[1].Wait()
    posted[0].Wait()
    MPI.Request.Waitall(sent)


world = MPI.COMM_WORLD
rank = world.Get_rank()
for lap in range(LAPS):
    exchange(world, 7, lambda sender: 8 * (1 + sender + 10 * lap))
    time.sleep(0.002)
reversed_waits(world)
world.Barrier()
half = world.Split(color=rank % 2, key=rank)
exchange(half, 7, lambda sender: 3000 + sender)
total = half.allreduce(rank)
world.Bcast([bytearray(64), MPI.BYTE], root=0)
summed = world.allreduce(rank)
half.Free()
if rank == 0:
    print("ranks", world.Get_size(), "sum", summed, "half", total, flush=True)

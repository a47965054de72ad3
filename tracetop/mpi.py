"""`tracetop run --mpi` (Score-P's `--mpp=mpi`): the ranks of an MPI job measured into one experiment, their MPI
calls and messages recorded.

Each rank runs its own `tracetop run --mpi`, started by mpirun or srun; they find the same experiment directory
without talking to each other: `--output DIR`, or by default tracetop-mpi-<job>, after the job id the launcher puts
in the environment. Rank 0 makes the experiment (config.txt, MANIFEST.md, and at the end profile.txt, once the
other ranks have ended or RANKS_TIMEOUT has passed); every rank writes its own trace/<pid>/ there. The launcher's
environment also tells each process its rank before MPI starts; MPI tells it again when it starts (MPI_RANK in the
trace).

MPI calls are recorded by libtracetop_mpi.so, a library of MPI functions that record and call their PMPI_ versions
(src/mpi/pmpi.c). It is loaded when the measurement starts, before the program loads MPI (mpi4py), so that the
program's calls reach it first.
"""

import os
import time

from tracetop import _reader
from tracetop.fields import Fields
from tracetop.messages import CommandError

# Where launchers put the rank, the number of ranks and the job's id, in the order they are looked for:
# Open MPI, PMIx, MPICH's Hydra (PMI), Slurm.
RANK_VARIABLES = ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID")
SIZE_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS")
JOB_VARIABLES = ("PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid", "PMI_KVSNAME")

# How long rank 0 waits at its end for the other ranks to end, before it writes profile.txt without them.
RANKS_TIMEOUT = 30.0

LIBRARY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libtracetop_mpi.so")


class Job(Fields):
    """This process's place in its MPI job, as the launcher's environment says: rank, size, and id (None
    when the launcher says none)."""

    __slots__ = ("rank", "size", "id")


def job(environ):
    rank, size = _number(environ, RANK_VARIABLES), _number(environ, SIZE_VARIABLES)
    if rank is None or size is None:  # not started by a launcher: a job of one
        return Job(0, 1, None)
    identity = next((environ[name] for name in JOB_VARIABLES if environ.get(name)), None)
    if identity is None and environ.get("SLURM_JOB_ID"):
        identity = f"{environ['SLURM_JOB_ID']}.{environ.get('SLURM_STEP_ID', '0')}"
    return Job(rank, size, identity)


def default_directory(this_job):
    """The experiment directory all ranks of the job agree on, when none is given."""
    if this_job.size == 1:
        return None  # the usual name
    if this_job.id is None:
        raise CommandError(
            "cannot tell which processes make up this MPI job (no job id in the environment): "
            "name the experiment with --output DIR"
        )
    import re  # only for MPI jobs: it (and enum) would be most of every other run's start-up

    return "tracetop-mpi-" + re.sub(r"[^A-Za-z0-9_.-]+", "_", this_job.id)


# In the experiment directory of an MPI job: the job's id, written by rank 0 once it has made the directory (and
# renamed an earlier experiment out of the way), before which the other ranks write nothing there.
JOB_FILE = ".mpi-job"


def made_experiment(directory, this_job):
    """Rank 0: tells the other ranks of the job that the experiment directory is theirs to write into."""
    if this_job.id is not None:
        with open(_reader.open_output(os.path.join(directory, JOB_FILE)), "w", encoding="utf-8") as file:
            file.write(this_job.id)


def wait_for_experiment(directory, this_job, timeout=RANKS_TIMEOUT):
    """Another rank: waits until rank 0 has made the experiment directory of this job; returns it."""
    if this_job.id is None:  # nothing to tell this job's directory from an earlier one: joined at once
        return directory
    deadline = time.monotonic() + timeout
    while True:
        try:
            with open(os.path.join(directory, JOB_FILE), encoding="utf-8") as file:
                if file.read() == this_job.id:
                    return directory
        except FileNotFoundError:
            pass
        if time.monotonic() >= deadline:
            raise CommandError(f"rank 0 did not make the experiment directory {directory!r} within {timeout:.0f} s")
        time.sleep(0.02)


def check():
    """Fails unless this tracetop can record MPI calls (_tracetop.mpi_attach(LIBRARY) once measuring)."""
    if not os.path.exists(LIBRARY):
        raise CommandError(
            "this tracetop was built without MPI support (no MPI library was found when it was "
            "built); install one (e.g. Debian's libopenmpi-dev) and reinstall tracetop"
        )


def wait_for_ranks(directory, size, timeout=RANKS_TIMEOUT):
    """Waits until every rank of the job has ended its measurement in `directory`, at most `timeout` seconds;
    returns the ranks that have not."""
    deadline = time.monotonic() + timeout
    while True:
        trace = _reader.Trace(directory)
        ended = {
            int(process["attributes"]["mpi_rank"])
            for process in trace.processes
            if process["ended"] and "mpi_rank" in process["attributes"]
        }
        missing = sorted(set(range(size)) - ended)
        if not missing or time.monotonic() >= deadline:
            return missing
        time.sleep(0.05)


def _number(environ, names):
    for name in names:
        value = environ.get(name, "")
        if value.isdigit():
            return int(value)
    return None

"""`mpirun -n 3 tracetop run --mpi`: the ranks in one experiment, their MPI calls as MPI regions, their messages
and collectives as MPI events that pair up across ranks."""

import collections
import platform
import re
import shutil
import subprocess
import sys

import pytest

from helpers import PROGRAMS, environment, program_stderr, reader, run

pytest.importorskip("mpi4py")
pycubexr = pytest.importorskip("pycubexr")
if shutil.which("mpirun") is None:
    pytest.skip("no mpirun", allow_module_level=True)

RANKS = 3


def mpirun(*command, cwd):
    # Open MPI ends the ranks left when one fails with SIGCONT, SIGTERM and SIGKILL, a second apart; on two busy
    # cores rank 0 may need longer than that to complete its trace and write profile.txt.
    env = environment(
        OMPI_ALLOW_RUN_AS_ROOT="1",
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
        OMPI_MCA_rmaps_base_oversubscribe="1",
        OMPI_MCA_odls_base_sigkill_timeout="5",
    )
    return run("mpirun", "-n", RANKS, sys.executable, *command, cwd=cwd, env=env, timeout=180)


def measured(tmp_path, *arguments, options=("--output", "exp")):
    plain = mpirun(PROGRAMS / "ring.py", *arguments, cwd=tmp_path)
    traced = mpirun("-m", "tracetop", "run", "--mpi", *options, PROGRAMS / "ring.py", *arguments, cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.startswith("token ") and plain.stdout.endswith(f" ranks {RANKS}\n")
    assert (traced.returncode, traced.stdout, program_stderr(traced.stderr)) == (0, plain.stdout, plain.stderr)
    return traced


def ranks(experiment):
    """{rank: (process, [events of its one stream])}, every stream complete."""
    trace = reader.Trace(str(experiment))
    assert trace.problems == []
    by_rank = {}
    for index, process in enumerate(trace.processes):
        (thread,) = process["threads"]
        events, state, problem = trace.read_stream(index, thread["stream"])
        assert (state, problem) == ("complete", None)
        by_rank[process["mpi_rank"]] = process, events
    assert sorted(by_rank) == list(range(RANKS))
    return by_rank


def world_rank(process, comm, rank):
    communicator = process["comms"][comm]
    return rank if communicator["kind"] == "world" else communicator["members"][rank]


def messages(by_rank, send_kinds, receive_kinds):
    """The messages sent and received: (sender, receiver, tag, bytes) -> [time, ...], in world ranks."""
    sent, received = collections.defaultdict(list), collections.defaultdict(list)
    for rank, (process, events) in by_rank.items():
        for event in events:
            if event[0] in send_kinds:
                sent[rank, world_rank(process, event[4], event[2]), event[3], event[5]].append(event[1])
            elif event[0] in receive_kinds:
                received[world_rank(process, event[4], event[2]), rank, event[3], event[5]].append(event[1])
    return sent, received


def in_region(events, kind, region):
    """Whether every event of `kind` lies in an open region named `region`."""
    open_regions = []
    for event in events:
        if event[0] == "enter":
            open_regions.append(event[2])
        elif event[0] == "leave":
            open_regions.pop()
        elif event[0] == kind and open_regions[-1:] != [region]:
            return False
    return True


def test_ring_and_allreduce(tmp_path):
    measured(tmp_path)
    by_rank = ranks(tmp_path / "exp")
    for rank, (process, events) in by_rank.items():
        assert process["mpi_size"] == RANKS and process["attributes"]["mpi_rank"] == str(rank)
        assert [comm["kind"] for comm in process["comms"][:2]] == ["world", "self"]
        assert process["comms"][1]["members"] == [rank]
        kinds = {region["name"]: region["kind"] for region in process["regions"]}
        assert {kinds["MPI_Send"], kinds["MPI_Recv"], kinds["MPI_Allreduce"]} == {"mpi"}
        assert in_region(events, "mpi_send", "MPI_Send") and in_region(events, "mpi_recv", "MPI_Recv")
        collective = [event for event in events if event[0].startswith("mpi_collective")]
        assert [event[0] for event in collective] == ["mpi_collective_begin", "mpi_collective_end"]
        assert collective[1][2:] == ("allreduce", 0, None, 8, 8)
        assert in_region(events, "mpi_collective_end", "MPI_Allreduce")

    # Every message sent is received once, by the rank it was sent to, after it was sent: the ring.
    sent, received = messages(by_rank, ("mpi_send",), ("mpi_recv",))
    assert sorted(sent) == sorted(received) == sorted((rank, (rank + 1) % RANKS, 7, 8) for rank in range(RANKS))
    for message, (send_time,) in sent.items():
        (receive_time,) = received[message]
        assert send_time <= receive_time

    # Rank 0 wrote profile.txt once every rank had ended; it has the communication matrix and the collectives.
    profile = (tmp_path / "exp" / "profile.txt").read_text()
    assert profile.startswith(f"tracetop summary \N{EM DASH} {RANKS} processes")
    assert profile.count("(rank ") == RANKS and "did not end normally" not in profile
    matrix = profile.split(f"MPI messages sent, by rank: {RANKS} messages, {8 * RANKS} bytes\n")[1].splitlines()[1:]
    assert [line.split() for line in matrix[:RANKS]] == [
        [str(rank), str((rank + 1) % RANKS), "1", "8"] for rank in range(RANKS)
    ]
    assert f"allreduce {RANKS} {8 * RANKS} {8 * RANKS}" in " ".join(profile.split())
    whole = reader.profile(str(tmp_path / "exp"))
    assert [(m["sender"], m["receiver"], m["count"], m["bytes"]) for m in whole["messages"]] == [
        (rank, (rank + 1) % RANKS, 1, 8) for rank in range(RANKS)
    ]
    assert whole["collectives"] == {"allreduce": {"calls": RANKS, "sent": 8 * RANKS, "received": 8 * RANKS}}

    # One rank's profile: its own calls and messages.
    one = reader.profile(str(tmp_path / "exp"), rank=1)
    assert [process["pid"] for process in one["processes"]] == [by_rank[1][0]["pid"]]
    assert [(m["sender"], m["receiver"]) for m in one["messages"]] == [(1, 2)]
    visits = {region["name"]: region["visits"] for region in one["regions"]}
    assert visits["MPI_Send"] == visits["MPI_Recv"] == visits["MPI_Allreduce"] == 1
    summary = run(sys.executable, "-m", "tracetop", "summary", "--rank", "1", "exp", cwd=tmp_path)
    assert summary.returncode == 0 and summary.stdout.startswith(f"tracetop summary \N{EM DASH} 1 of {RANKS} processes")
    assert summary.stdout.count("(rank ") == 1 and f"(rank 1 of {RANKS}, ended normally)" in summary.stdout


def test_nonblocking_and_matched_receives(tmp_path):
    measured(tmp_path, "pickled")
    by_rank = ranks(tmp_path / "exp")
    sent, received = messages(by_rank, ("mpi_send", "mpi_isend"), ("mpi_recv", "mpi_irecv"))
    assert sorted(sent) == sorted(received)
    assert sorted((sender, receiver, tag) for sender, receiver, tag, _ in sent) == sorted(
        (rank, (rank + 1) % RANKS, 8) for rank in range(RANKS)
    )
    # Rank 0 sent with isend and completed it in MPI_Wait; the others received by matched probe.
    _, events = by_rank[0]
    (isend,) = [event for event in events if event[0] == "mpi_isend"]
    (complete,) = [event for event in events if event[0] == "mpi_isend_complete"]
    assert complete[2] == isend[6] and in_region(events, "mpi_isend_complete", "MPI_Wait")
    for rank in range(1, RANKS):
        assert in_region(by_rank[rank][1], "mpi_recv", "MPI_Mrecv")


def test_the_ranks_agree_on_the_default_directory(tmp_path):
    measured(tmp_path, options=())
    (experiment,) = [path for path in tmp_path.iterdir() if path.name.startswith("tracetop-")]
    assert experiment.name.startswith("tracetop-mpi-")
    ranks(experiment)
    assert (experiment / "MANIFEST.md").exists() and (experiment / "profile.txt").exists()


def test_derived_communicators(tmp_path):
    measured(tmp_path, "split")  # ranks 0 and 2 in one communicator, rank 1 alone in another
    by_rank = ranks(tmp_path / "exp")
    for rank, (process, events) in by_rank.items():
        derived = process["comms"][2]
        assert (derived["kind"], derived["parent"], derived["seq"]) == ("derived", 0, 0)
        assert derived["members"] == ([0, 2] if rank % 2 == 0 else [1])
        (end,) = [event for event in events if event[0] == "mpi_collective_end"]
        assert end[2:4] == ("allreduce", 2)
    sent, received = messages(by_rank, ("mpi_send",), ("mpi_recv",))
    assert sorted(sent) == sorted(received) == [(0, 2, 7, 8), (1, 1, 7, 8), (2, 0, 7, 8)]


def test_a_rank_that_crashes(tmp_path):
    traced = mpirun("-m", "tracetop", "run", "--mpi", "--output", "exp", PROGRAMS / "ring.py", "crash", cwd=tmp_path)
    assert traced.returncode != 0 and "exited on signal 11" in traced.stderr
    # mpirun ended the other ranks with SIGTERM: their traces are complete; the crashed rank's is cut after the
    # ring, which it had finished.
    trace = reader.Trace(str(tmp_path / "exp"))
    assert trace.problems == [] and sorted(process["mpi_rank"] for process in trace.processes) == list(range(RANKS))
    for index, process in enumerate(trace.processes):
        events, state, problem = trace.read_stream(index, 0)
        assert state == ("cut" if process["mpi_rank"] == 1 else "complete"), problem
        entered = [event[2] for event in events if event[0] == "enter"]
        assert {"MPI_Send", "MPI_Recv"} <= set(entered)
    assert (tmp_path / "exp" / "profile.txt").exists() and "killed by SIGTERM" in (
        tmp_path / "exp" / "MANIFEST.md"
    ).read_text()


def otf2_print(*arguments):
    completed = subprocess.run(["otf2-print", *map(str, arguments)], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


@pytest.mark.skipif(shutil.which("otf2-print") is None, reason="otf2-print (otf2-tools) is missing")
def test_otf2_has_the_ranks_their_messages_and_collectives(tmp_path):
    measured(tmp_path, options=("--output", "exp", "--format", "otf2"))
    anchor = tmp_path / "exp" / "traces.otf2"
    definitions = otf2_print("-G", anchor)
    groups = re.findall(r'^LOCATION_GROUP\s+(\d+)\s+Name: "([^"]*)"', definitions, re.M)
    assert sorted(name for _, name in groups) == [f"MPI Rank {rank}" for rank in range(RANKS)]
    # The location of each rank, as the group of the ranks' locations lists them.
    ranks = re.search(
        r'^GROUP\s+\d+\s+Name: "MPI ranks" <\d+>, Type: COMM_LOCATIONS, Paradigm: MPI, .*$', definitions, re.M
    )
    assert ranks and f"{RANKS} Members" in ranks.group(0)
    location_group = dict(re.findall(r"^LOCATION\s+(\d+)\s+.*Group: \"[^\"]*\" <(\d+)>", definitions, re.M))
    rank_of_group = {group: int(name.split()[-1]) for group, name in groups}
    rank_of = {int(location): rank_of_group[group] for location, group in location_group.items()}
    assert re.search(r'^COMM\s+\d+\s+Name: "MPI_COMM_WORLD"', definitions, re.M)
    assert re.search(r'^REGION\s+\d+\s+Name: "MPI_Send" .*Paradigm: MPI', definitions, re.M)

    sends, receives, collectives = [], [], collections.Counter()
    for line in otf2_print(anchor).splitlines():
        fields = line.split(None, 3)
        if fields and fields[0] in ("MPI_SEND", "MPI_RECV"):
            peer, tag, length = re.search(r"(?:Receiver|Sender): (\d+) .*Tag: (\d+), Length: (\d+)", fields[3]).groups()
            message = (rank_of[int(fields[1])], int(peer), int(tag), int(length))
            (sends if fields[0] == "MPI_SEND" else receives).append(message)
        elif fields and fields[0].startswith("MPI_COLLECTIVE"):
            operation = re.search(r"Operation: (\w+)", fields[3]) if len(fields) > 3 else None
            collectives[fields[0], operation and operation.group(1)] += 1
    # Each send (sender, receiver, tag, bytes) has its receive (receiver, sender, tag, bytes): the ring.
    assert sorted(sends) == [(rank, (rank + 1) % RANKS, 7, 8) for rank in range(RANKS)]
    assert sorted((sender, receiver, tag, length) for receiver, sender, tag, length in receives) == sorted(sends)
    assert collectives == {("MPI_COLLECTIVE_BEGIN", None): RANKS, ("MPI_COLLECTIVE_END", "ALLREDUCE"): RANKS}


def scorep_mpirun(tmp_path, ranks):
    """`mpirun -n RANKS python -m tracetop --mpp=mpi ring.py`, asking for OTF2 and CUBE as Score-P users do."""
    env = environment(
        OMPI_ALLOW_RUN_AS_ROOT="1",
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
        OMPI_MCA_odls_base_sigkill_timeout="5",
        SCOREP_EXPERIMENT_DIRECTORY="exp",
        SCOREP_ENABLE_TRACING="true",
        SCOREP_ENABLE_PROFILING="true",
    )
    completed = run(
        "mpirun",
        "--oversubscribe",
        "-n",
        ranks,
        sys.executable,
        "-m",
        "tracetop",
        "--mpp=mpi",
        PROGRAMS / "ring.py",
        cwd=tmp_path,
        env=env,
        timeout=180,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == f"token {sum(range(ranks)) + 1} sum {float(sum(range(ranks)))} ranks {ranks}\n"
    return tmp_path / "exp"


@pytest.mark.skipif(shutil.which("otf2-print") is None, reason="otf2-print (otf2-tools) is missing")
def test_scorep_layout_for_vampir_and_cube(tmp_path):
    ranks, host = 4, platform.node()
    experiment = scorep_mpirun(tmp_path, ranks)
    assert {"traces.otf2", "traces.def", "traces", "profile.cubex"} <= {path.name for path in experiment.iterdir()}

    # OTF2: the location groups in rank order, below the node of their host, below the machine; a region once.
    definitions = otf2_print("-G", experiment / "traces.otf2")
    nodes = re.findall(
        r'^SYSTEM_TREE_NODE\s+(\d+)\s+Name: "([^"]*)" <\d+>, Class: "([^"]*)" <\d+>, Parent: (.*)$', definitions, re.M
    )
    assert [(name, kind) for _, name, kind, _ in nodes] == [("machine", "machine"), (host, "node")]
    assert nodes[1][3] == '"machine::machine" <0>'
    groups = re.findall(
        r'^LOCATION_GROUP\s+(\d+)\s+Name: "([^"]*)" <\d+>, Type: PROCESS, Parent: "node::([^"]*)" <1>',
        definitions,
        re.M,
    )
    assert groups == [(str(rank), f"MPI Rank {rank}", host) for rank in range(ranks)]
    regions = re.findall(r'^REGION\s+\d+\s+Name: "([^"]*)"', definitions, re.M)
    assert len(regions) == len(set(regions)) and {"MPI_Send", "MPI_Recv", "MPI_Allreduce"} <= set(regions)

    # CUBE: the same tree, ranks right, and Score-P's metrics per rank.
    with pycubexr.CubexParser(experiment / "profile.cubex") as parser:
        (machine,) = parser._anchor_result.system_tree_nodes
        (node,) = machine._system_tree_node_children
        assert (machine.name, node.name, node.clazz) == ("machine", host, "node")
        cube_groups = node._location_group_children
        assert [(group.name, int(group.rank)) for group in cube_groups] == [
            (f"MPI Rank {rank}", rank) for rank in range(ranks)
        ]
        location_of = {rank: group.all_locations()[0].id for rank, group in enumerate(cube_groups)}
        values = {
            name: parser.get_metric_values(parser.get_metric_by_name(name))
            for name in ("visits", "time", "min_time", "max_time", "bytes_sent", "bytes_received", "messages")
        }

        def total(metric, rank, region=None):
            cnodes = [
                cnode for cnode in parser.all_cnodes() if region is None or parser.get_region(cnode).name == region
            ]
            return sum(values[metric].location_value(cnode, location_of[rank]) for cnode in cnodes)

        for rank in range(ranks):
            assert total("visits", rank, "MPI_Send") == total("visits", rank, "MPI_Recv") == 1
            # The ring's message of 8 bytes and the allreduce's 8 bytes each way.
            assert (total("bytes_sent", rank), total("bytes_received", rank), total("messages", rank)) == (16, 16, 2)
            assert total("bytes_sent", rank, "MPI_Send") == total("bytes_received", rank, "MPI_Recv") == 8
            (send,) = [cnode for cnode in parser.all_cnodes() if parser.get_region(cnode).name == "MPI_Send"]
            # pycubexr gives MINDOUBLE and MAXDOUBLE values as objects that aggregate by min and max.
            low, high = (
                float(values[name].location_value(send, location_of[rank])._values) for name in ("min_time", "max_time")
            )
            assert 0 < low == high  # one visit
            spent = sum(
                values["time"].location_value(cnode, location_of[rank])
                for cnode in parser.all_cnodes()
                if parser.get_region(cnode).name == "MPI_Send"
            )
            # A ns apart at most (and the doubles' rounding): the profile converts ticks summed per call path
            # (profile.h), max_time each visit's two times.
            assert spent == pytest.approx(high, abs=1.5e-9)

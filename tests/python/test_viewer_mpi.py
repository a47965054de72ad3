"""The MPI communication view on a real `mpirun -n 4` job run under tracetop (tests/python/programs/comm_ring.py):
the matching of sends to receives on its own (`reader.MpiView`), then in Chromium the message lines between the
ranks' lanes, the collectives across them, and the communication matrix against `tracetop summary`'s. Screenshots
go to tests/artifacts/."""

import math
import re
import shutil
import sys

import pytest
from tracetop.viewer.server import ViewerServer

from browser import page_of, screenshot
from helpers import PROGRAMS, environment, program_stderr, reader, run

pytest.importorskip("mpi4py")
if shutil.which("mpirun") is None:
    pytest.skip("no mpirun", allow_module_level=True)

RANKS, LAPS = 4, 3
WHOLE = (0, 1 << 63)
READY = "window.tracetopViewer && tracetopViewer.ready() && tracetopViewer.comm && tracetopViewer.comm.state.data"


def mpirun(*command, cwd):
    env = environment(
        OMPI_ALLOW_RUN_AS_ROOT="1",
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
        OMPI_MCA_rmaps_base_oversubscribe="1",
        OMPI_MCA_odls_base_sigkill_timeout="5",
    )
    return run("mpirun", "-n", RANKS, sys.executable, *command, cwd=cwd, env=env, timeout=180)


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    where = tmp_path_factory.mktemp("comm")
    plain = mpirun(PROGRAMS / "comm_ring.py", LAPS, cwd=where)
    traced = mpirun("-m", "tracetop", "run", "--mpi", "--output", "exp", PROGRAMS / "comm_ring.py", LAPS, cwd=where)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout == f"ranks {RANKS} sum 6 half 2\n"
    assert (traced.returncode, traced.stdout, program_stderr(traced.stderr)) == (0, plain.stdout, plain.stderr)
    return where / "exp"


def world_messages(view, tag):
    """The matched messages on MPI_COMM_WORLD with that tag: rows of MpiView.lines."""
    world = [i for i, c in enumerate(view.communicators) if c["kind"] == "world"]
    total, rows = view.lines(*WHOLE, 100000)
    assert total == len(rows)
    return [row for row in rows if row[8] in world and row[9] == tag]


def test_sends_are_matched_to_their_receives(experiment):
    view = reader.MpiView(str(experiment))
    assert view.world_size == RANKS
    assert sorted(rank for rank, pid in view.ranks) == list(range(RANKS))
    assert view.counts["unmatched_sends"] == view.counts["unmatched_receives"] == 0
    total, rows = view.lines(*WHOLE, 100000)
    assert total == len(rows) == view.counts["messages"]
    pid_of = {rank: pid for rank, pid in view.ranks}
    for send, recv, sender, receiver, send_pid, _, recv_pid, _, _, _, sent, received in rows:
        # Every message received whole by the receive it is matched with, after it was sent, on the ranks' own lanes.
        assert (sent, send_pid, recv_pid) == (received, pid_of[sender], pid_of[receiver])
        assert send < recv
    # The ring: each lap every rank sends rank + 1 a size of its own.
    ring = sorted((s, r, b) for _, _, s, r, _, _, _, _, _, _, b, _ in world_messages(view, 7))
    assert ring == sorted((s, (s + 1) % RANKS, 8 * (1 + s + 10 * lap)) for s in range(RANKS) for lap in range(LAPS))
    # Two messages of one envelope, received in the other order than posted: by MPI's rule the first sent is the
    # first posted's, which completed last. Matching by completion would pair 100 + s with 2000 + s.
    reversed_waits = world_messages(view, 9)
    assert sorted((s, r, b) for _, _, s, r, _, _, _, _, _, _, b, _ in reversed_waits) == sorted(
        (s, (s + 1) % RANKS, size + s) for s in range(RANKS) for size in (100, 2000)
    )
    for s in range(RANKS):
        small, large = (
            next(row for row in reversed_waits if row[2] == s and row[10] == size + s) for size in (100, 2000)
        )
        assert small[0] < large[0] and small[1] > large[1]
    # The communicators of the odd and of the even ranks, each a ring of two.
    halves = {i for i, c in enumerate(view.communicators) if c["members"] in ([0, 2], [1, 3])}
    split = sorted((row[2], row[3], row[10]) for row in rows if row[8] in halves and row[9] == 7)
    assert split == [(0, 2, 3000), (1, 3, 3000), (2, 0, 3001), (3, 1, 3001)]
    # Collectives: the world's barrier and broadcast from rank 0, each one operation with a call of every rank.
    total, operations = view.collectives(*WHOLE, 1000)
    assert total == len(operations) == view.counts["collectives"]
    world = next(i for i, c in enumerate(view.communicators) if c["kind"] == "world")
    on_world = [(op, root, sorted(call[0] for call in calls)) for _, _, c, op, root, calls in operations if c == world]
    assert on_world == [("barrier", None, [0, 1, 2, 3]), ("bcast", 0, [0, 1, 2, 3])]
    for begin, end, _, _, _, calls in operations:
        assert begin == min(call[3] for call in calls) and end == max(call[4] for call in calls)
    # A query's rows are bounded, spread over the range.
    total, few = view.lines(*WHOLE, 5)
    assert total == len(rows) and len(few) == 5 and few[0] == rows[0] and len(set(few)) == 5


def summary_matrix(experiment):
    """{(sender, receiver): (messages, bytes)} from `tracetop summary`'s table of messages sent, by rank."""
    summary = run(sys.executable, "-m", "tracetop", "summary", str(experiment), cwd=experiment.parent)
    assert summary.returncode == 0, summary.stderr
    table = summary.stdout.split("MPI messages sent, by rank:", 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    matrix = {}
    for line in table:
        sender, receiver, count, size = map(int, re.fullmatch(r"\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", line).groups())
        matrix[sender, receiver] = count, size
    assert matrix
    return matrix


def sent_between(experiment, t0, t1, kinds=("world", "self", "derived")):
    """{(sender, receiver): (messages, bytes)} of the sends recorded in [t0, t1) on communicators of those kinds,
    read from the trace's own events."""
    trace, matrix = reader.Trace(str(experiment)), {}
    for index, process in enumerate(trace.processes):
        for thread in process["threads"]:
            for _kind, _time, peer, _, comm, size in (
                e[:6]
                for e in trace.read_stream(index, thread["stream"])[0]
                if e[0] in ("mpi_send", "mpi_isend") and t0 <= e[1] < t1
            ):
                c = process["comms"][comm]
                if c["kind"] not in kinds:
                    continue
                receiver = (
                    {"world": peer, "self": process["mpi_rank"]}.get(c["kind"])
                    if c["kind"] != "derived"
                    else c["members"][peer]
                )
                count, total = matrix.get((process["mpi_rank"], receiver), (0, 0))
                matrix[process["mpi_rank"], receiver] = count + 1, total + size
    return matrix


def page_matrix(page):
    cells = page.evaluate(
        "[...document.querySelectorAll('.comm-matrix td[data-sender]')].map(td => "
        "[+td.dataset.sender, +td.dataset.receiver, +td.dataset.messages, +td.dataset.bytes])"
    )
    return {(s, r): (count, size) for s, r, count, size in cells}


def darkest_near(page, x, y):
    """The darkest pixel of the timeline canvas within 2 px of (x, y) (CSS pixels): its [r, g, b]."""
    return page.evaluate(
        """([x, y]) => {
        const canvas = document.getElementById("tl-canvas"), ratio = window.devicePixelRatio || 1;
        const d = canvas.getContext("2d").getImageData(Math.round((x - 2) * ratio), Math.round((y - 2) * ratio),
                                                       Math.round(5 * ratio), Math.round(5 * ratio)).data;
        let best = [255, 255, 255];
        for (let i = 0; i < d.length; i += 4) if (d[i] + d[i + 1] + d[i + 2] < best[0] + best[1] + best[2]) best = [d[i], d[i + 1], d[i + 2]];
        return best;
    }""",
        [x, y],
    )


# Where a drawn line's ends are in the canvas, and the ranks of the lanes they are on.
DRAWN_LINES = """() => {
    const v = tracetopViewer, c = v.comm.state, scroll = document.getElementById("tl-scroll").scrollTop;
    const rankOfLane = (pid, stream) => {
        const lane = v.state.meta.lanes.findIndex(l => l.pid === pid && l.stream === stream);
        return [v.comm.rankOf(v.state.meta.lanes[lane].pid), v.lanePlace(lane).anchor - scroll];
    };
    return c.data.lines.rows.map(r => {
        const [from, y0] = rankOfLane(r[4], r[5]), [to, y1] = rankOfLane(r[6], r[7]);
        return {sender: r[2], receiver: r[3], tag: r[9], comm: r[8], from, to, x0: v.xOf(r[0]), y0, x1: v.xOf(r[1]), y1};
    });
}"""


def test_message_lines_between_the_ring_neighbours(browser, experiment):
    view = reader.MpiView(str(experiment))
    world = next(i for i, c in enumerate(view.communicators) if c["kind"] == "world")
    ring = world_messages(view, 7)
    server = ViewerServer(str(experiment), reader.Index(str(experiment))).start()
    try:
        with page_of(browser, server.url, size=(1400, 1000)) as page:
            page.wait_for_function(READY)
            # Ranks top to bottom in rank order, named on their process headers.
            headers = page.locator(".process-label .name").all_inner_texts()
            assert [h.split(" · ")[0] for h in headers] == [f"rank {r}" for r in range(RANKS)]
            screenshot(page, "mpi-timeline-whole-run")
            # The ring's laps.
            begin, end = min(r[0] for r in ring), max(r[1] for r in ring)
            page.evaluate(f"tracetopViewer.setView({begin} - {(end - begin) // 20}, {end} + {(end - begin) // 20})")
            page.wait_for_function(
                f"tracetopViewer.comm.state.data && tracetopViewer.comm.state.data.t0 <= {begin}"
                " && !tracetopViewer.comm.state.loading"
            )
            page.wait_for_timeout(300)
            lines = [line for line in page.evaluate(DRAWN_LINES) if line["tag"] == 7 and line["comm"] == world]
            assert len(lines) == RANKS * LAPS
            for line in lines:
                # From the sender's lane to its right neighbour's.
                assert (line["from"], line["to"]) == (line["sender"], line["receiver"])
                assert line["to"] == (line["from"] + 1) % RANKS
            assert page.evaluate("document.getElementById('comm-info').textContent").startswith(
                f"{len(page.evaluate(DRAWN_LINES))} messages"
            )
            screenshot(page, "mpi-ring-lines")
            # Drawn there: the middle of each line is darker than the same place with the lines switched off
            # (the lines on screen and slanted enough to find their middle: how many are depends on how long
            # each message took, which a loaded machine stretches unevenly).
            middles = [
                ((line["x0"] + line["x1"]) / 2, (line["y0"] + line["y1"]) / 2)
                for line in lines
                if max(line["y0"], line["y1"]) < 980 and line["x1"] - line["x0"] > 4
            ]
            assert middles, lines
            drawn = [sum(darkest_near(page, x, y)) for x, y in middles]
            # Hovering a line tells its message.
            box = page.locator("#tl-scroll").bounding_box()
            page.mouse.move(box["x"] + middles[0][0], box["y"] + middles[0][1])
            page.wait_for_selector("#tooltip:not([hidden])")
            sender, receiver = map(
                int, re.match(r"message: rank (\d+) → rank (\d+)", page.locator("#tooltip").inner_text()).groups()
            )
            assert receiver == (sender + 1) % RANKS
            page.mouse.move(box["x"] + 2, box["y"] + 2)
            page.locator("#comm-shown").uncheck()
            page.wait_for_timeout(300)
            plain = [sum(darkest_near(page, x, y)) for x, y in middles]
            assert all(on < off - 100 for on, off in zip(drawn, plain)), (drawn, plain)
            assert page.errors == []
    finally:
        server.close()


def test_collectives_drawn_across_their_ranks(browser, experiment):
    view = reader.MpiView(str(experiment))
    world = next(i for i, c in enumerate(view.communicators) if c["kind"] == "world")
    _, operations = view.collectives(*WHOLE, 1000)
    barrier = next(o for o in operations if o[2] == world and o[3] == "barrier")
    server = ViewerServer(str(experiment), reader.Index(str(experiment))).start()
    try:
        with page_of(browser, server.url, size=(1400, 1000)) as page:
            page.wait_for_function(READY)
            begin, end = barrier[0], barrier[1]
            page.evaluate(f"tracetopViewer.setView({begin} - {end - begin}, {end} + {end - begin})")
            page.wait_for_function(
                f"tracetopViewer.comm.state.data.t0 <= {begin} && !tracetopViewer.comm.state.loading"
            )
            page.wait_for_timeout(300)
            drawn = page.evaluate("tracetopViewer.comm.state.data.collectives.rows")
            assert [begin, end, world, "barrier"] in [row[:4] for row in drawn]
            # Its box's left edge, orange along every rank's lane (but where a message line crosses it).
            shares = page.evaluate(
                """(x) => {
                const v = tracetopViewer, c = document.getElementById("tl-canvas"), k = window.devicePixelRatio || 1;
                const g = c.getContext("2d"), scroll = document.getElementById("tl-scroll").scrollTop;
                return v.state.meta.lanes.map((lane, i) => {
                    const p = v.lanePlace(i);
                    let orange = 0, all = 0;
                    for (let y = p.top - scroll + 2; y < Math.min(p.top - scroll + p.height - 2, c.clientHeight - 2); y += 2) {
                        const d = g.getImageData(Math.floor(x * k) - 1, Math.round(y * k), 3, 1).data;
                        let best = -255;
                        for (let j = 0; j < d.length; j += 4) if (d[j] > 150) best = Math.max(best, d[j] - d[j + 2]);
                        all++;
                        orange += best > 60;
                    }
                    return [orange, all];
                });
            }""",
                page.evaluate(f"tracetopViewer.xOf({begin})"),
            )
            assert len(shares) == RANKS
            # Where the messages fall (and so which pixels their lines take) is the run's: on a loaded machine a
            # rank's edge may be a quarter crossed. Not drawn, it would be none.
            for orange, all in shares:
                assert all > 10 and orange >= 0.5 * all, shares
            # Hovering its box (between the lanes, where no call is) tells the operation. A message line wins
            # where it crosses the box, and where the messages fall differs from run to run: a few places.
            box = page.locator("#tl-scroll").bounding_box()
            y = page.evaluate(
                "tracetopViewer.state.layout.processes[2].top + 9 - document.getElementById('tl-scroll').scrollTop"
            )
            tips = []
            for share in (0.5, 0.3, 0.7, 0.15, 0.85):
                x = page.evaluate(
                    f"tracetopViewer.xOf({begin}) + {share} * (tracetopViewer.xOf({end}) - tracetopViewer.xOf({begin}))"
                )
                page.mouse.move(box["x"] + x, box["y"] + y)
                page.wait_for_selector("#tooltip:not([hidden])")
                tips.append(page.locator("#tooltip").inner_text())
                if tips[-1].startswith("barrier"):
                    break
            assert tips[-1].startswith(f"barrier\nMPI_COMM_WORLD, {RANKS} ranks"), tips
            screenshot(page, "mpi-collective-barrier")
            assert page.errors == []
    finally:
        server.close()


def test_the_matrix_is_summarys_and_follows_the_selection(browser, experiment):
    expected = summary_matrix(experiment)
    view = reader.MpiView(str(experiment))
    ring = world_messages(view, 7)
    server = ViewerServer(str(experiment), reader.Index(str(experiment))).start()
    try:
        with page_of(browser, server.url, size=(1400, 1000)) as page:
            page.wait_for_function(READY)
            page.wait_for_selector(".comm-matrix td[data-sender]")
            assert page_matrix(page) == expected == sent_between(experiment, *WHOLE)
            assert (
                page.locator(".comm-sum")
                .first.inner_text()
                .startswith(f"whole run: {sum(c for c, _ in expected.values())} messages")
            )
            # Per communicator: the world's messages are the ring's laps and the two of each reversed pair.
            world_row = page.locator(".comm-comms tr", has_text="MPI_COMM_WORLD").inner_text().split("\t")
            assert world_row[1:3] == [str(RANKS), str(RANKS * LAPS + 2 * RANKS)]
            # A cell lists its messages: rank 0 to rank 1.
            page.locator(".comm-matrix td[data-sender='0'][data-receiver='1']").click()
            page.wait_for_selector(".comm-messages tbody tr")
            listed = page.locator(".comm-messages tbody tr").count()
            assert listed == expected[0, 1][0]
            assert page.locator("#comm-pair .comm-sum").inner_text().startswith(f"rank 0 → rank 1: {listed} messages")
            screenshot(page, "mpi-matrix-whole-run")
            # A selection of the ring's laps alone: the matrix is theirs, r to r + 1, LAPS each.
            begin, end = min(r[0] for r in ring), max(r[1] for r in ring)
            page.evaluate(f"tracetopViewer.setView({begin} - {(end - begin) // 10}, {end} + {(end - begin) // 10})")
            box = page.locator("#tl-scroll").bounding_box()
            x0, x1 = page.evaluate(f"[tracetopViewer.xOf({begin}) - 3, tracetopViewer.xOf({end}) + 3]")
            page.mouse.move(box["x"] + x0, box["y"] + 10)
            page.mouse.down()
            page.mouse.move(box["x"] + (x0 + x1) / 2, box["y"] + 10)
            page.mouse.move(box["x"] + x1, box["y"] + 10)
            page.mouse.up()
            page.wait_for_function(
                "document.querySelector('.comm-sum') && "
                "document.querySelector('.comm-sum').textContent.startsWith('selected range')"
            )
            # The sends recorded in the range, as the trace has them: the ring's laps (and, where a rank went on
            # before the last lap ended, its next sends).
            a, b = page.evaluate("tracetopViewer.state.selection")
            selected = sent_between(experiment, math.floor(a), math.ceil(b))
            assert page_matrix(page) == selected
            for s in range(RANKS):
                assert selected[s, (s + 1) % RANKS][0] >= LAPS
            # The communicators' statistics are the range's too: the world's messages are those sent in it.
            world_row = page.locator(".comm-comms tr", has_text="MPI_COMM_WORLD").inner_text().split("\t")
            world_sent = sent_between(experiment, math.floor(a), math.ceil(b), kinds=("world",))
            assert int(world_row[2].replace(",", "")) == sum(count for count, _ in world_sent.values())
            # Its messages from a cell, and one of them brought into view by a click.
            page.locator(".comm-matrix td[data-sender='3'][data-receiver='0']").click()
            page.wait_for_function(
                f"document.querySelectorAll('.comm-messages tbody tr').length === {selected[3, 0][0]}"
            )
            page.locator(".comm-messages tbody tr").first.click()
            first = min(r for r in ring if r[2] == 3)
            t0, t1 = page.evaluate("[tracetopViewer.state.t0, tracetopViewer.state.t1]")
            assert t0 < first[0] < first[1] < t1 and t1 - t0 <= 5 * max(first[1] - first[0], 2000) + 1
            screenshot(page, "mpi-matrix-selection")
            assert page.errors == []
    finally:
        server.close()

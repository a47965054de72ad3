"""asyncio tasks as lanes: a program with named tasks shows a lane per task with its name, its steps stitched
together and its time suspended at an await, in summary, in the viewer (Chromium) and in the Chrome and
Perfetto exports; gather, TaskGroup, create_task, wait_for and cancellation behave as without tracetop."""

import json
import re
import sys

import pytest
from tracetop.viewer.server import ViewerServer

from browser import page_of, screenshot
from helpers import INSTRUMENTERS, PROGRAMS, python, reader, tracetop

WORKERS = 5
NAMES = [f"worker-{k}" for k in range(WORKERS)]


def run_program(where, instrumenter="profile"):
    plain = python(PROGRAMS / "asyncio_tasks.py", str(WORKERS), cwd=where)
    completed = tracetop(
        "--output", "exp", f"--instrumenter={instrumenter}", PROGRAMS / "asyncio_tasks.py", str(WORKERS), cwd=where
    )
    assert completed.returncode == plain.returncode == 0, completed.stderr
    assert completed.stdout == plain.stdout
    assert "victim cancelled: True" in plain.stdout and "wait_for timed out" in plain.stdout
    return where / "exp"


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    return run_program(tmp_path_factory.mktemp("tasks"))


def lanes_of(experiment):
    return {lane["name"]: lane for lane in reader.TaskLanes(str(experiment)).lanes}


def about_100_ms(lane, lanes):
    """A worker's 0.1 s sleep: at least that, and later only by what the loop ran meanwhile (every task's
    steps; the sum bounds it) and a generous allowance for a loaded machine's scheduling."""
    busy = sum(other["running_ns"] for other in lanes.values())
    return 0.09e9 < lane["suspended_ns"] < 0.1e9 + busy + 2e9


def summary_tasks(experiment):
    """task name -> (steps, running ms, suspended ms, first coroutine) from summary's tasks table."""
    text = tracetop("summary", "exp", cwd=experiment.parent).stdout
    table = text.split("\nAsyncio tasks: ")[1].split("\n\n")[0].splitlines()
    assert re.split(r"\s{2,}", table[1].strip())[:5] == ["task", "thread", "steps", "running ms", "suspended ms"]
    rows = {}
    for line in table[2:]:
        name, _, steps, running, suspended, first, _ = re.split(r"\s{2,}", line.strip())
        rows[name] = (int(steps), float(running), float(suspended), first)
    return rows, text


@pytest.mark.parametrize("instrumenter", INSTRUMENTERS)
def test_named_tasks_are_lanes_with_their_suspended_time(tmp_path, instrumenter):
    experiment = run_program(tmp_path, instrumenter)
    every = reader.TaskLanes(str(experiment)).lanes
    # One lane per task, none split in two: the N named ones, the two gathered coroutines and the
    # TaskGroup's two run worker, each in a lane of its own.
    assert len({lane["name"] for lane in every}) == len(every), [lane["name"] for lane in every]
    workers = [lane["name"] for lane in every if lane["coroutine"] == "__main__:worker"]
    assert sorted(workers)[-WORKERS:] == NAMES and len(workers) == WORKERS + 2 + 2 * (sys.version_info >= (3, 11))
    lanes = lanes_of(experiment)
    # wait_for ran slow() as a task of its own before 3.12 (cancelled at the timeout), in the caller's since.
    slow = [lane for lane in every if lane["coroutine"] == "__main__:slow"]
    assert len(slow) == (sys.version_info < (3, 12))
    # Suspended from the end of its first step to the timeout, 0.5 s after wait_for began: a loaded machine may
    # start that step late, but not by half of it.
    assert all(lane["suspended_ns"] >= 0.25e9 for lane in slow), slow
    # it slept until main, which waited for it to begin, had slept 100 ms and cancelled it
    assert lanes["doomed"]["suspended_ns"] >= 0.1e9
    for name in NAMES:
        lane = lanes[name]
        assert lane["coroutine"] == "__main__:worker" and lane["thread"] == "MainThread"
        # resumed at its start and once after asyncio.sleep(0.1): two steps, ~100 ms apart
        assert lane["steps"] == 2, lane
        assert about_100_ms(lane, lanes), lane
        assert lane["top"] == "__main__:spin"
    assert lanes["doomed"]["coroutine"] == "__main__:doomed"
    assert lanes["doomed"]["steps"] == 3  # started, cancelled at its await, re-raised
    assert {"grouped-0", "grouped-1"} <= set(lanes)


def test_summary_has_a_row_per_task_and_await_time_per_coroutine(experiment):
    rows, text = summary_tasks(experiment)
    lanes = lanes_of(experiment)
    for name in NAMES:
        steps, running, suspended, first = rows[name]
        assert (steps, first) == (2, "__main__:worker")
        assert suspended == round(lanes[name]["suspended_ns"] / 1e6, 3) and about_100_ms(lanes[name], lanes)
        assert running == round(lanes[name]["running_ns"] / 1e6, 3) > 0
    awaits = text.split("\nAwait time per coroutine")[1].splitlines()[2:]
    waited = {
        re.split(r"\s{2,}", line.strip())[0]: float(re.split(r"\s{2,}", line.strip())[1])
        for line in awaits
        if line.strip()
    }
    # every worker, and its nap, waited ~100 ms twice over: its own and the gathered ones
    assert waited["__main__:nap"] >= 0.09 * 1000 * (WORKERS + 2)
    assert waited["asyncio.tasks:sleep"] >= waited["__main__:nap"]
    assert waited["__main__:doomed"] >= 100  # sleeping until cancelled, 100 ms after it began to


def test_tasks_of_a_program_without_asyncio_are_none(tmp_path):
    completed = tracetop("--output", "exp", "-c", "def f(): return 1\nf()", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert reader.TaskLanes(str(tmp_path / "exp")).lanes == []
    assert "Asyncio tasks" not in tracetop("summary", "exp", cwd=tmp_path).stdout


def test_viewer_draws_a_lane_per_task(browser, experiment):
    server = ViewerServer(str(experiment), reader.Index(str(experiment))).start()
    try:
        with page_of(browser, server.url, size=(1400, 1100)) as page:
            page.wait_for_function("window.tracetopViewer && tracetopViewer.ready() && tracetopViewer.tasks.ready()")
            page.wait_for_timeout(300)  # the draw that follows the steps' arrival
            labels = page.eval_on_selector_all(".task-label", "(ds) => ds.map((d) => d.textContent)")
            assert set(NAMES) <= set(labels)
            lanes = lanes_of(experiment)
            for name in NAMES:
                gaps = page.evaluate(f"tracetopViewer.tasks.suspensions({name!r})")
                assert len(gaps) == 1 and gaps[0][1] - gaps[0][0] == lanes[name]["suspended_ns"], (name, gaps)
            # the lane's steps are drawn: pixels of its coroutine's colour in its row
            box = page.eval_on_selector(
                f".task-label[data-task='{NAMES[0]}']",
                "(d) => [d.getBoundingClientRect().top, d.getBoundingClientRect().height]",
            )
            assert painted(page, box[0] + 8) > 0
            # hovering the time between its steps says it was suspended, and for how long
            gap = page.evaluate(f"tracetopViewer.tasks.suspensions({NAMES[0]!r})")[0]
            point = page.evaluate(f"tracetopViewer.tasks.point({NAMES[0]!r}, {(gap[0] + gap[1]) // 2})")
            page.mouse.move(point["x"], point["y"])
            page.wait_for_selector("#tooltip:not([hidden])")
            assert "suspended (awaiting)" in page.inner_text("#tooltip")
            screenshot(page, "asyncio_task_lanes")
            # the profile's per-task view and await time per coroutine
            page.click("button[data-tab='profile']")
            page.wait_for_selector("#tasks-table")
            rows = page.eval_on_selector_all("#tasks-table tbody tr", "(rs) => rs.map((r) => r.cells[0].textContent)")
            assert set(NAMES) <= set(rows)
            awaited = page.eval_on_selector_all("#awaits-table tbody tr", "(rs) => rs.map((r) => r.textContent)")
            assert any("nap" in row for row in awaited)
            screenshot(page, "asyncio_task_profile")
            assert page.errors == []
    finally:
        server.close()


def painted(page, y):
    """Pixels of the canvas row at client y that are neither white nor the lane's stripe."""
    return page.evaluate(
        """(y) => {
        const c = document.getElementById('tl-canvas'), r = window.devicePixelRatio || 1;
        const top = c.getBoundingClientRect().top;
        const d = c.getContext('2d').getImageData(Math.round(175 * r), Math.round((y - top) * r), c.width - Math.round(175 * r), 1).data;
        let n = 0;
        for (let i = 0; i < d.length; i += 4) if (!(d[i] > 240 && d[i + 1] > 240 && d[i + 2] > 240)) n++;
        return n;
    }""",
        y,
    )


def test_chrome_has_a_track_per_task(experiment):
    out = experiment.parent / "trace.json"
    completed = tracetop("convert", "exp", "--to", "chrome", "--output", str(out), cwd=experiment.parent)
    assert completed.returncode == 0, completed.stderr
    events = json.loads(out.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    names = {
        e["args"]["name"]: (e["pid"], e["tid"]) for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"
    }
    lanes = lanes_of(experiment)
    for name in NAMES:
        track = names[f"task {name}"]
        steps = [e for e in events if (e.get("pid"), e.get("tid")) == track and e.get("ph") == "X"]
        running = [e for e in steps if e["name"] == "__main__:worker"]
        suspended = [e for e in steps if e["name"] == "suspended"]
        assert len(running) == 2 and len(suspended) == 1
        assert abs(suspended[0]["dur"] - lanes[name]["suspended_ns"] / 1e3) < 0.01  # microseconds


def test_perfetto_has_a_track_per_task(experiment):
    trace_pb2 = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")
    out = experiment.parent / "trace.pftrace"
    completed = tracetop("convert", "exp", "--to", "perfetto", "--output", str(out), cwd=experiment.parent)
    assert completed.returncode == 0, completed.stderr
    trace = trace_pb2.Trace()
    trace.ParseFromString(out.read_bytes())
    processes, tracks, open_slices, slices = set(), {}, {}, {}
    for packet in trace.packet:
        if packet.HasField("track_descriptor"):
            descriptor = packet.track_descriptor
            if descriptor.HasField("process"):
                processes.add(descriptor.uuid)
            elif descriptor.name.startswith("task "):
                assert descriptor.parent_uuid in processes
                tracks[descriptor.uuid] = descriptor.name[5:]
            continue
        event = packet.track_event
        if event.track_uuid not in tracks:
            continue
        if event.type == trace_pb2.TrackEvent.TYPE_SLICE_BEGIN:
            open_slices[event.track_uuid] = (event.name, packet.timestamp)
        elif event.type == trace_pb2.TrackEvent.TYPE_SLICE_END:
            name, begin = open_slices.pop(event.track_uuid)
            slices.setdefault(tracks[event.track_uuid], []).append((name, packet.timestamp - begin))
    lanes = lanes_of(experiment)
    for name in NAMES:
        assert [n for n, _ in slices[name]] == ["__main__:worker", "suspended", "__main__:worker"]
        assert slices[name][1][1] == lanes[name]["suspended_ns"] and about_100_ms(lanes[name], lanes)


def test_loops_in_two_threads_and_eager_tasks(tmp_path):
    plain = python(PROGRAMS / "asyncio_threads.py", cwd=tmp_path)
    completed = tracetop("--output", "exp", PROGRAMS / "asyncio_threads.py", cwd=tmp_path)
    assert completed.returncode == plain.returncode == 0, completed.stderr
    assert completed.stdout == plain.stdout == "[('main', [0, 1, 2]), ('thread', [0, 1, 2])]\n"
    lanes = lanes_of(tmp_path / "exp")
    for tag, thread in (("main", "MainThread"), ("thread", "looper")):
        for k in range(3):
            lane = lanes[f"{tag}-{k}"]  # named after its eager first step, too
            assert lane["thread"] == thread and lane["steps"] == 2 and lane["suspended_ns"] > 0.015e9, lane

"""`tracetop view --live` in a real Chromium: a running program appears, its hot function leads top's table, the
timeline advances, the on/off switch stops its events, the recorded part opens in a window of its own, the page
and a second reader (top) both read every event, and nothing is left in /dev/shm once the program ends; every
busy thread has a lane of bounded height in a box that scrolls, and a server with a thread per request has a
few lanes however many threads it makes. Screenshots go to tests/artifacts/."""

import json
import re
import urllib.request

import pytest
from tracetop.viewer.live import LiveServer

from browser import page_of, screenshot
from helpers import PROGRAMS, assert_complete, needs_object_counting, reader
from live_helpers import (
    Gated,
    Screen,
    Workload,
    channel,
    drain,
    needs_tmux,
    rows,
    top_command,
    wait_for_readers,
)

TOP_FUNCTIONS = "[...document.querySelectorAll('#top tbody tr td:nth-child(6)')].map((td) => td.textContent)"
COLUMN_WIDTHS = "[...document.querySelectorAll('#top thead th')].map((th) => th.getBoundingClientRect().width)"
SPANS_IN_AND_AFTER_THE_VIEW = """(() => { const s = window.ttLive.state, t0 = s.viewEnd - s.viewSpan;
    const spans = [...s.lanes.values()].flatMap((lane) => lane.levels.flat());
    return [spans.some((x) => x[5] > t0 && x[4] < s.viewEnd), spans.some((x) => x[4] > s.viewEnd)]; })()"""
HOT_CALLS = "window.ttLive.state.rows.find((r) => window.ttLive.state.functions[r[0]][0] === '__main__:hot')[1]"


def process_js(pid, what):
    return f"(() => {{ const p = window.ttLive.state.processes.get({pid}); return p ? {what} : null; }})()"


class Program(Workload):
    """programs/live_page.py under `tracetop run --live`, until stop()."""

    def __init__(self, where):
        super().__init__(where, program="live_page.py")

    def stop(self):
        experiment = super().stop()
        assert self.output == "rounds True\n"
        return experiment


@pytest.fixture
def live_server():
    server = LiveServer([]).start()
    yield server
    server.close()


def test_the_running_program_in_the_page(browser, live_server, tmp_path):
    with page_of(browser, live_server.url) as page:
        page.wait_for_function("window.ttLive && window.ttLive.state.serverNow > 0")
        program = Program(tmp_path)
        try:
            # The program comes on the page by itself (how soon: bench/live_page.py, within 1 s).
            page.wait_for_function(process_js(program.pid, "true"))
            page.wait_for_function(process_js(program.pid, "p.threads.length === 2"))

            # Its hot function leads top's table, as in `tracetop top`.
            page.wait_for_function(
                "document.querySelector('#top tbody tr td:nth-child(6)') && "
                "document.querySelector('#top tbody tr td:nth-child(6)').textContent === "
                "'__main__:hot'",
                timeout=30000,
            )
            # The timeline advances: the page's time and the pixels move.
            first = page.evaluate("[window.ttLive.state.serverNow, document.getElementById('tl-canvas').toDataURL()]")
            page.wait_for_function(
                "([now, pixels]) => window.ttLive.state.serverNow > now + 200 && "
                "document.getElementById('tl-canvas').toDataURL() !== pixels",
                arg=first,
            )
            # Calls that returned are drawn, stacks shown, the counter and the parameter are tracks.
            page.wait_for_function("[...window.ttLive.state.lanes.values()].some((l) => l.spans > 0)")
            page.wait_for_function(
                "[...window.ttLive.state.tracks.values()].map((t) => t.name).sort().join() === 'queue_len,round'"
            )
            assert page.is_hidden("#objects-panel")  # it counts no objects
            stacks = page.inner_text("#stacks")
            assert "MainThread" in stacks and "worker" in stacks and "__main__:main" in stacks
            page.wait_for_selector("#stacks .changed")  # how a stack changed since the last frame is marked
            labels = page.inner_text("#tl-labels")
            assert f"pid {program.pid}" in labels and "MainThread" in labels and "queue_len" in labels
            # The table per thread, per process, and of all (the server's scope, the same for every page).
            worker = page.evaluate(process_js(program.pid, "p.threads.find((t) => t.name === 'worker').stream"))
            for scope, shown, hidden in (
                (f"{program.pid}:{worker}", "__main__:worker", "__main__:main"),
                (str(program.pid), "__main__:main", None),
                ("0", "__main__:worker", None),
            ):
                page.select_option("#top-scope", scope)
                page.wait_for_function(
                    f"(() => {{ const names = {TOP_FUNCTIONS}; return names.includes('{shown}') && "
                    f"!names.includes('{hidden}'); }})()",
                    timeout=30000,
                )
                if hidden:
                    screenshot(page, "live_top_one_thread")
            # FUNCTION and FILE:LINE both in view.
            assert page.evaluate(COLUMN_WIDTHS)[5:] > [100, 100], page.evaluate(COLUMN_WIDTHS)
            screenshot(page, "live_running")

            # Pause: the view stands still while time goes on; scrolled back, it shows the past.
            page.click("#pause")
            paused = page.evaluate("[window.ttLive.state.viewEnd, window.ttLive.state.serverNow]")
            page.wait_for_function(f"window.ttLive.state.serverNow > {paused[1]} + 300")  # frames go on
            still = page.evaluate("[window.ttLive.state.viewEnd, window.ttLive.state.serverNow]")
            assert still[0] == paused[0] and still[1] > paused[1]
            page.mouse.move(700, 300)
            page.mouse.down()
            page.mouse.move(760, 300)  # half a second of the ten shown
            page.mouse.up()
            assert page.evaluate("window.ttLive.state.viewEnd") < paused[0]
            # The past is drawn: calls in the view, and calls after it, out of the view.
            assert page.evaluate(SPANS_IN_AND_AFTER_THE_VIEW) == [True, True]
            assert "ago" in page.inner_text("#view-range")
            screenshot(page, "live_paused_scrolled_back")
            page.click("#pause")

            # The switch: once the program answers, no call is recorded (how soon it answers:
            # bench/live_page.py, within 100 ms).
            answer = page.evaluate(f"fetch('api/switch?pid={program.pid}&on=0').then((r) => r.json())")
            assert answer == {"pid": program.pid, "measuring": False}
            page.wait_for_function(process_js(program.pid, "p.state === 'not measuring'"))
            # What was recorded before the switch reaches the page: then the count stands still (the counter and
            # parameter go on: they are not the hook's), for half a second of frames and for the next.
            page.wait_for_function(f"""() => {{
                const settled = window.settled || (window.settled = {{calls: -1, since: 0}});
                const now = window.ttLive.state.serverNow, calls = {HOT_CALLS};
                if (calls !== settled.calls) Object.assign(settled, {{calls, since: now}});
                return now - settled.since >= 500; }}""")
            calls, since = page.evaluate("[window.settled.calls, window.ttLive.state.serverNow]")
            page.wait_for_function(f"window.ttLive.state.serverNow > {since} + 500")
            assert page.evaluate(HOT_CALLS) == calls
            screenshot(page, "live_measurement_off")
            page.click(f"[data-pid='{program.pid}'] .switch")
            page.wait_for_function(process_js(program.pid, "p.state === 'measuring'"))
            page.wait_for_function(f"{HOT_CALLS} > {calls}")

            # The recorded part opens in the viewer: its window at the click (a window opened later, once the
            # server has indexed the part, is what popup blockers stop), saying what it waits for, as the button
            # does, until the viewer is there. The server's answer is held back here until both are seen.
            held = []
            page.route("**/api/open?*", lambda route: held.append(route))
            opener = f"[data-pid='{program.pid}'] .open"
            with page.expect_popup() as opened:
                page.click(opener)
            popup = opened.value
            while not held:
                page.wait_for_timeout(50)  # hands the request to the route
            assert "Indexing what process" in popup.inner_text("body")
            assert page.inner_text(opener).startswith("Indexing") and page.is_disabled(opener)
            screenshot(page, "live_opening_the_recorded_part")
            held[0].continue_()
            page.unroute("**/api/open?*")
            popup.wait_for_url("http://127.0.0.1:*/*/")
            page.wait_for_function(f"document.querySelector(\"{opener}\").textContent === 'Open the recorded part'")
            # ... a viewer of what the program wrote so far: its two threads, their calls.
            with urllib.request.urlopen(popup.url + "api/meta", timeout=60) as answer:
                lanes = {lane["name"]: lane["calls"] for lane in json.load(answer)["lanes"]}
            assert set(lanes) == {"MainThread", "worker"} and lanes["MainThread"] > 0, lanes
            popup.close()
        finally:
            experiment = program.stop()
        page.wait_for_function(process_js(program.pid, "p.state === 'ended'"))
        screenshot(page, "live_ended")
        assert not channel(program.pid).exists()
        assert page.errors == []
    assert_complete(experiment)


@needs_tmux
def test_the_page_and_top_each_read_every_event(browser, tmp_path):
    """Three readers at once: the page, `top --drain` (the count of what it read) and top on its screen in tmux."""
    program = Gated(tmp_path, "--noinstrumenter", PROGRAMS / "gated_fib.py", "24")
    server = LiveServer([program.pid]).start()
    top = drain(program.pid, tmp_path)
    (tmp_path / "tmux").mkdir()
    screen = Screen(tmp_path / "tmux", top_command(program.pid), width=120)
    try:
        with page_of(browser, server.url) as page:
            page.wait_for_function("window.ttLive && window.ttLive.state.serverNow > 0")
            program.start()
            page.wait_for_function(process_js(program.pid, "true"), timeout=30000)
            wait_for_readers(program.pid, 3)  # the page's server (this process), top --drain and top
            (tmp_path / "go").touch()
            assert program.wait() == "fib 46368\n"
            page.wait_for_function(process_js(program.pid, "p.state === 'ended'"), timeout=30000)
            shown = page.evaluate(process_js(program.pid, "[p.events, p.dropped]"))
            fib_row = page.evaluate(
                "[...document.querySelectorAll('#top tbody tr')].map((tr) => tr.innerText)"
                ".find((text) => text.includes('__main__:fib'))"
            )
            screenshot(page, "live_fib_ended")
            assert page.errors == []
        traced = reader.profile(str(tmp_path / "exp"))
        fib_calls = next(region["visits"] for region in traced["regions"] if region["name"] == "__main__:fib")
        screen.wait(
            f"fib's {fib_calls} calls",
            lambda lines: [row.calls for row in rows(lines) if row.function == "__main__:fib"] == [fib_calls],
        )
    finally:
        screen.close()
        server.close()
    out, err = top.communicate(timeout=60)
    read = re.fullmatch(r"processes 1 events (\d+) bytes \d+ dropped_bytes 0 resyncs 0 seconds \S+\n", out)
    assert read, (out, err)
    assert int(read.group(1)) == traced["events"]
    assert shown == [traced["events"], 0]
    assert re.search(rf"\b{fib_calls}\b", fib_row), fib_row
    assert not channel(program.pid).exists()


def test_the_page_under_its_own_policy(browser, live_server, tmp_path):
    """Without the tests' probes, the page's Content-Security-Policy is in force: it breaks nothing. Two
    programs: each its own group of lanes."""
    programs = []
    try:
        for name in ("one", "two"):
            (tmp_path / name).mkdir()
            programs.append(Program(tmp_path / name))
        with page_of(browser, live_server.url, bypass_csp=False) as page:
            for program in programs:
                page.wait_for_selector(f"[data-pid='{program.pid}'] .switch:text('Measurement on')")
                page.wait_for_selector(f"#tl-labels .process-label:text('pid {program.pid}')")
            page.wait_for_selector("#top tbody tr")
            assert page.locator("#tl-labels .lane-label span:text-is('worker')").count() == 2
            screenshot(page, "live_two_programs")
            assert page.errors == []
    finally:
        for program in programs:
            program.stop()


OBJECT_BARS = """(() => Object.fromEntries([...document.querySelectorAll('#objects tbody tr')].map((tr) =>
    [tr.dataset.type, [...tr.querySelectorAll('.bar')].map((bar) => bar.getBoundingClientRect().width)])))()"""


@needs_object_counting
def test_objects_bars_and_the_dial(browser, live_server, tmp_path):
    """programs/live_objects.py under --live --objects: the objects panel shows list and dict bars from top's
    rows of types (made and freed alike for dicts; lists kept, the longer alive bar), and the dial's needle
    winds as lists are made."""
    with page_of(browser, live_server.url) as page:
        page.wait_for_function("window.ttLive && window.ttLive.state.serverNow > 0")
        workload = Workload(tmp_path, program="live_objects.py", options=["--objects"])
        try:
            page.wait_for_selector("#objects-panel", state="visible", timeout=15000)
            page.wait_for_function(
                f"(() => {{ const b = {OBJECT_BARS}; return b.list && b.dict && "
                "b.list[0] > 1 && b.dict[0] > 1 && b.list[2] > 1; })()",
                timeout=15000,
            )
            bars = page.evaluate(OBJECT_BARS)
            created, destroyed, alive = bars["dict"]
            assert abs(created - destroyed) <= max(2, 0.2 * created), bars  # freed as made
            assert bars["list"][1] < bars["list"][0], bars  # lists kept
            assert bars["list"][2] > 10 * max(alive, 1), bars
            cells = page.evaluate(
                "[...document.querySelectorAll('#objects tbody tr')].map((tr) => "
                "[...tr.cells].slice(0, 4).map((c) => c.textContent))"
            )
            assert any(row[0] == "list" and row[3][0].isdigit() and row[3] != "0" for row in cells), cells
            first = page.evaluate("window.ttLive.nova")
            page.wait_for_function(
                f"window.ttLive.nova.made > {first['made']} && window.ttLive.nova.angle !== {first['angle']}"
            )
            assert page.evaluate("window.ttLive.nova.perSecond") > 0
            assert "lists: " in page.inner_text("#nova-text")
            # Beside the objects panel, top's FUNCTION keeps its room (FILE:LINE goes to its hover).
            page.wait_for_selector("#top tbody tr")
            assert page.evaluate(COLUMN_WIDTHS)[5] > 100, page.evaluate(COLUMN_WIDTHS)
            assert "live_objects.py:" in page.get_attribute("#top tbody tr td:nth-child(6)", "title")
            screenshot(page, "live_objects")
        finally:
            assert_complete(workload.stop())


LANES_OF = """(pid) => [...window.ttLive.state.lanes.values()].filter((lane) => lane.pid === pid)"""
LAYOUT_OF = """(pid) => window.ttLive.state.layout.rows.filter((row) => row.kind === 'lane' && row.lane.pid === pid)
    .map((row) => ({name: row.lane.name, h: row.h, y: row.y, depth: row.lane.depth, rows: row.shape.rows}))"""


def test_every_busy_thread_has_a_lane(browser, tmp_path):
    """programs/busy_threads.py: eight busy threads, each now and then 30 calls deep. Each has a lane of its
    own, of bounded height (LEVELS rows, the deeper levels folded into a band, "+N" to show them all, "▾" to
    fold it), and the lanes' box scrolls down to the last of them."""
    workload = Workload(tmp_path, 8, program="busy_threads.py")
    server = LiveServer([workload.pid]).start()  # this program alone: its last lane is the box's last
    try:
        with page_of(browser, server.url) as page:
            busy = [f"busy-{k}" for k in range(8)]
            lane_row, band_row, pad = 14, 8, 4  # live.js: LANE_ROW, BAND_ROW, LANE_PAD
            tallest = 6 * lane_row + band_row + 1 + pad  # LEVELS rows, the band
            page.wait_for_function(
                f"({LAYOUT_OF})({workload.pid}).filter((r) => r.depth > 6 && r.name.startsWith('busy-')).length === 8"
            )
            names = page.evaluate(f"({LANES_OF})({workload.pid}).map((lane) => lane.name)")
            assert names == ["MainThread", *busy], names
            labels = page.evaluate(
                "[...document.querySelectorAll('#tl-labels .lane-label span')].map((s) => s.textContent)"
            )
            assert set(busy) <= set(labels), labels
            rows = {row["name"]: row for row in page.evaluate(f"({LAYOUT_OF})({workload.pid})")}
            assert all(rows[name]["rows"] == 6 and rows[name]["h"] == tallest for name in busy), rows
            # Taller than the box: it scrolls, and at its end the last lane is in view.
            box = page.evaluate(
                "[document.getElementById('tl-scroll').scrollHeight, document.getElementById('tl-scroll').clientHeight]"
            )
            assert box[0] > box[1], box
            screenshot(page, "live_busy_threads")
            page.evaluate("document.getElementById('tl-scroll').scrollTop = 1e9")
            last = page.locator("#tl-labels .lane-label", has_text="busy-7")
            page.wait_for_function(
                "(() => { const box = document.getElementById('tl-scroll').getBoundingClientRect();"
                " const label = [...document.querySelectorAll('#tl-labels .lane-label')]"
                ".find((l) => l.textContent.includes('busy-7')).getBoundingClientRect();"
                " return label.top >= box.top && label.bottom <= box.bottom; })()"
            )
            screenshot(page, "live_busy_threads_scrolled")
            # "+N" shows every level of busy-7; "▾" folds it to its band.
            last.locator("button.depth").click()
            page.wait_for_function(
                f"(() => {{ const r = ({LAYOUT_OF})({workload.pid}).find((r) => r.name === 'busy-7');"
                " return r.rows === r.depth && r.rows > 6; })()"
            )
            last.locator("button.fold").click()
            page.wait_for_function(
                f"(() => {{ const r = ({LAYOUT_OF})({workload.pid}).find((r) => r.name === 'busy-7');"
                " return r.rows === 0 && r.h < 20; })()"
            )
            assert last.locator("button.fold").inner_text() == "▸"
            assert page.errors == []
            experiment = workload.stop()
            assert workload.output == "busy 8\n"
            # Ended, its lanes are folded to their bands (its threads, ended, one group now).
            page.wait_for_function(f"({LAYOUT_OF})({workload.pid}).every((r) => r.rows === 0)")
    finally:
        server.close()
        if workload.process.returncode is None:
            workload.stop()
    assert_complete(experiment)


def test_a_thread_per_request_server_has_bounded_lanes(browser, tmp_path):
    """programs/thread_per_request.py: 20 requests a second (1,200 a minute), a thread each. Its threads are one
    group lane, counted; the page's lanes stay bounded (the threads of that name apart only until three have
    ended), and the server lists a thread that ended only until its last record leaves the window (3 s here),
    so that neither the page nor the frames grow with the threads made."""
    workload = Workload(tmp_path, 20, program="thread_per_request.py")
    server = LiveServer([workload.pid], window=3).start()
    try:
        with page_of(browser, server.url) as page:
            # At each animation frame: every thread the page was told of, and the most lanes it held at once.
            page.wait_for_function(
                f"""() => {{
                const seen = window.seen || (window.seen = {{streams: new Set(), lanes: 0, listed: 0}});
                const p = window.ttLive.state.processes.get({workload.pid});
                if (!p) return false;
                for (const th of p.threads) seen.streams.add(th.stream);
                seen.lanes = Math.max(seen.lanes, ({LANES_OF})({workload.pid}).length);
                seen.listed = Math.max(seen.listed, p.threads.length);
                return seen.streams.size > 150; }}""",
                timeout=120000,
            )
            seen = page.evaluate("[window.seen.lanes, window.seen.listed]")
            # MainThread, and before the group two threads that ended and those running (SLOTS, 4, and those
            # that left their slot but are still ending): a few, not the threads made (150 and more).
            assert seen[0] <= 20, seen
            # The threads of the last 3 s of a program that makes at most 20 a second, and those running.
            assert seen[1] <= 100, seen
            # Its lanes: MainThread and the group (a thread just started may have a lane of its own for a frame
            # or two, until its name is known).
            page.wait_for_function(
                f"({LANES_OF})({workload.pid}).map((lane) => lane.name + ' ' + lane.group).join() === "
                "'MainThread false,Thread-* (handle) true'"
            )
            group = page.evaluate(f"(({LANES_OF})({workload.pid})[1]).threads.length")
            assert group >= 3, group
            page.wait_for_function(f"({LANES_OF})({workload.pid})[1].spans > 0")
            page.wait_for_selector("#tl-labels .lane-label .count:text('×')")
            page.wait_for_function(
                "document.querySelectorAll('#tl-labels .lane-label').length === window.ttLive.state.lanes.size"
            )
            screenshot(page, "live_thread_per_request")
            assert page.errors == []
    finally:
        server.close()
        experiment = workload.stop()
    assert workload.output.startswith("served ")
    assert_complete(experiment)

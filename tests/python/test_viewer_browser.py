"""The viewer in a real Chromium on real experiments: lanes, zoom and pan, hover, details, range selection,
profile, flame graph, counters and search. Screenshots go to tests/artifacts/."""

import re
import sys

import pytest
from tracetop.viewer.server import ViewerServer

from browser import LONG_NAME, RECORD_LABELS, TTmiddle, page_of, screenshot, shortened_labels
from helpers import PROGRAMS, reader, tracetop

QUALIFIED = pytest.mark.skipif(
    sys.version_info < (3, 11), reason="the long names are qualified names: co_qualname is new in 3.11"
)

READY = "window.tracetopViewer && window.tracetopViewer.ready()"


def experiment_of(where, program, *arguments):
    completed = tracetop("--output", "exp", PROGRAMS / program, *arguments, cwd=where)
    assert completed.returncode == 0, completed.stderr
    return where / "exp"


def serve(experiment):
    return ViewerServer(str(experiment), reader.Index(str(experiment))).start()


@pytest.fixture(scope="module")
def threads_url(tmp_path_factory):
    server = serve(experiment_of(tmp_path_factory.mktemp("threads"), "workloads/threads.py", "20000"))
    yield server.url
    server.close()


@pytest.fixture(scope="module")
def deep_url(tmp_path_factory):
    server = serve(experiment_of(tmp_path_factory.mktemp("deep"), "deep_threads.py", "3000"))
    yield server.url
    server.close()


@pytest.fixture(scope="module")
def fib_url(tmp_path_factory):
    server = serve(experiment_of(tmp_path_factory.mktemp("fib"), "fib.py", "18"))
    yield server.url
    server.close()


@pytest.fixture(scope="module")
def demo_url(tmp_path_factory):
    server = serve(experiment_of(tmp_path_factory.mktemp("demo"), "viewer_demo.py", "300"))
    yield server.url
    server.close()


@pytest.fixture
def threads_page(browser, threads_url):  # noqa: F811
    with page_of(browser, threads_url) as page:
        page.wait_for_function(READY)
        yield page
        assert page.errors == []


def view_range(page):
    """The visible range as the toolbar says it: (start ms, end ms) from 'view A – B (span)'."""
    text = page.inner_text("#view-range")
    return text


def visible_span_ns(page):
    return page.evaluate("tracetopViewer.state.t1 - tracetopViewer.state.t0")


def test_five_lanes_with_the_thread_names(threads_page):
    names = threads_page.locator(".lane-label .name").all_inner_texts()
    assert names == ["MainThread", "worker-0", "worker-1", "worker-2", "worker-3"]
    screenshot(threads_page, "timeline-threads")


def lane_layout(page):
    return page.evaluate(
        "tracetopViewer.state.layout.lanes.map(l => ({top: l.top, height: l.height, shown: l.shown, "
        "depths: l.depths, folded: !!l.folded}))"
    )


def test_first_screen_shows_every_thread_at_1280_by_720(browser, deep_url):
    """Five threads, each lane bounded in height with its overview band painted: all on the first screen, though
    the workers' stacks are 40 calls deep."""
    with page_of(browser, deep_url, size=(1280, 720)) as page:
        page.wait_for_function(READY)
        page.wait_for_timeout(100)
        visible = page.evaluate("document.getElementById('tl-scroll').clientHeight")
        lanes = lane_layout(page)
        assert len(lanes) == 5
        assert all(lane["top"] + lane["height"] <= visible for lane in lanes), (lanes, visible)
        workers = lanes[1:]
        assert all(lane["depths"] > 40 and lane["shown"] < lane["depths"] for lane in workers)  # bounded
        # Each lane's band is painted with its deepest calls, across the view.
        colours = page.evaluate("""() => {
            const c = document.getElementById('tl-canvas'), g = c.getContext('2d'), r = window.devicePixelRatio || 1;
            return tracetopViewer.state.layout.lanes.map(l => {
                const y = Math.round((l.band + 4 - document.getElementById('tl-scroll').scrollTop) * r);
                const d = g.getImageData(0, y, c.width, 1).data;
                let painted = 0;
                for (let i = 170 * r * 4; i < d.length; i += 4) if (d[i] < 240 || d[i + 1] < 240) painted++;
                return painted;
            });
        }""")
        screenshot(page, "timeline-first-screen-1280x720")
        assert all(painted > 20 for painted in colours), colours
        # A worker's depth expands, and folds back; a lane folds to its band.
        page.locator(".lane-label[data-lane='1'] button.depth").click()
        expanded = lane_layout(page)[1]
        assert expanded["shown"] == expanded["depths"] and expanded["height"] > workers[0]["height"]
        screenshot(page, "timeline-lane-expanded")
        page.locator(".lane-label[data-lane='1'] button.depth").click()
        assert lane_layout(page)[1]["shown"] == workers[0]["shown"]
        # A lane moves to the top, and the others down by its height.
        page.locator(".lane-label[data-lane='3'] button.raise").click()
        moved = lane_layout(page)
        assert moved[3]["top"] == lanes[0]["top"] and moved[0]["top"] == lanes[0]["top"] + lanes[3]["height"]
        assert page.locator(".lane-label .name").all_inner_texts()[:2] == ["worker-2", "MainThread"]
        assert page.locator(".lane-label[data-lane='3'] button.raise").count() == 0  # at the top already
        page.locator(".lane-label[data-lane='2'] button.fold").click()
        folded = lane_layout(page)[2]
        assert folded["folded"] and folded["height"] < 20
        # The panel below the timeline takes the height it is dragged to.
        before = page.evaluate("document.getElementById('bottom').getBoundingClientRect().height")
        bar = page.locator("#splitter").bounding_box()
        page.mouse.move(bar["x"] + 300, bar["y"] + 2)
        page.mouse.down()
        page.mouse.move(bar["x"] + 300, bar["y"] - 150, steps=4)
        page.mouse.up()
        after = page.evaluate("document.getElementById('bottom').getBoundingClientRect().height")
        assert after == pytest.approx(before + 150, abs=2)
        page.wait_for_timeout(100)
        screenshot(page, "timeline-folded-and-resized")
        assert page.errors == []


def test_zoom_and_pan_change_the_visible_range(threads_page):
    page = threads_page
    before_text, before = view_range(page), visible_span_ns(page)
    box = page.locator("#tl-scroll").bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + 120)
    page.mouse.wheel(0, -600)
    page.wait_for_function(f"tracetopViewer.state.t1 - tracetopViewer.state.t0 < {before * 0.7}")
    zoomed_text, zoomed = view_range(page), visible_span_ns(page)
    assert zoomed_text != before_text and zoomed < before * 0.7
    page.keyboard.press("w")
    assert visible_span_ns(page) < zoomed
    page.keyboard.press("s")
    page.keyboard.press("s")
    assert visible_span_ns(page) > zoomed
    start = page.evaluate("tracetopViewer.state.t0")
    page.keyboard.press("d")
    step = page.evaluate("tracetopViewer.state.t0") - start
    assert step > 0
    page.keyboard.down("a")  # held: the view keeps moving, past more than two presses' steps
    page.wait_for_function(f"{start + step} - tracetopViewer.state.t0 > {2 * step}")
    page.keyboard.up("a")
    start = page.evaluate("tracetopViewer.state.t0")
    page.mouse.move(box["x"] + 600, box["y"] + 200)
    page.mouse.down()
    page.mouse.move(box["x"] + 900, box["y"] + 200, steps=5)
    page.mouse.up()
    assert page.evaluate("tracetopViewer.state.t0") < start  # dragged right: earlier times come into view
    page.wait_for_function(READY)
    screenshot(page, "timeline-zoomed")


@pytest.mark.parametrize("span_ns, unit", [(100_000_000, "ms"), (1_000_000, "µs")])
def test_a_view_that_starts_just_before_the_run_says_0_not_minus_0(threads_page, span_ns, unit):
    """The range label of a view starting 400 ns before the run, at a zoom whose ticks round that to zero: "0",
    never "-0" (JavaScript's toFixed keeps the sign of a negative number rounded to zero)."""
    page = threads_page
    page.evaluate(
        f"tracetopViewer.setView(tracetopViewer.state.begin - 400, tracetopViewer.state.begin - 400 + {span_ns})"
    )
    assert page.evaluate("tracetopViewer.state.t0 - tracetopViewer.state.begin") == -400
    page.wait_for_function(f"document.getElementById('view-range').textContent.startsWith('view 0 {unit} – ')")
    assert page.evaluate("tracetopViewer.format.fmtTime(-400, 1e7)") == "0 ms"
    assert page.evaluate("tracetopViewer.format.fmtTime(-400, 1e4)") == "0 µs"


def hover_bar(page, name):
    """Points at a call of region `name`, zooming in to one when none is wide enough at this zoom."""
    for _ in range(6):
        bar = page.evaluate(f"tracetopViewer.findBar({name!r}, 6)")
        if bar:
            break
        assert page.evaluate(f"tracetopViewer.revealBar({name!r})"), f"no call of {name} in view"
        page.wait_for_function(READY + " && !tracetopViewer.state.inflight.spans")
    assert bar, f"no bar of {name} to point at"
    page.mouse.move(bar["x"], bar["y"])
    return bar


def test_hover_shows_name_and_duration(threads_page):
    page = threads_page
    hover_bar(page, "__main__:collatz_len")
    tooltip = page.locator("#tooltip")
    tooltip.wait_for(state="visible")
    page.wait_for_function("!document.getElementById('tooltip').textContent.includes('…')")
    text = tooltip.inner_text()
    assert text.splitlines()[0] == "collatz_len"  # the qualname; the module below it
    assert "Module: __main__" in text
    assert re.search(r"Duration: [\d.]+ (ns|µs|ms)", text)
    assert re.search(r"Self time: [\d.]+ (ns|µs|ms)", text)
    assert "threads.py:5" in text
    screenshot(page, "timeline-hover")


@pytest.mark.parametrize(
    "formatter, value, shown",
    [
        ("fmtDuration", 999.4, "999 ns"),
        ("fmtDuration", 999.7, "1.00 µs"),
        ("fmtDuration", 12_345, "12.3 µs"),
        ("fmtDuration", 999_700, "1.00 ms"),  # rounded before the unit is chosen: not "1.00e+3 µs"
        ("fmtDuration", 999_700_000, "1.000 s"),
        ("fmtBytes", 1000, "1000 B"),
        ("fmtBytes", 1023.9 * 1024, "1024 KiB"),
        ("fmtBytes", 1.5 * (1 << 20), "1.50 MiB"),
    ],
)
def test_numbers_are_said_without_exponents(threads_page, formatter, value, shown):
    assert threads_page.evaluate(f"tracetopViewer.format.{formatter}({value})") == shown


def test_click_fills_the_details_panel(threads_page):
    page = threads_page
    assert "Click a call" in page.inner_text("#details-body")
    bar = hover_bar(page, "__main__:collatz_len")
    page.mouse.click(bar["x"], bar["y"])
    page.wait_for_function(
        "document.getElementById('details-body').textContent.includes('Self time') && "
        "!document.getElementById('details-body').textContent.includes('…')"
    )
    details = page.inner_text("#details-body")
    assert "collatz_len" in details and "__main__" in details and "threads.py:5" in details
    assert re.search(r"Thread\s+worker-\d", details)
    screenshot(page, "timeline-details")


def test_range_selection_shows_its_function_summary(threads_page):
    page = threads_page
    box = page.locator("#tl-scroll").bounding_box()
    page.keyboard.down("Shift")
    page.mouse.move(box["x"] + 400, box["y"] + 150)
    page.mouse.down()
    page.mouse.move(box["x"] + 800, box["y"] + 150, steps=5)
    page.mouse.up()
    page.keyboard.up("Shift")
    page.wait_for_selector("#range-table")
    rows = page.locator("#range-table tbody tr td.name").all_inner_texts()
    assert "collatz_len" in rows
    screenshot(page, "timeline-selection")
    # The profile follows the selection too.
    page.click("#tabs button[data-tab=profile]")
    page.check("#scope-selection")
    page.wait_for_function("/^\\d/.test(document.getElementById('scope-info').textContent)")
    selected = page.evaluate("tracetopViewer.state.selection")
    assert page.evaluate("tracetopViewer.state.tree.key").startswith(f"{int(selected[0])}/")


def test_search_highlights_the_occurrences(threads_page):
    page = threads_page
    page.fill("#search", "collatz")
    page.wait_for_function("tracetopViewer.highlighted() > 0")
    info = page.inner_text("#search-info")
    assert re.match(r"1 region matches · [\d,]+ calls in view", info), info
    assert page.evaluate("tracetopViewer.highlighted()") == 20000
    page.wait_for_timeout(100)
    highlight_pixels = page.evaluate("""() => {
        const c = document.getElementById('tl-canvas');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0;
        for (let i = 0; i < d.length; i += 4) if (d[i] === 246 && d[i + 1] === 201 && d[i + 2] === 14) n++;
        return n;
    }""")
    assert highlight_pixels > 100
    screenshot(page, "timeline-search")
    page.fill("#search", "no such region anywhere")
    page.wait_for_function("document.getElementById('search-info').textContent === 'no region matches'")


def test_profile_lists_fib_with_its_visits(browser, fib_url):
    with page_of(browser, fib_url) as page:
        page.wait_for_function(READY)
        page.click("#tabs button[data-tab=profile]")
        page.wait_for_selector("#flat-table")
        rows = {row[0]: row for row in (r.split("\t") for r in page.locator("#flat-table tbody tr").all_inner_texts())}
        fib = rows["fib"]
        assert fib[4] == "8,361"  # fib(18) makes 2 * fib(19) - 1 calls
        assert fib[5] == "fib.py:4"
        # Expand and collapse <module> in the call tree: fib is its child.
        rows = page.locator("#calltree-table tbody tr")
        module = rows.filter(has_text="<module>").first
        if module.inner_text().startswith("▸"):
            module.click()

        def names():
            return [name.lstrip("▸▾") for name in page.locator("#calltree-table tbody tr td.name").all_inner_texts()]

        assert "fib" in names()
        rows.filter(has_text="<module>").first.click()
        assert "fib" not in names()
        # Sort the flat table by visits.
        page.click("#flat-table th:nth-child(5)")
        first = page.locator("#flat-table tbody tr").first.inner_text().split("\t")[0]
        assert first == "fib"
        screenshot(page, "profile-fib")
        assert page.errors == []


def test_flame_graph_renders(browser, fib_url):
    with page_of(browser, fib_url) as page:
        page.wait_for_function(READY)
        page.click("#tabs button[data-tab=flame]")
        page.wait_for_function("document.getElementById('flame').height > 200")
        painted = page.evaluate("""() => {
            const c = document.getElementById('flame');
            const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
            let n = 0;
            for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
            return n / (c.width * c.height);
        }""")
        assert painted > 0.05
        screenshot(page, "flame-fib")
        height = page.evaluate("document.getElementById('flame').height")
        frame = page.evaluate("tracetopViewer.findFrame('__main__:fib', 6)")
        page.mouse.click(frame["x"], frame["y"])  # zoom into a frame deep in fib's recursion
        assert page.evaluate("tracetopViewer.state.focus") is not None
        screenshot(page, "flame-fib-zoomed")
        page.click("#flame-reset")
        assert page.evaluate("document.getElementById('flame').height") == height
        assert page.errors == []


def test_counters_and_parameters_are_tracks(browser, demo_url):
    with page_of(browser, demo_url) as page:
        page.wait_for_function(READY)
        page.wait_for_function("tracetopViewer.state.samples !== null")
        tracks = page.locator(".track-label").all_inner_texts()
        assert {
            "progress_w0 · worker-0",
            "progress_w1 · worker-1",
            "progress_main · MainThread",
            "param n · worker-0",
            "param n · MainThread",
        } <= set(tracks)
        page.wait_for_timeout(100)
        screenshot(page, "timeline-counters")
        hover_bar(page, "__main__:middle")
        page.wait_for_function("document.getElementById('tooltip').textContent.includes('Parameters')")
        assert re.search(r"Parameters: n = \d+, mode = (even|odd)", page.inner_text("#tooltip"))
        assert page.errors == []


def test_marks_are_shown_on_their_lanes(browser, demo_url):
    with page_of(browser, demo_url) as page:
        page.wait_for_function(READY)
        page.wait_for_function("tracetopViewer.findMark('done w1') !== null")
        mark = page.evaluate("tracetopViewer.findMark('done w1')")
        page.mouse.move(mark["x"], mark["y"])
        page.wait_for_selector("#tooltip:visible")
        assert re.fullmatch(r"mark\ndone w1 at [\d.]+ ms", page.inner_text("#tooltip"))
        assert page.errors == []


def test_the_page_keeps_to_its_content_security_policy(browser, threads_url):
    """Without the tests' bypass: everything the viewer does is allowed by the policy it is served with."""
    with page_of(browser, threads_url, bypass_csp=False) as page:
        page.wait_for_selector(".lane-label")
        page.wait_for_timeout(300)
        page.click("#tabs button[data-tab=profile]")
        page.wait_for_selector("#calltree-table")
        page.click("#tabs button[data-tab=flame]")
        page.wait_for_timeout(200)
        assert page.errors == []


@pytest.fixture(scope="module")
def long_names_url(tmp_path_factory):
    server = serve(experiment_of(tmp_path_factory.mktemp("long"), "long_names.py"))
    yield server.url
    server.close()


@QUALIFIED
def test_a_narrow_box_shows_its_name_shortened_in_the_middle(browser, long_names_url):
    with page_of(browser) as page:
        page.add_init_script(RECORD_LABELS)
        page.goto(long_names_url)
        page.wait_for_function(READY)
        page.wait_for_timeout(100)
        assert LONG_NAME not in page.evaluate("window.drawnLabels")  # no box is wide enough for all of it
        assert shortened_labels(page), [label for label in page.evaluate("window.drawnLabels") if "…" in label]
        assert not any(label.startswith("__main__:") for label in page.evaluate("window.drawnLabels"))
        screenshot(page, "timeline-short-names")
        page.evaluate("window.drawnLabels = []")
        page.click("#tabs button[data-tab=flame]")
        page.wait_for_function("window.drawnLabels.length > 0")
        assert shortened_labels(page)
        screenshot(page, "flame-short-names")
        # The flat profile shows the qualname, the module on hover.
        page.click("#tabs button[data-tab=profile]")
        cell = page.locator("#flat-table td.name .fn", has_text="recursively")
        assert cell.get_attribute("title") == "__main__:" + LONG_NAME
        assert cell.inner_text() == TTmiddle(LONG_NAME, 60)
        assert page.errors == []


# Each table shown of the profile tab and the selection: its columns, and by how many pixels the first box around it
# that clips (overflow not visible) is narrower than what it holds.
CLIPPED = """() => [...document.querySelectorAll('#calltree-table, #flat-table, #sandwich-table, #range-table')]
                  .filter(t => t.offsetParent !== null).map(t => {
    let past = 0;
    for (let e = t.parentElement; e && e !== document.body; e = e.parentElement)
        if (getComputedStyle(e).overflowX !== 'visible') { past = e.scrollWidth - e.clientWidth; break; }
    return [t.id, t.querySelectorAll('thead th').length, past];
})"""


@QUALIFIED
def test_every_column_of_the_profile_shows_at_1280_by_720(browser, long_names_url):
    """No column is clipped at 1280×720: the name gives way (cut in the middle, whole on hover), the numbers and
    the location stay in view, in the call tree, the flat profile, callers/callees and a range's summary."""
    with page_of(browser, long_names_url, size=(1280, 720)) as page:
        page.wait_for_function(READY)
        page.click("#tabs button[data-tab=profile]")
        page.wait_for_selector("#flat-table")
        page.locator("#calltree-table tbody tr", has_text="most_of_the_run").first.click()  # open the tree
        page.locator("#flat-table tbody tr", has=page.locator(".fn", has_text="recursively")).click()
        page.wait_for_selector("#sandwich-table")
        screenshot(page, "profile-columns-1280x720")
        tables = page.evaluate(CLIPPED)
        page.click("#tabs button[data-tab=timeline]")
        box = page.locator("#tl-scroll").bounding_box()
        page.mouse.move(box["x"] + 300, box["y"] + 5)
        page.mouse.down()
        page.mouse.move(box["x"] + 1100, box["y"] + 5, steps=4)
        page.mouse.up()
        page.wait_for_selector("#range-table")
        tables += page.evaluate(CLIPPED)
        assert sorted(table[0] for table in tables) == ["calltree-table", "flat-table", "range-table", "sandwich-table"]
        assert all(heads >= 4 and past <= 0 for _, heads, past in tables), tables
        screenshot(page, "selection-columns-1280x720")
        assert page.errors == []

"""The viewer's Profile in Chromium: callers and callees of a function with the times the index gives, one
function selected everywhere, pages instead of caps, styled hovers, and a tooltip that follows the zoom."""

import collections
import re

import pytest
from tracetop.viewer.server import ViewerServer

from browser import page_of, screenshot
from helpers import PROGRAMS, reader, tracetop

READY = "window.tracetopViewer && window.tracetopViewer.ready()"
NO_PARENT = 0xFFFFFFFF


def serve(where, program, *arguments):
    completed = tracetop("--output", "exp", PROGRAMS / program, *arguments, cwd=where)
    assert completed.returncode == 0, completed.stderr
    index = reader.Index(str(where / "exp"))
    return ViewerServer(str(where / "exp"), index).start(), index


@pytest.fixture(scope="module")
def sandwich(tmp_path_factory):
    server, index = serve(tmp_path_factory.mktemp("sandwich"), "sandwich.py")
    yield server.url, index
    server.close()


def whole_tree(index):
    """The nodes of the whole run's call tree, merged over threads: (parent, region name, visits, inclusive)."""
    data = index.tree(index.begin_ns, index.end_ns + 1, list(range(len(index.lanes))))
    count = int.from_bytes(data[:4], "little")
    import struct

    names = [region["name"] for region in index.regions]
    return [
        (parent, names[region], visits, inclusive)
        for parent, region, visits, inclusive, _ in struct.iter_unpack("IIddd", data[8 : 8 + 32 * count])
    ]


def expected_sandwich(nodes, name):
    """Callers and callees of `name` (no recursion in sandwich.py: every node counts): {region: (visits, ns)}."""
    callers, callees = collections.defaultdict(lambda: [0, 0.0]), collections.defaultdict(lambda: [0, 0.0])
    for parent, region, visits, inclusive in nodes:
        if region == name and parent != NO_PARENT:
            row = callers[nodes[parent][1]]
        elif parent != NO_PARENT and nodes[parent][1] == name:
            row = callees[region]
        else:
            continue
        row[0] += visits
        row[1] += inclusive
    return dict(callers), dict(callees)


def sandwich_rows(page, kind):
    return {
        row["name"]: (row["visits"], row["ns"])
        for row in page.evaluate(f"""
        [...document.querySelectorAll('#sandwich-table tr.{kind}')].map(tr => ({{
            name: tr.querySelector('.fn').title, visits: +tr.cells[3].textContent.replace(/,/g, ''),
            ns: +tr.dataset.ns}}))""")
    }


def test_callers_and_callees_with_the_right_times(browser, sandwich):
    url, index = sandwich
    callers, callees = expected_sandwich(whole_tree(index), "__main__:leaf")
    assert set(callers) == {"__main__:a", "__main__:b", "__main__:other"}
    assert {"__main__:helper", "time.sleep"} <= set(callees) or {"__main__:helper", "time:sleep"} <= set(callees)
    with page_of(browser, url) as page:
        page.wait_for_function(READY)
        page.click("#tabs button[data-tab=profile]")
        page.wait_for_selector("#flat-table")
        page.locator("#flat-table tbody tr", has=page.locator(".fn", has_text=re.compile(r"^leaf$"))).click()
        page.wait_for_selector("#sandwich-table")
        shown_callers, shown_callees = sandwich_rows(page, "caller"), sandwich_rows(page, "callee")
        assert shown_callers.keys() == callers.keys() and shown_callees.keys() == callees.keys()
        for shown, expected in ((shown_callers, callers), (shown_callees, callees)):
            for name, (visits, ns) in expected.items():
                assert shown[name][0] == visits and shown[name][1] == pytest.approx(ns, rel=1e-9), name
        assert shown_callers["__main__:a"][0] == 3 and shown_callers["__main__:b"][0] == 1
        self_row = page.locator("#sandwich-table tr.self")
        assert self_row.locator(".fn").inner_text() == "leaf" and self_row.locator("td").nth(3).inner_text() == "5"
        # Selected in the profile, the function is selected everywhere: its flat row, the flame graph, the timeline.
        assert page.locator("#flat-table tr.match .fn").all_inner_texts() == ["leaf"]
        assert page.input_value("#search") == "__main__:leaf"
        screenshot(page, "profile-sandwich")
        page.click("#tabs button[data-tab=timeline]")
        page.wait_for_function("tracetopViewer.highlighted() === 5")
        screenshot(page, "timeline-selected-function")
        page.click("#tabs button[data-tab=flame]")
        page.wait_for_function("document.getElementById('flame').height > 60")
        frame = page.evaluate("tracetopViewer.findFrame('__main__:b', 0)")
        page.mouse.move(frame["x"], frame["y"])  # the hover is styled, with the module
        tip = page.locator("#flame-tip")
        tip.wait_for(state="visible")
        assert tip.inner_text().splitlines()[:2] == ["b", "__main__:b"]
        screenshot(page, "flame-hover")
        page.mouse.click(frame["x"], frame["y"])  # a click in the flame graph selects too
        assert page.input_value("#search") == "__main__:b"
        page.click("#tabs button[data-tab=profile]")
        page.wait_for_selector("#sandwich-table tr.self")
        assert page.locator("#sandwich-table tr.self .fn").inner_text() == "b"
        assert page.errors == []


def test_a_call_on_the_timeline_and_a_call_path_select_their_function_everywhere(browser, sandwich):
    """From a call's details on the timeline: "Callers and callees" opens the profile on its function, selected in
    the flat profile; a name in the call tree selects its function too, and the timeline highlights its calls."""
    url, _ = sandwich
    with page_of(browser, url) as page:
        page.wait_for_function(READY)
        bar = page.evaluate("tracetopViewer.findBar('__main__:other', 6)")
        page.mouse.click(bar["x"], bar["y"])
        page.wait_for_selector("#details-body button[data-action=sandwich]")
        page.click("#details-body button[data-action=sandwich]")
        page.wait_for_selector("#sandwich-table tr.self")
        assert page.locator("#sandwich-table tr.self .fn").inner_text() == "other"
        assert [row.split("\t")[0] for row in page.locator("#sandwich-table tr.caller").all_inner_texts()] == ["b"]
        assert [row.split("\t")[0] for row in page.locator("#sandwich-table tr.callee").all_inner_texts()] == ["leaf"]
        assert page.locator("#flat-table tr.match .fn").all_inner_texts() == ["other"]
        # A name in the call tree: a() selected, its three calls of leaf() its callees' visits.
        page.locator("#calltree-table td.name .fn", has_text=re.compile(r"^a$")).first.click()
        page.wait_for_function("document.querySelector('#sandwich-table tr.self .fn').textContent === 'a'")
        callee = page.locator("#sandwich-table tr.callee").first.inner_text().split("\t")
        assert callee[0] == "leaf" and callee[3] == "3"
        assert page.input_value("#search") == "__main__:a"
        page.click("#tabs button[data-tab=timeline]")
        page.wait_for_function("tracetopViewer.highlighted() === 1")
        assert page.errors == []


def test_the_profile_is_computed_before_its_tab_is_opened(browser, sandwich):
    url, _ = sandwich
    with page_of(browser, url) as page:
        page.wait_for_function(READY)
        page.wait_for_function("tracetopViewer.state.tree !== null")  # asked for after the first picture
        page.click("#tabs button[data-tab=profile]")
        assert page.locator("#flat-table").count() == 1  # shown at once, no "computing…"
        assert page.errors == []


def test_pages_instead_of_caps(browser, tmp_path):
    server, _ = serve(tmp_path, "many_functions.py", "3100")
    try:
        with page_of(browser, server.url) as page:
            page.wait_for_function(READY)
            page.click("#tabs button[data-tab=profile]")
            page.wait_for_selector("#flat-table")
            flat = page.locator("#flat .pager").inner_text()
            total = int(re.search(r"of ([\d,]+) region", flat).group(1).replace(",", ""))
            assert flat.startswith("1,000 of ") and total > 3100
            assert page.locator("#flat-table tbody tr").count() == 1000
            page.click("#flat-more")
            assert page.locator("#flat-table tbody tr").count() == 2000
            # The call tree: <module> opens on its 3,100 calls, of which the first page shows part.
            tree = page.locator("#calltree .pager").inner_text()
            assert tree.startswith("3,000 of "), tree
            page.click("#tree-more")
            assert page.locator("#calltree .pager").count() == 0
            assert page.locator("#calltree-table tbody tr").count() > 3100
            screenshot(page, "profile-pages")
            assert page.errors == []
    finally:
        server.close()


def test_the_tooltip_follows_a_zoom_under_a_still_mouse(browser, sandwich):
    url, _ = sandwich
    with page_of(browser, url) as page:
        page.wait_for_function(READY)
        box = page.locator("#tl-scroll").bounding_box()
        bar = page.evaluate("tracetopViewer.findBar('__main__:b', 6)")
        page.mouse.move(bar["x"], bar["y"])
        page.wait_for_selector("#tooltip:visible")
        assert page.inner_text("#tooltip").splitlines()[0] == "b"
        # The view moves under the still mouse (as a wheel zoom or a key moves it): a() comes where b() was.
        page.evaluate(
            """([x]) => {
            const v = tracetopViewer, s = v.state.spans, canvas = document.getElementById('tl-canvas');
            const box = canvas.getBoundingClientRect(), plot = canvas.clientWidth - 170;
            const at = (x - box.left - 170) / plot, width = 2e6;
            for (let i = 0; i < s.count; i++) {
                if (v.state.meta.regions[s.region[i]].name !== '__main__:a' || s.calls[i] !== 1) continue;
                const t0 = (s.start[i] + s.end[i]) / 2 - at * width;
                v.setView(t0, t0 + width);
            }
        }""",
            [bar["x"]],
        )
        page.wait_for_function(
            "!document.getElementById('tooltip').hidden && "
            "document.getElementById('tooltip').textContent.startsWith('a')"
        )
        assert page.inner_text("#tooltip").splitlines()[0] == "a"
        page.mouse.wheel(0, -300)  # a zoom at the mouse keeps a() under it, and the tooltip on it
        page.wait_for_timeout(100)
        assert page.inner_text("#tooltip").splitlines()[0] == "a"
        text = page.inner_text("#view-range")
        assert not re.search(r"(^|\s)-0(\.0+)? ", text), text
        assert box["height"] > 0 and page.errors == []

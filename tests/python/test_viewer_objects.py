"""The viewer's objects views in Chromium, on a real run with --objects (programs/objects_viewer.py: exactly 100,000
Points made in make_points and 50,000 lists in make_lists): the tracks of the objects alive per type, the flame
graph by objects and bytes created, the object columns of the profile and of the range summary."""

import re
import struct

import pytest
from tracetop.viewer.server import ViewerServer

from browser import page_of, screenshot
from helpers import PROGRAMS, needs_object_counting, reader, streams, tracetop

pytestmark = needs_object_counting

READY = "window.tracetopViewer && window.tracetopViewer.ready()"
POINT = "__main__:Point"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    where = tmp_path_factory.mktemp("objects_viewer")
    completed = tracetop("run", "--objects", "--output", "exp", PROGRAMS / "objects_viewer.py", cwd=where)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "points and lists made and freed\n"
    index = reader.Index(str(where / "exp"))
    server = ViewerServer(str(where / "exp"), index).start()
    yield server.url, index, where / "exp"
    server.close()


def calls(index, name):
    """(start, end) of every call of `name` in the first lane, in time order."""
    regions = [region["name"] for region in index.regions]
    found = []
    for depth in range(index.lanes[0]["depths"]):
        for start, end, region, _ in struct.iter_unpack("QQII", index.raw_spans(0, depth, 0)):
            if regions[region] == name:
                found.append((start, end))
    return sorted(found)


def recorded(experiment, type_name, t0, t1, made_in=None):
    """The objects of `type_name` (made in region `made_in`, or anywhere) created and destroyed in [t0, t1) as the
    trace's records say, summed over the streams."""
    created = destroyed = 0
    for *_, events, _state, _problem in streams(experiment):
        for event in events:
            if event[0] == "objects" and t0 <= event[1] < t1 and event[3] == type_name and made_in in (None, event[2]):
                created, destroyed = created + event[5], destroyed + event[6]
    return created, destroyed


def recorded_alive(experiment, type_name, time_ns, made_in=None):
    """Alive at time_ns: created less destroyed up to then."""
    created, destroyed = recorded(experiment, type_name, 0, time_ns + 1, made_in)
    return created - destroyed


def size_of(index, type_name):
    return next(track["size"] for track in index.tracks if track["kind"] == "objects" and track["name"] == type_name)


def fmt_bytes(n):
    """As objects.js says a number of bytes."""
    units = ["B", "KiB", "MiB", "GiB"]
    i = 0
    while n >= 1024 and i < len(units) - 1:
        n /= 1024
        i += 1
    if not i:
        return f"{n} B"
    return f"{n:.{2 if n < 10 else 1 if n < 100 else 0}f} {units[i]}"  # three digits, as toPrecision(3)


def alive_shown(page, type_name, time_ns):
    """The objects alive the track of `type_name` shows at time_ns, read from its tooltip."""
    point = page.evaluate(f"tracetopViewer.objects.pointOf({type_name!r}, {time_ns})")
    page.mouse.move(point["x"], point["y"])
    page.wait_for_function(
        f"!document.getElementById('tooltip').hidden && "
        f"document.getElementById('tooltip').innerText.startsWith({type_name!r})"
    )
    text = page.inner_text("#tooltip")
    return int(re.search(r"^([\d,]+) alive", text, re.M).group(1).replace(",", ""))


def test_tracks_of_the_objects_alive(browser, run):
    url, index, experiment = run
    holds = calls(index, "__main__:hold")
    assert len(holds) == 4
    # Two thirds into each wait, the counts made before it are recorded (every 100 ms while objects are made).
    during = [start + (end - start) * 2 // 3 for start, end in holds]
    with page_of(browser, url) as page:
        page.wait_for_function(READY)
        page.wait_for_selector(".objects-label[data-type='__main__:Point']")
        # The types most alive come first, each labelled with its most alive.
        labels = page.eval_on_selector_all(".objects-label", "divs => divs.map(d => [d.dataset.type, d.innerText])")
        shown = dict(labels)
        assert shown[POINT].split() == ["Point", "100,000"]
        assert "list" in shown and int(shown["list"].split()[1].replace(",", "")) >= 50_000
        assert page.inner_text(".objects-head").startswith("▾")
        page.wait_for_function("tracetopViewer.state.spans !== null")
        assert alive_shown(page, POINT, during[0]) == 100_000
        assert alive_shown(page, POINT, during[1]) == 100_000
        assert alive_shown(page, POINT, during[2]) == 0
        # Lists: those of make_lists, alive during the second and third waits, and the few the interpreter makes.
        for t, made in zip(during, [0, 50_000, 50_000, 0]):
            shown = alive_shown(page, "list", t)
            assert shown == recorded_alive(experiment, "list", t)
            assert recorded_alive(experiment, "list", t, "__main__:make_lists") == made
            assert shown - made == recorded_alive(experiment, "list", t) - made < 20
        alive_shown(page, POINT, during[0])
        screenshot(page, "objects-timeline")
        # Folded, the tracks give their room back.
        page.click(".objects-head button.fold")
        assert page.locator(".objects-label").count() == 0
        page.click(".objects-head button.fold")
        assert page.locator(".objects-label").count() >= 2
        assert page.errors == []


def flame_tip(page, name):
    frame = page.evaluate(f"tracetopViewer.findFrame({name!r}, 0)")
    assert frame, name
    page.mouse.move(frame["x"], frame["y"])
    tip = page.locator("#flame-tip")
    tip.wait_for(state="visible")
    return tip.inner_text()


def choose_type(page, type_name):
    page.select_option("#objects-type", type_name)
    page.wait_for_function(
        f"tracetopViewer.state.tree && tracetopViewer.state.tree.objects && "
        f"tracetopViewer.state.tree.objects.type === {type_name!r}"
    )


def test_allocations_flame_graph(browser, run):
    url, index, experiment = run
    with page_of(browser, url) as page:
        page.wait_for_function(READY)
        page.click("#tabs button[data-tab=flame]")
        page.wait_for_function("document.getElementById('flame').height > 60")
        page.select_option("#flame-by", "objects")
        choose_type(page, POINT)
        page.wait_for_timeout(200)
        lines = flame_tip(page, "__main__:make_points").splitlines()
        assert lines[:3] == ["make_points", "__main__:make_points", "100,000 __main__:Point objects created (100.0%)"]
        assert lines[3].startswith("by the function itself: 100,000 (") and lines[3].endswith(
            "100,000 of them destroyed"
        )
        assert page.inner_text("#objects-note") == "100,000 objects created in these call paths"
        # No other function made a Point: it has no frame.
        assert page.evaluate("tracetopViewer.findFrame('__main__:make_lists', 0)") is None
        screenshot(page, "objects-flame")
        choose_type(page, "list")
        page.wait_for_timeout(200)
        assert flame_tip(page, "__main__:make_lists").splitlines()[2].startswith("50,000 list objects created")
        page.select_option("#flame-by", "bytes")
        choose_type(page, POINT)
        page.wait_for_timeout(200)
        assert (
            flame_tip(page, "__main__:make_points").splitlines()[2]
            == f"{fmt_bytes(100_000 * size_of(index, POINT))} created in __main__:Point objects (100.0%)"
        )
        # Back to time: the widths are time again.
        page.select_option("#flame-by", "time")
        assert "Inclusive" in flame_tip(page, "__main__:make_points")
        assert page.errors == []


def columns(page, table, name):
    """Created, destroyed and bytes of the row of function `name` in a table of the profile."""
    heads = page.eval_on_selector_all(f"#{table} th", "ths => ths.map(th => th.textContent.replace(/ [▼▲]$/, ''))")
    row = page.locator(f"#{table} tbody tr", has=page.locator(".fn", has_text=re.compile(f"^{name}$"))).first
    cells = row.locator("td").all_inner_texts()
    return [cells[heads.index(column)].lstrip("≈") for column in ("Created", "Destroyed", "Bytes")]


def test_object_columns_in_the_profile(browser, run):
    url, index, experiment = run
    point_bytes = fmt_bytes(100_000 * size_of(index, POINT))
    with page_of(browser, url) as page:
        page.wait_for_function(READY)
        page.click("#tabs button[data-tab=profile]")
        page.wait_for_selector("#flat-table")
        choose_type(page, POINT)
        page.wait_for_selector("#flat-table th:text('Created')")
        assert columns(page, "flat-table", "make_points") == ["100,000", "100,000", point_bytes]
        assert columns(page, "calltree-table", "make_points") == ["100,000", "100,000", point_bytes]
        assert columns(page, "flat-table", "make_lists") == ["0", "0", "0 B"]
        # Sorted by objects created, the maker comes first.
        page.click("#flat-table th:text('Created')")
        assert page.locator("#flat-table tbody tr .fn").first.inner_text() == "make_points"
        screenshot(page, "objects-profile")
        choose_type(page, "list")
        assert columns(page, "flat-table", "make_lists")[:2] == ["50,000", "50,000"]
        # All types: the function made more than its Points (what tracetop's own measuring makes there too).
        choose_type(page, "")
        assert int(columns(page, "flat-table", "make_points")[0].replace(",", "")) >= 100_000
        assert page.errors == []


def test_objects_of_a_selected_range(browser, run):
    url, index, experiment = run
    (made, _), (held, held_end) = calls(index, "__main__:make_lists")[0], calls(index, "__main__:hold")[1]
    with page_of(browser, url) as page:
        page.wait_for_function(READY)
        # The range from the start of make_lists to the middle of the wait after it.
        page.evaluate(f"tracetopViewer.setView({made - (held_end - made) // 4}, {held_end + (held_end - made) // 4})")
        page.wait_for_timeout(300)
        start = page.evaluate(f"tracetopViewer.objects.pointOf('list', {made})")
        end = page.evaluate(f"tracetopViewer.objects.pointOf('list', {(held + held_end) // 2})")
        ruler = page.locator("#tl-scroll").bounding_box()["y"] + 10
        page.mouse.move(start["x"], ruler)
        page.mouse.down()
        page.mouse.move(end["x"], ruler, steps=5)
        page.mouse.up()
        page.wait_for_selector("#range-objects")
        types = {
            row[0]: row[1:]
            for row in page.eval_on_selector_all(
                "#range-objects tbody tr", "trs => trs.map(tr => [...tr.cells].map(td => td.textContent))"
            )
        }
        t0, t1 = page.evaluate("tracetopViewer.state.selection")
        created, destroyed = recorded(experiment, "list", t0, t1)
        assert types["list"][:2] == ["50,000", f"{destroyed:,}"] and created == 50_000
        assert int(columns(page, "range-table", "make_lists")[0].replace(",", "")) >= 50_000
        screenshot(page, "objects-range")
        assert page.errors == []


def test_a_function_on_two_call_paths_shares_its_objects_by_time(browser, tmp_path):
    completed = tracetop("run", "--objects", "--output", "exp", PROGRAMS / "objects_paths.py", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    index = reader.Index(str(tmp_path / "exp"))
    lanes = list(range(len(index.lanes)))
    tree = index.tree(index.begin_ns, index.end_ns + 1, lanes)
    count = int.from_bytes(tree[:4], "little")
    nodes = list(struct.iter_unpack("IIddd", tree[8 : 8 + 32 * count]))
    answer = index.tree_objects(index.begin_ns, index.end_ns + 1, lanes, "__main__:Item")
    assert int.from_bytes(answer[:4], "little") == count
    created = struct.unpack_from(f"{count}d", answer, 32)
    paths = struct.unpack_from(f"{count}I", answer, 32 + 24 * count)
    names = [region["name"] for region in index.regions]
    make = [i for i, node in enumerate(nodes) if names[node[1]] == "__main__:make"]
    assert sorted(names[nodes[nodes[i][0]][1]] for i in make) == ["__main__:early", "__main__:late"]
    # The 40,000 Items, shared by make()'s exclusive time on each path: every one counted once.
    exclusive = sum(nodes[i][4] for i in make)
    for i in make:
        assert created[i] == pytest.approx(40_000 * nodes[i][4] / exclusive, rel=1e-9) and paths[i] == 2
    assert sum(created[i] for i in make) == pytest.approx(40_000, rel=1e-12)
    assert sum(created) == pytest.approx(40_000, rel=1e-12)
    server = ViewerServer(str(tmp_path / "exp"), index).start()
    try:
        with page_of(browser, server.url) as page:
            page.wait_for_function(READY)
            page.click("#tabs button[data-tab=profile]")
            page.wait_for_selector("#flat-table")
            choose_type(page, "__main__:Item")
            page.wait_for_selector("#flat-table th:text('Created')")
            # The flat profile has make()'s own count; each of its call paths a share, marked as one.
            assert columns(page, "flat-table", "make")[0] == "40,000"
            makes = page.locator("#calltree-table tbody tr", has=page.locator(".fn", has_text=re.compile("^make$")))
            if makes.count() == 0:  # the heaviest path opens by itself on a long enough run
                page.locator(
                    "#calltree-table tbody tr", has=page.locator(".fn", has_text=re.compile("^early$"))
                ).locator(".toggle").click()
            assert makes.first.locator("td.objects .shared").count() == 3
            assert page.locator("#calltree-table td.objects .shared").count() == 3 * makes.count()  # none at 0
            screenshot(page, "objects-shared-paths")
            assert page.errors == []
    finally:
        server.close()

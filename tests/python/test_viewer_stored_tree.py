"""The whole run's call tree is kept in view.idx when it is built: the profile tab shows it, equal to what
`tracetop summary` says, without a span read (the trace's chunks, where the index reads every call, are damaged
here, and the browser's requests for spans refused); a range is still computed from the spans."""

import os
import struct

import pytest
from tracetop.viewer.server import ViewerServer

from browser import page_of, screenshot
from helpers import PROGRAMS, reader, tracetop
from trace_files import CHUNK_HEADER, record_chunks


def tree_visits(index, t0, t1):
    data = index.tree(t0, t1, list(range(len(index.lanes))))
    (count,) = struct.unpack_from("I", data)
    return sum(visits for _, _, visits, _, _ in struct.iter_unpack("IIddd", data[8 : 8 + 32 * count]))


@pytest.fixture(scope="module")
def damaged(tmp_path_factory):
    """An experiment of three threads whose trace has every chunk damaged after its view.idx was made (level 0, every
    call, is read from them: lod_file.h), its files' names, sizes and times kept (the index is still theirs)."""
    where = tmp_path_factory.mktemp("stored_tree")
    completed = tracetop("--output", "exp", PROGRAMS / "viewer_demo.py", "3000", cwd=where)
    assert completed.returncode == 0, completed.stderr
    experiment = where / "exp"
    index = reader.Index(str(experiment))
    calls = sum(lane["calls"] for lane in index.lanes)
    whole = tree_visits(index, index.begin_ns, index.end_ns + 1)
    inner = tree_visits(index, index.begin_ns + 1, index.end_ns + 1)  # a range: from the spans
    assert whole == calls and inner == calls
    del index
    summary = {
        region["name"]: (region["visits"], region["exclusive_ns"], region["inclusive_ns"])
        for region in reader.profile(str(experiment))["regions"]
    }  # (from the trace, before the damage)
    for path in (experiment / "trace").rglob("[0-9]*.tts"):
        times = path.stat()
        data = bytearray(path.read_bytes())
        for chunk in record_chunks(path):
            data[chunk.offset + CHUNK_HEADER + chunk.stored // 2] ^= 0xFF
        path.write_bytes(bytes(data))
        os.utime(path, ns=(times.st_atime_ns, times.st_mtime_ns))
    index = reader.Index(str(experiment))
    assert not index.built  # the damage is where loading does not look
    # The spans are gone for a range; the whole run's tree is the index's own.
    assert tree_visits(index, index.begin_ns + 1, index.end_ns + 1) < calls / 2
    assert tree_visits(index, index.begin_ns, index.end_ns + 1) == calls
    server = ViewerServer(str(experiment), index).start()
    yield server, summary
    server.close()


def test_profile_tab_shows_the_stored_tree_without_spans(browser, damaged):
    server, summary = damaged
    asked = []
    with page_of(browser) as page:
        page.on("request", lambda request: asked.append(request.url.split("/api/")[-1].split("?")[0]))
        page.route("**/api/spans*", lambda route: route.abort())
        page.goto(server.url)
        page.wait_for_function("window.tracetopViewer && window.tracetopViewer.state.meta")
        page.click("#tabs button[data-tab=profile]")
        page.wait_for_selector("#flat-table")
        shown = page.evaluate("""() => {
            const s = tracetopViewer.state, rows = {};
            for (const r of tracetopViewer.calltree.flatProfile(s.tree, s.meta.regions))
                rows[r.name] = [r.visits, r.exclusive, r.inclusive];
            return rows;
        }""")
        visits = page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('#flat-table tbody tr')]
            .map((tr) => [tr.querySelector('.fn').title, +tr.cells[4].textContent.replace(/,/g, '')]))""")
        no_spans = page.evaluate("tracetopViewer.state.spans === null")
        screenshot(page, "profile-stored-tree")
    assert shown.keys() == summary.keys()
    # The index sums each call's ns; the profile ticks per call path, converted once (profile.h): a ns apart
    # per call at most (exclusive: per call of the region and of its callees, all calls at most).
    calls = sum(count for count, _, _ in summary.values())
    for name, (count, exclusive, inclusive) in summary.items():
        assert shown[name][0] == count, name
        assert abs(shown[name][1] - exclusive) <= calls and abs(shown[name][2] - inclusive) <= count, name
    assert visits and all(visits[name] == summary[name][0] for name in visits)
    assert "tree" in asked and "spans" in asked and no_spans, asked  # the timeline asked for spans and got none

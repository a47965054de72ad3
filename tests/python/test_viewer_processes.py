"""The viewer on an experiment of several processes: one timeline, each process's lanes a group under a header
naming the process, in Chromium."""

from tracetop.viewer.server import ViewerServer

from browser import page_of, screenshot
from helpers import PROGRAMS, reader, tracetop

READY = "window.tracetopViewer && window.tracetopViewer.ready()"


def test_a_lane_group_per_process(browser, tmp_path):
    completed = tracetop("--output", "exp", PROGRAMS / "forking.py", "thread", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    trace = reader.Trace(str(tmp_path / "exp"))
    parent, child = (process["pid"] for process in trace.processes)
    server = ViewerServer(str(tmp_path / "exp"), reader.Index(str(tmp_path / "exp"))).start()
    try:
        with page_of(browser, server.url) as page:
            page.wait_for_function(READY)
            headers = page.locator(".process-label .name").all_inner_texts()
            program = str(PROGRAMS / "forking.py")
            assert headers == [f"process {parent} · {program}", f"process {child} · {program}"]
            # The parent's threads under its header, the child's thread (the forking one, continued) under its.
            tops = page.evaluate(
                "[...document.querySelectorAll('#tl-labels > div')].map("
                "d => [d.className, d.querySelector('.name').textContent, +d.dataset.top])"
            )
            order = [
                text.split(" ")[0] if kind == "lane-label" else "header"
                for kind, text, _ in sorted(tops, key=lambda item: item[2])
            ]
            assert order == ["header", "MainThread", "forker", "header", "forker"]
            screenshot(page, "timeline-processes")
            # Folded, the parent's group is its header alone: the child's header moves up.
            child_top = page.evaluate("tracetopViewer.state.layout.processes[1].top")
            page.locator(".process-label").first.locator("button.fold").click()
            lanes = page.evaluate("tracetopViewer.state.layout.lanes.map(l => !!l.hidden)")
            assert lanes == [True, True, False]
            assert page.evaluate("tracetopViewer.state.layout.processes[1].top") < child_top
            screenshot(page, "timeline-process-folded")
            assert page.errors == []
    finally:
        server.close()

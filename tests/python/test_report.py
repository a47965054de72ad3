"""`tracetop report`: one HTML file that opens in Chromium with the network off, shows the top regions of
`tracetop summary`, an overview timeline and a flame graph, and stays under 5 MB."""

import re
import sys

import pytest

from browser import LONG_NAME, RECORD_LABELS, TTmiddle, page_of, screenshot, shortened_labels
from helpers import PROGRAMS, tracetop, without_progress


def make_report(where, program, *arguments):
    assert tracetop("--output", "exp", PROGRAMS / program, *arguments, cwd=where).returncode == 0
    completed = tracetop("report", "exp", "-o", "report.html", cwd=where)
    assert completed.returncode == 0, completed.stderr
    assert re.fullmatch(
        r"tracetop: note: indexed exp in [\d.]+ s\ntracetop: report in report.html \([\d.]+ \w+\)\n",
        without_progress(completed.stderr),
    ), completed.stderr
    return where / "report.html"


def summary_top(where):
    """(region, excl %, visits) of the rows of the first table of `tracetop summary exp`."""
    text = tracetop("summary", "exp", cwd=where).stdout
    table = text.split("Top regions by exclusive time\n", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    return [(fields[4], fields[1], fields[3]) for fields in (line.split() for line in table)]


def open_offline(browser, path):  # noqa: F811
    """The page, opened with the network disabled and every request but the file itself refused and counted."""
    context = page_of(browser, bypass_csp=True, offline=True)
    page = context.__enter__()
    page.requests = []
    page.route(
        "**/*",
        lambda route: (
            page.requests.append(route.request.url),
            route.continue_() if route.request.url == path.as_uri() else route.abort(),
        ),
    )
    page.goto(path.as_uri())
    page.wait_for_selector("body[data-ready]")
    return context, page


def test_report_opens_offline_with_the_summarys_top_regions(browser, tmp_path):
    report = make_report(tmp_path, "workloads/threads.py", "20000")
    assert report.stat().st_size < 5_000_000
    context, page = open_offline(browser, report)
    try:
        assert page.requests == [report.as_uri()]
        rows = [row.split("\t") for row in page.locator("#top tbody tr").all_inner_texts()]
        names = page.locator("#top tbody tr td.name .fn").evaluate_all("cells => cells.map(c => c.title)")
        shown = [
            (name, percent, visits.replace(",", ""))
            for name, (_, excl, percent, incl, visits, where) in zip(names, rows)
        ]
        assert shown == summary_top(tmp_path)
        assert (
            shown[0][0] == "__main__:collatz_len" and rows[0][0] == "collatz_len"
        )  # the qualname, the module on hover
        for canvas in ("overview", "flame"):
            painted = page.evaluate(f"""() => {{
                const c = document.getElementById('{canvas}');
                const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
                let n = 0;
                for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
                return n / (c.width * c.height);
            }}""")
            assert painted > 0.1, canvas
        screenshot(page, "report-threads")
        assert page.errors == []
    finally:
        context.__exit__(None, None, None)


def test_report_of_a_trace_too_big_to_keep_whole_stays_under_5_mb(browser, tmp_path):
    report = make_report(tmp_path, "many_regions.py", "2500", "3000")
    size = report.stat().st_size
    # 7.5 MB of names in the call tree: the report halves its detail until it fits, so it keeps a good share
    # (where the halving stops depends on the run's times: 1.9 to 3.9 MB seen).
    assert 1_000_000 < size <= 5_000_000
    context, page = open_offline(browser, report)
    try:
        assert page.locator("#top tbody tr").count() == 25
        screenshot(page, "report-many-regions")
        assert page.errors == []
    finally:
        context.__exit__(None, None, None)


@pytest.mark.skipif(sys.version_info < (3, 11), reason="the long name is a qualified name: co_qualname is new in 3.11")
def test_report_shortens_a_narrow_boxs_name_in_the_middle_and_hovers_styled(browser, tmp_path):
    """A long name in a narrow box of the report's timeline and flame graph is its qualname cut in the middle, both
    ends kept; the table shows the qualname, the module on hover; the flame graph's hover is the page's own."""
    report = make_report(tmp_path, "long_names.py")
    with page_of(browser, offline=True) as page:
        page.add_init_script(RECORD_LABELS)
        page.goto(report.as_uri())
        page.wait_for_selector("body[data-ready]")
        labels = page.evaluate("window.drawnLabels")
        assert LONG_NAME not in labels and not any(label.startswith("__main__:") for label in labels)
        assert len(shortened_labels(page)) >= 2, [label for label in labels if "…" in label]  # timeline and flame
        cell = page.locator("#top td.name .fn", has_text="recursively")
        assert cell.get_attribute("title") == "__main__:" + LONG_NAME and cell.inner_text() == TTmiddle(LONG_NAME, 60)
        frame = page.evaluate("""() => {
            const c = document.getElementById('flame'), box = c.getBoundingClientRect();
            for (let y = 4; y < c.clientHeight; y += 6) for (let x = 4; x < c.clientWidth; x += 4) {
                c.dispatchEvent(new MouseEvent('mousemove', {clientX: box.left + x, clientY: box.top + y, bubbles: true}));
                const tip = document.getElementById('flame-tip');
                if (!tip.hidden && tip.textContent.includes('_recursively')) return [box.left + x, box.top + y];
            }
            return null;
        }""")
        assert frame, "no frame of the long name in the flame graph"
        page.mouse.move(*frame)
        tip = page.locator("#flame-tip")
        tip.wait_for(state="visible")
        lines = tip.inner_text().splitlines()
        assert lines[:2] == [LONG_NAME, "__main__:" + LONG_NAME] and re.match(
            r"Inclusive [\d.]+ ms \(\d+\.\d%\)", lines[2]
        )
        assert page.get_attribute("#flame", "title") in (None, "")  # not the browser's own hover
        screenshot(page, "report-short-names-and-hover")
        assert page.errors == []


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["report", "exp", "-o"], "argument -o/--output: expected one argument"),
        (["report"], "no experiment named and none in this directory"),
    ],
)
def test_report_usage_errors(tmp_path, arguments, message):
    completed = tracetop(*arguments, cwd=tmp_path)
    assert completed.returncode == 2 and message in completed.stderr and "Traceback" not in completed.stderr


def test_report_of_no_experiment_is_one_line(tmp_path):
    completed = tracetop("report", "missing", "-o", "r.html", cwd=tmp_path)
    assert completed.returncode == 2 and "Traceback" not in completed.stderr
    assert completed.stderr.startswith("tracetop: error: ") and len(completed.stderr.splitlines()) == 1
    assert not (tmp_path / "r.html").exists()

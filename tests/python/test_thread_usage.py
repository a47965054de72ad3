"""Each thread's CPU time and GIL share, sampled by tracetop's own thread: in summary and in the viewer's
activity band (Chromium)."""

import re

import pytest
from tracetop.viewer.server import ViewerServer

from browser import page_of
from helpers import PROGRAMS, _tracetop, python, reader, tracetop

CPU_THREADS = [f"cpu-{n}" for n in range(4)]
GIL_KNOWN = _tracetop.gil_unavailable() is None


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    where = tmp_path_factory.mktemp("threads")
    plain = python(PROGRAMS / "gil_threads.py", "1.5", cwd=where)
    completed = tracetop("--output", "exp", PROGRAMS / "gil_threads.py", "1.5", cwd=where)
    assert completed.returncode == plain.returncode == 0, completed.stderr
    assert completed.stdout == plain.stdout == "done\n"
    return where / "exp"


def summary_threads(experiment):
    """thread name -> (cpu %, GIL % or None) from summary's thread table."""
    text = tracetop("summary", "exp", cwd=experiment.parent).stdout
    table = text.split("\nThreads\n")[1].split("\n\n")[0].splitlines()
    assert re.split(r"\s{2,}", table[0].strip())[5:7] == ["cpu%", "GIL%"]
    rows = {}
    for line in table[1:]:
        _, name, _, _, _, cpu, gil, _ = re.split(r"\s{2,}", line.strip())
        rows[name] = (float(cpu), None if gil == "-" else float(gil))
    return rows


def test_usage_records_are_cumulative_and_sampled_often(experiment):
    [process] = reader.Trace(str(experiment)).processes
    for thread in process["threads"]:
        usage = thread["usage"]
        assert len(usage) >= 5, thread["name"]  # one every 100 ms, and one at the end
        for earlier, later in zip(usage, usage[1:]):
            assert all(b >= a for a, b in zip(earlier, later)), (thread["name"], earlier, later)
            assert later[3] <= later[2]


@pytest.mark.skipif(not GIL_KNOWN, reason="this Python does not tell who holds the GIL")
def test_summary_gives_cpu_and_gil_shares(experiment):
    rows = summary_threads(experiment)
    gil = [rows[name][1] for name in CPU_THREADS]
    # One thread holds the GIL at a time: the four shares of threads that ran together add up to at most 100%.
    assert sum(gil) <= 105, gil
    assert all(share >= 5 for share in gil), gil
    assert rows["sleeper"][0] < 5 and rows["sleeper"][1] < 5
    assert all(rows[name][0] > rows["sleeper"][0] for name in CPU_THREADS)
    # (MainThread's share is of its own life, which the CPU threads' is not: it imported and started them alone,
    # for as long as a loaded machine made that. Shares of different lives do not add up.)


def test_what_a_python_cannot_tell_is_said_not_guessed(tmp_path):
    completed = tracetop("--output", "exp", "-c", "import time; time.sleep(0.2)", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    rows = summary_threads(tmp_path / "exp")
    said = [line for line in completed.stderr.splitlines() if "GIL shares are not recorded" in line]
    manifest = (tmp_path / "exp" / "MANIFEST.md").read_text()
    if GIL_KNOWN:
        assert rows["MainThread"][1] is not None and not said and "not recorded: " not in manifest
    else:
        assert (
            rows["MainThread"][1] is None
            and len(said) == 1
            and f"not recorded: {said[0].split('note: ', 1)[1]}" in manifest
        )


@pytest.mark.skipif(not GIL_KNOWN, reason="this Python does not tell who holds the GIL")
def test_viewer_draws_an_activity_band_per_thread(browser, experiment):
    rows = summary_threads(experiment)
    server = ViewerServer(str(experiment), reader.Index(str(experiment))).start()
    try:
        with page_of(browser, server.url, size=(1400, 1800)) as page:  # every lane in view
            page.wait_for_function(
                "window.tracetopViewer && window.tracetopViewer.ready() && tracetopViewer.state.activity !== null"
            )
            page.wait_for_timeout(200)  # the draw that follows the activity's arrival
            shown = {name: page.evaluate(f"tracetopViewer.activity({name!r})") for name in rows}
            for name, (_, gil) in rows.items():
                assert abs(100 * shown[name]["gil"] - gil) < 0.1, name
            assert sum(shown[name]["gil"] for name in CPU_THREADS) <= 1.05
            assert shown["sleeper"]["cpu"] < 0.05
            dark = {name: band_pixels(page, shown[name]["band"]) for name in rows}
            # A pixel row of the band is drawn in the GIL's colour where the thread held the GIL for a sixth of
            # the interval or more: on a loaded machine one of the four may seldom get that much, but the four
            # shared it all, and each interval's shares (summing to one) lose less than a row each.
            assert all(dark[name] > 0 for name in CPU_THREADS), dark
            assert sum(dark[name] for name in CPU_THREADS) > 0.2, dark
            # The sleeper holds the GIL only as it wakes (longer where the machine makes it wait then).
            assert dark["sleeper"] < 0.05, dark
            assert page.errors == []
    finally:
        server.close()


def band_pixels(page, band):
    """The share of a band's pixels drawn in the GIL's colour."""
    return page.evaluate(
        """(b) => {
        const c = document.getElementById('tl-canvas'), r = window.devicePixelRatio || 1;
        const x0 = Math.round(b.x0 * r), x1 = Math.round(b.x1 * r), y0 = Math.round(b.y * r);
        const w = Math.max(1, x1 - x0), h = Math.max(1, Math.round(b.height * r));
        const d = c.getContext('2d').getImageData(x0, y0, w, h).data;
        let n = 0;
        for (let i = 0; i < d.length; i += 4) if (d[i] === 0x2e && d[i + 1] === 0x7d && d[i + 2] === 0x32) n++;
        return n / (w * h);
    }""",
        band,
    )

"""The viewer draws each garbage collection inside the call it interrupted (Chromium): programs/gc_pause.py's
forced full collection, a bar one row below its __main__:work, within it, as long as the pause the program
measured; hovering it names it."""

import re

from tracetop.viewer.server import ViewerServer

from browser import page_of, screenshot
from helpers import PROGRAMS, reader, tracetop

READY = "window.tracetopViewer && window.tracetopViewer.ready() && !tracetopViewer.state.inflight.spans"

# Every collection drawn, with the bar drawn one row above it on its lane that encloses it (none: null). Coarse
# levels keep their times to an eighth of their grain, rounded outward (lod_build.c), so "encloses" is to a pixel
# (the view is at most 1400 px wide): a collection that starts in its call's first quantum may be drawn from the
# quantum's start while its call, after a sibling, starts where the sibling ends.
DRAWN = """(() => {
  const s = tracetopViewer.state.spans, regions = tracetopViewer.state.meta.regions, found = [];
  const pixel = (tracetopViewer.state.t1 - tracetopViewer.state.t0) / 1400;
  for (let i = 0; i < s.count; i++) {
    if (!regions[s.region[i]].name.startsWith('gc:collection') || s.calls[i] !== 1) continue;
    let parent = null;
    for (let j = 0; j < s.count; j++)
      if (s.lane[j] === s.lane[i] && s.depth[j] === s.depth[i] - 1 && s.start[j] <= s.start[i] + pixel && s.end[j] + pixel >= s.end[i])
        parent = regions[s.region[j]].name;
    found.push({name: regions[s.region[i]].name, ns: s.end[i] - s.start[i], start: s.start[i], parent});
  }
  return found;
})()"""


def test_a_collection_is_drawn_inside_the_call_it_interrupted(browser, tmp_path):
    completed = tracetop("--output", "exp", "--no-c-calls", PROGRAMS / "gc_pause.py", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    pause = int(re.fullmatch(r"pause (\d+) ns with \d+ objects\n", completed.stdout).group(1))
    server = ViewerServer(str(tmp_path / "exp"), reader.Index(str(tmp_path / "exp"))).start()
    try:
        with page_of(browser, server.url, size=(1400, 900)) as page:
            page.wait_for_function(READY)
            drawn = page.evaluate(DRAWN)
            assert drawn and all(c["parent"] for c in drawn), drawn
            # The forced one: the last full collection as long as the program measured (or a little less).
            forced = [c for c in drawn if c["name"] == "gc:collection(gen2)" and 0.9 * pause <= c["ns"] <= pause]
            assert forced and forced[-1]["parent"] == "__main__:work", drawn
            # Zoomed into it (a collection the program started just before may end close to its start), its
            # bar fills the view and hovering it names it and says how long it took.
            start, length = forced[-1]["start"], forced[-1]["ns"]
            page.evaluate(f"tracetopViewer.setView({start + length // 5}, {start + 4 * length // 5})")
            page.wait_for_function(READY)
            bar = page.evaluate("tracetopViewer.findBar('gc:collection(gen2)', 6)")
            assert bar, page.evaluate(DRAWN)
            page.mouse.move(bar["x"], bar["y"])
            tooltip = page.locator("#tooltip")
            tooltip.wait_for(state="visible")
            page.wait_for_function("!document.getElementById('tooltip').textContent.includes('…')")
            text = tooltip.inner_text()
            assert text.splitlines()[0] == "collection(gen2)" and "Module: gc" in text
            # In ms, or in s where a loaded machine stretched the collection past a second: 3 decimals shown.
            shown = re.search(r"Duration: ([\d.]+) (ms|s)\n", text)
            assert shown, text
            shown_ns = float(shown.group(1)) * (1e6 if shown.group(2) == "ms" else 1e9)
            assert abs(shown_ns - length) <= 0.006 * length, (text, length)
            screenshot(page, "gc_inside_call")
            assert page.errors == []
    finally:
        server.close()

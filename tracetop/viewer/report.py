"""`tracetop report`: one self-contained HTML file of an experiment -- an overview timeline, the top regions and
a flame graph -- that opens anywhere, offline, and stays under MAX_BYTES however large the trace.

The data comes from the index (as the viewer's does) and, for the top regions, from the profile that
`tracetop summary` prints; the page's script is report.js, an ES module, inlined with the modules it imports.

A browser fetches no module for a page opened from file://, so the page carries the modules report.js imports,
each once, as data: URLs, under names an import map gives them ("./format.js" becomes "tracetop/format.js": a
relative name would not resolve from a module whose own URL is a data: URL). The browser links them as it links
the viewer's; the page's policy allows scripts inline and from data: URLs, nothing from the network."""

import base64
import functools
import html
import json
import os
import re
import struct
from pathlib import Path

from tracetop import _reader
from tracetop.latest import running

HERE = Path(__file__).parent
STATIC = HERE / "static"
MAX_BYTES = 5 * 1000 * 1000
TOP_REGIONS = 25
OVERVIEW_WIDTH = 1600
NO_PARENT = 0xFFFFFFFF
# An import of another module of static/, as the modules write them: `import {a, b} from "./name.js";` (the
# names may run over several lines) or `import "./name.js";`.
IMPORT = re.compile(r'^(import (?:[^;"]*? from )?)"\./(\w+\.js)";$', re.MULTILINE)


class _Regions:
    """The regions the report refers to, renumbered densely: only those are written."""

    def __init__(self, regions):
        self.all = regions
        self.number = {}
        self.used = []

    def __call__(self, region):
        if region not in self.number:
            self.number[region] = len(self.used)
            self.used.append(self.all[region])
        return self.number[region]


def _overview(index, regions, budget, shown):
    """For each of the first `shown` lanes, what the overview shows of it at OVERVIEW_WIDTH pixels, as the
    viewer's span buffers with regions renumbered; each lane gets an equal share of `budget` items (its
    deepest calls go first)."""
    lanes = []
    share = budget // max(1, shown)
    for number in range(shown):
        data = bytearray(struct.pack("II", 0, 0))
        if share:
            data = bytearray(index.spans(index.begin_ns, index.end_ns + 1, OVERVIEW_WIDTH, [number], limit=share))
        count = struct.unpack_from("I", data)[0]
        ids = memoryview(data)[8 + 16 * count : 8 + 20 * count].cast("I")
        for i in range(count):
            ids[i] = regions(ids[i])
        ids.release()
        lanes.append(base64.b64encode(data).decode("ascii"))
    return lanes


def _flame(index, regions, budget):
    """The call tree of the whole run, merged over threads, without the nodes too small to see (below 1/20000
    of the run, and then as many as `budget` allows), in the viewer's tree layout."""
    data = index.tree(index.begin_ns, index.end_ns + 1, list(range(len(index.lanes)))) if budget else bytes(8)
    count = struct.unpack_from("I", data)[0]
    nodes = list(struct.iter_unpack("IIddd", data[8 : 8 + 32 * count]))
    total = sum(node[3] for node in nodes if node[0] == NO_PARENT) or 1
    threshold = total / 20000
    if len(nodes) > budget:
        threshold = max(threshold, sorted((node[3] for node in nodes), reverse=True)[budget - 1])
    kept, renumber = [], {}
    for number, (parent, region, visits, inclusive, exclusive) in enumerate(nodes):
        if inclusive < threshold or (parent != NO_PARENT and parent not in renumber):
            continue  # parents come before their children: a child of a dropped node is dropped
        renumber[number] = len(kept)
        kept.append((renumber.get(parent, NO_PARENT), regions(region), visits, inclusive, exclusive))
    out = bytearray(struct.pack("II", len(kept), 0))
    for node in kept:
        out += struct.pack("IIddd", *node)
    return base64.b64encode(bytes(out)).decode("ascii")


def _top_regions(experiment):
    """The top regions by exclusive time, counted as `tracetop summary` counts them."""
    profile = _reader.profile(experiment)
    rows = sorted(profile["regions"], key=lambda r: (-r["exclusive_ns"], r["name"]))
    keys = ("name", "file", "line", "visits", "inclusive_ns", "exclusive_ns")
    return profile, [{key: row[key] for key in keys} for row in rows[:TOP_REGIONS]]


def render(experiment, index):
    """The report's HTML text: as much detail as MAX_BYTES allows. Less detail first (half the overview's
    items and the flame graph's nodes, down to none), then fewer threads in the overview."""
    profile, top = _top_regions(experiment)
    spans_budget, nodes_budget, shown = 60000, 20000, len(index.lanes)
    while True:
        regions = _Regions(index.regions)
        data = {
            "experiment": os.path.basename(os.path.abspath(experiment)),
            "begin_ns": index.begin_ns,
            "end_ns": index.end_ns,
            "events": profile["events"],
            "total_ns": profile["total_ns"],
            "problems": index.problems,
            "running": running(experiment),
            "threads": len(index.lanes),
            "lanes": [
                {key: lane[key] for key in ("name", "pid", "begin_ns", "end_ns")} for lane in index.lanes[:shown]
            ],
            "overview": _overview(index, regions, spans_budget, shown),
            "flame": _flame(index, regions, nodes_budget),
            "top": top,
        }
        data["regions"] = regions.used
        page = _page(data)
        if len(page.encode()) <= MAX_BYTES or (shown == 0 and not spans_budget and not nodes_budget):
            return page
        if spans_budget or nodes_budget:
            spans_budget = spans_budget // 2 if spans_budget >= 200 else 0
            nodes_budget = nodes_budget // 2 if nodes_budget >= 100 else 0
        else:
            shown //= 2


def _named(text):
    """A module's text with its imports of "./NAME.js" made imports of "tracetop/NAME.js", the import map's names."""
    return IMPORT.sub(lambda match: f'{match[1]}"tracetop/{match[2]}";', text)


@functools.cache
def _scripts():
    """(the import map, report.js): the map names every module report.js needs, directly or not, and gives
    each as a data: URL."""
    imports, wanted, seen = {}, ["report.js"], {"report.js"}
    while wanted:
        name = wanted.pop()
        text = (STATIC / name).read_text(encoding="utf-8")
        for match in IMPORT.finditer(text):
            if match[2] not in seen:
                seen.add(match[2])
                wanted.append(match[2])
        if name == "report.js":
            entry = _named(text)
        else:
            imports[f"tracetop/{name}"] = "data:text/javascript;base64," + base64.b64encode(
                _named(text).encode()
            ).decode("ascii")
    return json.dumps({"imports": dict(sorted(imports.items()))}, indent=1), entry


def _page(data):
    template = (HERE / "report.html").read_text(encoding="utf-8")
    modules, script = _scripts()
    # In a <script> element, "</" could end it early: JSON allows "<\/" for the same text, and so does JavaScript.
    fields = {
        "title": html.escape(f"tracetop report · {data['experiment']}"),
        "style": (STATIC / "report.css").read_text(encoding="utf-8"),
        "data": json.dumps(data, separators=(",", ":")).replace("</", "<\\/"),
        "modules": modules,
        "script": script.replace("</", "<\\/"),
    }
    # In one pass: a field's text (a region's name, say) may hold what looks like a placeholder.
    return re.sub(r"\{\{(\w+)\}\}", lambda match: fields[match[1]], template)


def write(experiment, index, output):
    text = render(experiment, index)
    try:
        fd = _reader.open_output(output)
    except OSError as problem:
        raise _reader.TraceError(f"cannot write {output}: {problem.strerror}") from None
    with open(fd, "w", encoding="utf-8") as file:
        file.write(text)
    return len(text.encode())

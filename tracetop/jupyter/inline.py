"""The result shown under a measured cell: where its experiment is and how to open it, a compact timeline
(from _reader.overview, computed in C), the CPU and memory of the kernel over the cell's run (sampled in
C), and the top regions (from _reader.profile). HTML for notebooks, text for other front ends."""

import colorsys
import html
import os
import shlex
import zlib

from tracetop import _reader
from tracetop.commands import COMMANDS, EXPERIMENT_VIEWS
from tracetop.sizes import format_size

TOP_REGIONS = 10
TIMELINE_WIDTH = 600  # columns of the overview, one pixel each
TIMELINE_DEPTH = 6  # stack levels drawn
TIMELINE_LANES = 8  # threads drawn at most
LABEL_WIDTH = 120
ROW_HEIGHT = 9
CHART_WIDTH, CHART_HEIGHT = 290, 56


def render(measured):
    """{'text/plain': ..., 'text/html': ...} for IPython.display.display(..., raw=True)."""
    profile = _reader.profile(measured.experiment)
    regions = sorted(profile["regions"], key=lambda region: region["exclusive_ns"], reverse=True)[:TOP_REGIONS]
    seconds = measured.usage[-1][0]
    view = "view" if "view" in COMMANDS else EXPERIMENT_VIEWS[0]
    command = f"tracetop {view} {shlex.quote(measured.shown)}"
    headline = (
        f"{measured.stats['events']} events in {_duration(seconds * 1e9)}, "
        f"{format_size(measured.stats['bytes'])}; experiment in {measured.shown}"
    )
    text = "\n".join([f"tracetop: {headline}", f"open it with: {command}", *_problems(profile), _regions_text(regions)])
    parts = [
        f"<div><b>tracetop</b>: {html.escape(headline)} &mdash; open it with <code>{html.escape(command)}</code>"
        f" (<a href='{html.escape(_manifest_link(measured.experiment))}' target='_blank'>MANIFEST.md</a>)</div>",
        *(f"<div style='color:#b00'>{html.escape(line)}</div>" for line in _problems(profile)),
        _timeline(measured.experiment, profile),
        _usage_charts(measured.usage),
        _regions_html(regions, profile),
    ]
    page = "<div class='tracetop-cell' style='font:12px sans-serif'>" + "".join(parts) + "</div>"
    return {"text/plain": text, "text/html": page}


def _problems(profile):
    return [f"trace {'damaged' if profile['corrupt'] else 'cut short'}: {line}" for line in profile["problems"]]


def _manifest_link(experiment):
    """MANIFEST.md relative to the kernel's directory, where the notebook server serves it from."""
    return os.path.relpath(os.path.join(experiment, "MANIFEST.md")).replace(os.sep, "/")


def _duration(ns):
    for unit, size in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= size:
            return f"{ns / size:.3g} {unit}"
    return f"{ns:.0f} ns"


def _colour(name):
    """One colour per module (or C type), the same in every cell."""
    module = name.split(":", 1)[0] if ":" in name else name.split(".", 1)[0]
    hue = (zlib.crc32(module.encode()) % 360) / 360
    red, green, blue = colorsys.hls_to_rgb(hue, 0.62, 0.55)
    return f"#{int(red * 255):02x}{int(green * 255):02x}{int(blue * 255):02x}"


def _timeline(experiment, profile):
    spans = [(thread["begin_ns"], thread["end_ns"]) for thread in profile["threads"] if thread["events"]]
    begin, end = (min(span[0] for span in spans), max(span[1] for span in spans)) if spans else (0, 0)
    if end <= begin:
        return "<div>timeline: no calls recorded</div>"
    lanes = [
        lane
        for lane in _reader.overview(experiment, begin, end, width=TIMELINE_WIDTH, depth=TIMELINE_DEPTH)
        if any(lane["rows"])
    ]
    shown = lanes[:TIMELINE_LANES]
    y, shapes = 14, []
    for lane in shown:
        depth = max(level for level, row in enumerate(lane["rows"]) if row) + 1
        shapes.append(f"<text x='0' y='{y + 9}'>{html.escape(_short(lane['thread'], 18))}</text>")
        for level, row in enumerate(lane["rows"][:depth]):
            for first, last, name in row:
                tip = html.escape(name)
                shapes.append(
                    f"<rect x='{LABEL_WIDTH + first}' y='{y + level * ROW_HEIGHT}' width='{last - first + 1}'"
                    f" height='{ROW_HEIGHT - 1}' fill='{_colour(name)}'><title>{tip}</title></rect>"
                )
        y += depth * ROW_HEIGHT + 6
    for tick in range(5):  # a time ruler
        x = LABEL_WIDTH + tick * TIMELINE_WIDTH / 4
        anchor = "start" if tick == 0 else "end" if tick == 4 else "middle"
        shapes.append(
            f"<text x='{x:.0f}' y='10' text-anchor='{anchor}' fill='#666'>{_duration(tick * (end - begin) / 4)}</text>"
        )
    more = f"<div>{len(lanes) - len(shown)} more threads in the experiment</div>" if len(lanes) > len(shown) else ""
    return (
        f"<svg class='tracetop-timeline' width='{LABEL_WIDTH + TIMELINE_WIDTH}' height='{y}' "
        f"style='font:10px sans-serif'>{''.join(shapes)}</svg>{more}"
    )


def _short(text, size):
    return text if len(text) <= size else text[: size - 1] + "\u2026"


def _usage_charts(usage):
    """CPU use (% of one core) and resident memory of the kernel over the cell's run."""
    if len(usage) < 2 or usage[-1][0] <= 0:
        return ""
    cpu = [
        (usage[i][0], 100 * max(0.0, usage[i][1] - usage[i - 1][1]) / max(usage[i][0] - usage[i - 1][0], 1e-9))
        for i in range(1, len(usage))
    ]
    memory = [(time, rss / 2**20) for time, _, rss in usage]
    peak_cpu = max(value for _, value in cpu)
    return (
        "<div style='display:flex;gap:16px'>"
        + _chart(cpu, usage[-1][0], f"CPU: peak {peak_cpu:.0f}% of a core", 0, max(peak_cpu, 100), "#d62")
        + _chart(
            memory,
            usage[-1][0],
            f"memory: {memory[0][1]:.0f} to {memory[-1][1]:.0f} MiB (peak {max(value for _, value in memory):.0f})",
            min(value for _, value in memory),
            max(value for _, value in memory),
            "#26b",
        )
        + "</div>"
    )


def _chart(points, duration, title, low, high, colour):
    span = (high - low) or 1
    top = 14
    coordinates = " ".join(
        f"{CHART_WIDTH * time / duration:.1f},{top + (CHART_HEIGHT - top) * (1 - (value - low) / span):.1f}"
        for time, value in points
    )
    return (
        f"<svg class='tracetop-usage' width='{CHART_WIDTH}' height='{CHART_HEIGHT}' style='font:10px sans-serif'>"
        f"<text x='0' y='10'>{html.escape(title)}</text>"
        f"<rect x='0' y='{top}' width='{CHART_WIDTH}' height='{CHART_HEIGHT - top}' fill='#f6f6f6'/>"
        f"<polyline points='{coordinates}' fill='none' stroke='{colour}' stroke-width='1.5'/></svg>"
    )


def _regions_text(regions):
    lines = [f"{'exclusive':>10} {'inclusive':>10} {'visits':>8}  region"]
    lines += [
        f"{_duration(region['exclusive_ns']):>10} {_duration(region['inclusive_ns']):>10} "
        f"{region['visits']:>8}  {region['name']}"
        for region in regions
    ]
    return "\n".join(lines)


def _regions_html(regions, profile):
    total = sum(region["exclusive_ns"] for region in profile["regions"]) or 1
    rows = "".join(
        f"<tr><td style='text-align:left'><span style='color:{_colour(region['name'])}'>&#9632;</span> "
        f"{html.escape(region['name'])}</td><td>{_duration(region['exclusive_ns'])}</td>"
        f"<td>{100 * region['exclusive_ns'] / total:.1f}%</td><td>{_duration(region['inclusive_ns'])}</td>"
        f"<td>{region['visits']}</td><td style='text-align:left;color:#666'>{html.escape(_where(region))}</td></tr>"
        for region in regions
    )
    return (
        "<table class='tracetop-regions' style='font-size:12px'><thead><tr><th style='text-align:left'>region</th>"
        "<th>exclusive</th><th>%</th><th>inclusive</th><th>visits</th><th style='text-align:left'>where</th>"
        f"</tr></thead><tbody>{rows}</tbody></table>"
    )


def _where(region):
    return f"{os.path.basename(region['file'])}:{region['line']}" if region["file"] else ""

/* report.js -- the page of `tracetop report`, its entry module: the data is in the page (the JSON element
 * "data", written by tracetop/viewer/report.py); nothing is fetched. An overview timeline, the top regions and a
 * flame graph. report.py inlines this module and the modules it imports, each as a data: URL, so that the page
 * is one file that opens from file:// (where a browser fetches no module).
 *
 * Exports nothing. */
import {count, escapeHtml, fmtCount, fmtDuration, fmtTime, niceStep, percent} from "./format.js";
import {colourOf, displayName, fitText, location, nameHtml} from "./names.js";
import {decodeSpans, decodeTree} from "./decode.js";
import {drawFlame, flameHit, flameTip} from "./flame.js";
import {$, paintSwatches} from "./dom.js";

const GUTTER = 150, RULER = 22, ROW = 12, LANE_PAD = 6;
const data = JSON.parse($("data").textContent);
const regions = data.regions;

function bytesOf(text) {
  const raw = atob(text);
  const bytes = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
  return bytes.buffer;
}

$("experiment").textContent = data.experiment;
const span = Math.max(1, data.end_ns - data.begin_ns);
$("facts").textContent = count(data.threads, "thread") + " · " + count(data.events, "event") + " · " + fmtDuration(span) +
  (data.lanes.length < data.threads ? " · the overview shows the first " + count(data.lanes.length, "thread") : "");
if (data.running.length) {
  $("running").hidden = false;
  $("running").textContent = "Still being measured (process " + data.running.join(", ") + " running): this is what it had written when the report was made.";
} else if (data.problems.length) {
  $("problems").hidden = false;
  $("problems").textContent = "The trace is incomplete: " + data.problems.join("; ");
}

/* ---- overview timeline ---- */

const lanes = data.overview.map((text) => decodeSpans(bytesOf(text)));
const canvas = $("overview");
const layout = [];
let y = RULER;
lanes.forEach((spans, i) => {
  let depths = 1;
  for (let k = 0; k < spans.count; k++) depths = Math.max(depths, spans.depth[k] + 1);
  layout.push({lane: i, top: y, depths});
  y += depths * ROW + LANE_PAD;
});
const height = y + 4;

function drawOverview() {
  const ratio = window.devicePixelRatio || 1;
  const width = canvas.clientWidth;
  canvas.style.height = height + "px";
  canvas.width = Math.round(width * ratio);
  canvas.height = Math.round(height * ratio);
  const g = canvas.getContext("2d");
  g.setTransform(ratio, 0, 0, ratio, 0, 0);
  const plot = width - GUTTER;
  const xOf = (t) => GUTTER + (t - data.begin_ns) / span * plot;
  g.font = "11px system-ui, sans-serif";
  g.textBaseline = "middle";
  g.fillStyle = "#f2f2f5";
  g.fillRect(0, 0, width, RULER);
  const step = niceStep(span, plot / 110);
  g.fillStyle = "#444";
  for (let t = 0; t <= span; t += step) {
    g.fillRect(Math.round(xOf(data.begin_ns + t)), RULER - 6, 1, 6);
    g.fillText(fmtTime(t, step), xOf(data.begin_ns + t) + 3, RULER / 2 - 2);
  }
  for (const l of layout) {
    const spans = lanes[l.lane];
    g.fillStyle = l.lane % 2 ? "#f7f7f9" : "#fff";
    g.fillRect(0, l.top, width, l.depths * ROW + LANE_PAD);
    g.fillStyle = "#1d1d1f";
    g.font = "600 11px system-ui, sans-serif";
    g.fillText(data.lanes[l.lane].name, 6, l.top + ROW / 2);
    g.font = "10px system-ui, sans-serif";
    for (let i = 0; i < spans.count; i++) {
      const x0 = xOf(spans.start[i]), x1 = Math.max(x0 + 1, xOf(spans.end[i]));
      const name = regions[spans.region[i]].name;
      g.fillStyle = colourOf(name);
      g.fillRect(x0, l.top + spans.depth[i] * ROW, x1 - x0, ROW - 1);
      const label = x1 - x0 > 16 ? fitText(g, displayName(name), x1 - x0 - 4) : "";
      if (label) {
        g.fillStyle = "#111";
        g.fillText(label, x0 + 2, l.top + spans.depth[i] * ROW + ROW / 2);
      }
    }
  }
}

canvas.addEventListener("mousemove", (e) => {
  const tooltip = $("tooltip");
  const plot = canvas.clientWidth - GUTTER;
  const t = data.begin_ns + (e.offsetX - GUTTER) / plot * span, slack = 2 * span / plot;
  const l = layout.find((l) => e.offsetY >= l.top && e.offsetY < l.top + l.depths * ROW);
  tooltip.hidden = true;
  if (!l || e.offsetX < GUTTER) return;
  const depth = Math.floor((e.offsetY - l.top) / ROW), spans = lanes[l.lane];
  for (let i = 0; i < spans.count; i++) {
    if (spans.depth[i] !== depth || spans.start[i] - slack > t || spans.end[i] + slack < t) continue;
    const region = regions[spans.region[i]];
    tooltip.innerHTML = "<b>" + escapeHtml(displayName(region.name)) + "</b><div class=\"sub\">" + escapeHtml(region.name) + "<br>" +
      (spans.calls[i] > 1 ? fmtCount(spans.calls[i]) + " calls over " : "duration ") + fmtDuration(spans.end[i] - spans.start[i]) +
      (region.file ? " · " + escapeHtml(location(region)) : "") + "</div>";
    tooltip.hidden = false;
    tooltip.style.left = Math.min(e.offsetX + 12, canvas.clientWidth - 300) + "px";
    tooltip.style.top = e.offsetY + 16 + "px";
    return;
  }
});
canvas.addEventListener("mouseleave", () => { $("tooltip").hidden = true; });

/* ---- top regions ---- */

const total = data.total_ns; /* the threads' time, as `tracetop summary` gives percentages of it */
$("top").querySelector("tbody").innerHTML = data.top.map((r) =>
  '<tr><td class="name">' + nameHtml(r.name) + "</td><td>" +
  fmtDuration(r.exclusive_ns) + "</td><td>" + percent(r.exclusive_ns, total) + "</td><td>" + fmtDuration(r.inclusive_ns) +
  "</td><td>" + fmtCount(r.visits) + "</td><td>" + escapeHtml(location(r)) + "</td></tr>").join("");
paintSwatches(document);

/* ---- flame graph ---- */

const tree = decodeTree(bytesOf(data.flame));
let focus = null, flame = null;
const drawFlameGraph = () => { flame = drawFlame($("flame"), tree, regions, focus, null); };
$("flame").addEventListener("click", (e) => {
  const box = flameHit(flame, e.offsetX, e.offsetY);
  focus = box && box.node !== focus ? box.node : null;
  drawFlameGraph();
});
$("flame").addEventListener("mousemove", (e) => {
  const box = flame && flameHit(flame, e.offsetX, e.offsetY);
  if (box) flameTip($("flame-tip"), $("flame-box"), e, tree, box.node, regions[tree.region[box.node]].name);
  else $("flame-tip").hidden = true;
});
$("flame").addEventListener("mouseleave", () => { $("flame-tip").hidden = true; });

function drawAll() {
  drawOverview();
  drawFlameGraph();
}
window.addEventListener("resize", drawAll);
drawAll();
document.body.dataset.ready = "1";

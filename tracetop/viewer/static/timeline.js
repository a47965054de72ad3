/* timeline.js -- the timeline drawn: per lane (thread) its overview band, marks, rows of calls as a flame chart
 * and its activity band; the counter tracks, the objects alive (objects.js), the overlays (comm.js) and the
 * sections (tasks.js) other modules add; the range selected and the ruler. What lies under a point (hit tests)
 * and its tooltip. The view is drawn from the last answers of data.js, placed by their times, so drawing costs
 * the same at any size.
 *
 * Exports: BAND (the activity band's height), addOverlay, itemAt, hover; it answers the "draw" event. */
import {on, scheduleDraw, state} from "./state.js";
import {FOLDED, GUTTER, LANE_PAD, MARKS, OVERVIEW, PROCESS_HEADER, ROW, RULER, TRACK_HEADER, canvas, plotWidth, scroller, tOf,
  xOf} from "./geometry.js";
import {sections} from "./layout.js";
import {count, fmtDuration, fmtTime, niceStep} from "./format.js";
import {colourOf, displayName, fitText} from "./names.js";
import {$} from "./dom.js";
import {callKey, hideTooltip, showMarks, showTip, showTooltip, tooltipNow} from "./details.js";
import {loadTree} from "./profile_tab.js";
import * as objects from "./objects.js";

/* The activity band: a thread's use of the CPU and the GIL, below its calls. Between two usage records
   [time, cpu_ns, samples, gil_samples] (cumulative), the share of the interval its thread held the GIL (dark),
   ran without holding it (light) and was off the CPU, waiting or idle (the band's ground), drawn as heights
   from the bottom. */
export const BAND = LANE_PAD - 2;
const BAND_GIL = "#2e7d32", BAND_CPU = "#9ccc65", BAND_OFF = "#e4e4ea";

const overlays = []; /* drawings over the lanes (comm.js): {draw(g, scroll, height), tip(x, y, alone)} each */

/* Adds a drawing over the lanes, drawn with every frame; tip(x, y, alone) gives the tooltip's HTML for a
   canvas point, or nothing (alone: no call or mark is there). */
export function addOverlay(overlay) {
  overlays.push(overlay);
  scheduleDraw();
}

/* What layout.js's sections are given to draw and to answer a hover. */
function sectionView(height) {
  return {t0: state.t0, t1: state.t1, xOf, left: GUTTER, width: plotWidth(), top: RULER, height,
          scroll: scroller.scrollTop, meta: state.meta};
}

/* ---- drawing ---- */

function draw() {
  if (!state.meta || state.tab !== "timeline") return;
  const started = performance.now();
  const ratio = window.devicePixelRatio || 1;
  /* As wide as the lanes' box, without its scroll bar. */
  if (canvas.clientWidth !== scroller.clientWidth) canvas.style.width = scroller.clientWidth + "px";
  const width = canvas.clientWidth, height = canvas.clientHeight;
  if (canvas.width !== Math.round(width * ratio) || canvas.height !== Math.round(height * ratio)) {
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
  }
  const g = canvas.getContext("2d");
  g.setTransform(ratio, 0, 0, ratio, 0, 0);
  g.clearRect(0, 0, width, height);
  const scroll = scroller.scrollTop;
  g.save();
  g.beginPath();
  g.rect(GUTTER, RULER, width - GUTTER, height - RULER);
  g.clip();
  drawLanes(g, scroll, height);
  for (const overlay of overlays) overlay.draw(g, scroll, height);
  drawTracks(g, scroll, height);
  objects.draw(g, scroll, height);
  for (const section of sections) section.draw(g, sectionView(height));
  drawSelection(g, height);
  g.restore();
  drawRuler(g, width);
  g.strokeStyle = "#dcdce0";
  g.beginPath();
  g.moveTo(GUTTER - 0.5, 0);
  g.lineTo(GUTTER - 0.5, height);
  g.stroke();
  $("view-range").textContent = "view " + fmtTime(state.t0 - state.begin, (state.t1 - state.t0) / 10) + " – " +
    fmtTime(state.t1 - state.begin, (state.t1 - state.t0) / 10) + "  (" + fmtDuration(state.t1 - state.t0) + ")";
  if (state.mouse) hover(state.mouse, true); /* a zoom or pan under a still mouse: the tooltip follows */
  const took = performance.now() - started;
  state.frameTimes.push(took);
  if (state.frameTimes.length > 2000) state.frameTimes.splice(0, 1000);
  if (state.firstPaint === null && state.spans) {
    state.firstPaint = performance.now();
    performance.mark("tracetop-first-paint");
    setTimeout(loadTree, 0); /* the profile of the whole run, ready before its tab is opened */
  }
}

function drawLanes(g, scroll, height) {
  const spans = state.spans;
  const hl = state.search.regions && state.search.regions.length ? state.highlight : null;
  const scale = plotWidth() / (state.t1 - state.t0);
  g.font = "11px system-ui, sans-serif";
  g.textBaseline = "middle";
  g.fillStyle = "#e6e6ea";
  for (const p of state.layout.processes) g.fillRect(GUTTER, p.top - scroll, plotWidth(), PROCESS_HEADER - 2);
  for (const l of state.layout.lanes) {
    const top = l.top - scroll;
    if (l.hidden || top > height || top + l.height < RULER) continue;
    g.fillStyle = l.index % 2 ? "#f7f7f9" : "#fff";
    g.fillRect(GUTTER, top, plotWidth(), l.height);
    if (!spans) continue;
    const dim = state.search.regions !== null;
    drawOverview(g, spans, l, top);
    if (!l.folded) drawMarks(g, l, l.rows - scroll - MARKS);
    if (!l.folded) drawActivity(g, l, l.rows - scroll + l.shown * ROW + 1);
    for (let d = 0; d < l.shown; d++) {
      const y = l.rows - scroll + d * ROW;
      if (y > height || y + ROW < RULER) continue;
      const r = spans.rows.get(l.index * 65536 + d);
      if (r) drawRow(g, spans, r, y, scale, dim ? 0.22 : 1, false);
      if (hl) {
        const h = hl.rows.get(l.index * 65536 + d);
        if (h) drawRow(g, hl, h, y, scale, 1, true);
      }
    }
  }
  const sel = state.selected;
  const l = sel && state.layout.lanes[sel.lane];
  if (sel && !l.hidden && sel.depth < l.shown) {
    const x0 = Math.max(GUTTER - 2, xOf(sel.start)), x1 = Math.min(GUTTER + plotWidth() + 2, xOf(sel.end));
    g.strokeStyle = "#000";
    g.lineWidth = 2;
    g.strokeRect(x0, l.rows - scroll + sel.depth * ROW, Math.max(2, x1 - x0), ROW - 1);
    g.lineWidth = 1;
  }
}

/* Per pixel column of lane l, the deepest call there (-1: none): the lane's activity at a glance, whatever
 * rows it shows. */
function deepestCalls(spans, l) {
  const width = Math.ceil(plotWidth()), scale = plotWidth() / (state.t1 - state.t0);
  const depth = new Int32Array(width).fill(-1), item = new Int32Array(width);
  for (let d = 0; d < l.depths; d++) {
    const r = spans.rows.get(l.index * 65536 + d);
    if (!r) continue;
    for (let i = r[0]; i < r[1]; i++) {
      const x0 = Math.max(0, Math.floor((spans.start[i] - state.t0) * scale));
      const x1 = Math.min(width, Math.max(x0 + 1, Math.ceil((spans.end[i] - state.t0) * scale)));
      for (let x = x0; x < x1; x++) if (d >= depth[x]) { depth[x] = d; item[x] = i; }
    }
  }
  return {depth, item};
}

/* The overview band: the deepest call's colour at each moment, in runs of one region. */
function drawOverview(g, spans, l, top) {
  const {depth, item} = deepestCalls(spans, l);
  const band = l.folded ? FOLDED : OVERVIEW, regions = state.meta.regions;
  let from = 0;
  for (let x = 1; x <= depth.length; x++) {
    const region = depth[from] < 0 ? -1 : spans.region[item[from]];
    if (x < depth.length && (depth[x] < 0 ? -1 : spans.region[item[x]]) === region) continue;
    if (region >= 0) {
      g.fillStyle = colourOf(regions[region].name);
      g.fillRect(GUTTER + from, top + 1, x - from, band - 2);
    }
    from = x;
  }
}

/* A mark is a small triangle in the strip above the lane's calls. */
function drawMarks(g, l, top) {
  const marks = state.marks[l.index];
  if (!marks) return;
  g.fillStyle = "#3d3d45";
  for (const [time] of marks) {
    if (time < state.t0 || time > state.t1) continue;
    const x = xOf(time);
    g.beginPath();
    g.moveTo(x - 4, top + 1);
    g.lineTo(x + 4, top + 1);
    g.lineTo(x, top + MARKS - 1);
    g.fill();
  }
}

/* Lane l's CPU and GIL band, its top at y (the lane's bottom padding). */
function drawActivity(g, l, y) {
  const usage = state.activity && state.activity[l.index];
  if (!usage || !usage.length) return;
  let prev = [state.meta.lanes[l.index].begin_ns, 0, 0, 0];
  for (const u of usage) {
    const dt = u[0] - prev[0];
    if (dt > 0 && u[0] >= state.t0 && prev[0] <= state.t1) {
      const x0 = Math.max(GUTTER, xOf(prev[0])), x1 = Math.min(GUTTER + plotWidth(), xOf(u[0]));
      const cpu = Math.min(1, (u[1] - prev[1]) / dt);
      const gil = u[2] > prev[2] ? Math.min(1, (u[3] - prev[3]) / (u[2] - prev[2])) : 0;
      const w = Math.max(1, x1 - x0), hGil = BAND * gil, hCpu = BAND * Math.max(0, Math.min(1, cpu) - gil);
      g.fillStyle = BAND_OFF;
      g.fillRect(x0, y, w, BAND);
      g.fillStyle = BAND_GIL;
      g.fillRect(x0, y + BAND - hGil, w, hGil);
      g.fillStyle = BAND_CPU;
      g.fillRect(x0, y + BAND - hGil - hCpu, w, hCpu);
    }
    prev = u;
  }
}

function drawRow(g, spans, range, y, scale, alpha, outline) {
  const regions = state.meta.regions;
  const left = GUTTER, right = GUTTER + plotWidth();
  g.globalAlpha = alpha;
  let lastX = -1;
  for (let i = range[0]; i < range[1]; i++) {
    let x0 = left + (spans.start[i] - state.t0) * scale, x1 = left + (spans.end[i] - state.t0) * scale;
    if (x1 < left || x0 > right) continue;
    if (x1 - x0 < 1) {
      if (Math.floor(x0) === lastX) continue; /* one sliver per pixel is all that shows */
      x1 = x0 + 1;
    }
    lastX = Math.floor(x0);
    const name = regions[spans.region[i]].name;
    g.fillStyle = outline ? "#f6c90e" : colourOf(name);
    if (x0 < left - 1) x0 = left - 1;
    if (x1 > right + 1) x1 = right + 1;
    g.fillRect(x0, y, x1 - x0, ROW - 1);
    if (spans.calls[i] > 1 && x1 - x0 > 3) {
      g.fillStyle = "rgba(255,255,255,0.35)";
      g.fillRect(x0, y + ROW - 5, x1 - x0, 3);
    }
    if (outline) {
      g.strokeStyle = "#8a6d00";
      g.strokeRect(x0 + 0.5, y + 0.5, Math.max(1, x1 - x0 - 1), ROW - 2);
    }
    const room = Math.min(x1, right) - Math.max(x0, left) - 6;
    if (room > 16) {
      const short = displayName(name);
      const label = fitText(g, spans.calls[i] > 1 ? spans.calls[i] + " calls: " + short : short, room);
      if (label) {
        g.fillStyle = "#111";
        g.fillText(label, Math.max(x0, left) + 3, y + ROW / 2);
      }
    }
  }
  g.globalAlpha = 1;
}

function drawTracks(g, scroll, height) {
  const layout = state.layout;
  if (!layout.tracks.length) return;
  const headerTop = layout.tracks[0].top - TRACK_HEADER - scroll;
  g.fillStyle = "#6b6b70";
  g.font = "11px system-ui, sans-serif";
  g.fillText("counters and parameters", GUTTER + 4, headerTop + TRACK_HEADER / 2);
  const s = state.samples;
  for (const t of layout.tracks) {
    const top = t.top - scroll;
    if (top > height || top + t.height < RULER) continue;
    g.fillStyle = t.index % 2 ? "#f7f7f9" : "#fff";
    g.fillRect(GUTTER, top, plotWidth(), t.height);
    if (!s) continue;
    const r = s.ranges.get(t.index);
    if (!r) continue;
    const track = state.meta.tracks[t.index];
    const lo = track.min, hi = track.max > track.min ? track.max : track.min + 1;
    const yOf = (v) => top + t.height - 4 - (v - lo) / (hi - lo) * (t.height - 8);
    const colour = colourOf(track.name + ":");
    g.fillStyle = colour;
    g.globalAlpha = 0.35;
    for (let i = r[0]; i < r[1]; i++) {
      const x = xOf(s.time[i]);
      const next = i + 1 < r[1] ? xOf(s.time[i + 1]) : x + 1;
      g.fillRect(x, yOf(s.max[i]), Math.max(1, next - x), Math.max(1, yOf(s.min[i]) - yOf(s.max[i])));
    }
    g.globalAlpha = 1;
    g.strokeStyle = colour.replace(/,(\d+)%\)$/, ",35%)");
    g.beginPath();
    for (let i = r[0]; i < r[1]; i++) {
      const x = xOf(s.time[i]), y = yOf(s.last[i]);
      if (i === r[0]) g.moveTo(x, y); else g.lineTo(x, yOf(s.last[i - 1])), g.lineTo(x, y);
    }
    g.stroke();
  }
}

function drawSelection(g, height) {
  if (!state.selection) return;
  const x0 = xOf(state.selection[0]), x1 = xOf(state.selection[1]);
  g.fillStyle = "rgba(43,108,176,0.12)";
  g.fillRect(x0, RULER, x1 - x0, height - RULER);
  g.strokeStyle = "rgba(43,108,176,0.8)";
  g.beginPath();
  g.moveTo(x0 + 0.5, RULER);
  g.lineTo(x0 + 0.5, height);
  g.moveTo(x1 - 0.5, RULER);
  g.lineTo(x1 - 0.5, height);
  g.stroke();
}

function drawRuler(g, width) {
  g.fillStyle = "#f2f2f5";
  g.fillRect(0, 0, width, RULER);
  const step = niceStep(state.t1 - state.t0, plotWidth() / 110);
  g.fillStyle = "#444";
  g.strokeStyle = "#b8b8c0";
  g.font = "11px system-ui, sans-serif";
  g.textBaseline = "middle";
  g.beginPath();
  const first = Math.ceil((state.t0 - state.begin) / step) * step;
  for (let t = first; state.begin + t <= state.t1; t += step) {
    const x = Math.round(xOf(state.begin + t)) + 0.5;
    g.moveTo(x, RULER - 8);
    g.lineTo(x, RULER);
    g.fillText(fmtTime(t, step), x + 3, RULER / 2 - 2);
  }
  g.stroke();
  if (state.selection) {
    const x0 = xOf(state.selection[0]), x1 = xOf(state.selection[1]);
    g.fillStyle = "rgba(43,108,176,0.35)";
    g.fillRect(Math.max(GUTTER, x0), RULER - 6, Math.max(1, x1 - Math.max(GUTTER, x0)), 6);
  }
  g.fillStyle = "#f2f2f5";
  g.fillRect(0, 0, GUTTER, RULER);
  g.fillStyle = "#6b6b70";
  g.fillText(count(state.meta.lanes.length, "thread"), 6, RULER / 2);
}

/* ---- hit tests and the tooltip ---- */

/* (lane, depth) under canvas point y, or null. */
function rowAt(y) {
  const yy = y + scroller.scrollTop;
  for (const l of state.layout.lanes) {
    if (yy >= l.rows && yy < l.rows + l.shown * ROW) return {lane: l.index, depth: Math.floor((yy - l.rows) / ROW)};
  }
  return null;
}

/* The deepest call under x in the overview band at canvas point y, as itemAt answers; null elsewhere. */
function bandItemAt(x, y) {
  const yy = y + scroller.scrollTop;
  const l = state.layout.lanes.find((l) => !l.hidden && yy >= l.band && yy < l.band + (l.folded ? FOLDED : OVERVIEW));
  if (!l || !state.spans || x < GUTTER) return null;
  const {depth, item} = deepestCalls(state.spans, l);
  const column = Math.floor(x - GUTTER);
  if (column < 0 || column >= depth.length || depth[column] < 0) return null;
  const s = state.spans, i = item[column];
  return {lane: l.index, depth: depth[column], start: s.start[i], end: s.end[i], region: s.region[i], calls: s.calls[i]};
}

/* The marks of lane strip under (x, y): their names, or null. */
function marksAt(x, y) {
  const yy = y + scroller.scrollTop;
  const l = state.layout.lanes.find((l) => !l.hidden && !l.folded && yy >= l.rows - MARKS && yy < l.rows);
  if (!l || !state.marks[l.index]) return null;
  const near = state.marks[l.index].filter(([time]) => Math.abs(xOf(time) - x) <= 4);
  return near.length ? near.map(([time, name]) => name + " at " + ((time - state.begin) / 1e6).toFixed(3) + " ms") : null;
}

/* The call drawn at canvas point (x, y): {lane, depth, start, end, region, calls}, or null. */
export function itemAt(x, y) {
  const row = rowAt(y);
  if (!row) return bandItemAt(x, y);
  if (!state.spans || x < GUTTER) return null;
  const source = state.search.regions && state.highlight && hitIn(state.highlight, row, x);
  return source || hitIn(state.spans, row, x);
}

function hitIn(spans, row, x) {
  const r = spans.rows.get(row.lane * 65536 + row.depth);
  if (!r) return null;
  const t = tOf(x), slack = 2 * (state.t1 - state.t0) / plotWidth();
  let lo = r[0], hi = r[1];
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (spans.end[mid] + slack > t) hi = mid; else lo = mid + 1;
  }
  let best = null;
  for (let i = lo; i < r[1] && spans.start[i] - slack <= t; i++) {
    if (best === null || Math.abs((spans.start[i] + spans.end[i]) / 2 - t) < Math.abs((spans.start[best] + spans.end[best]) / 2 - t)) best = i;
  }
  if (best === null) return null;
  return {lane: row.lane, depth: row.depth, start: spans.start[best], end: spans.end[best],
          region: spans.region[best], calls: spans.calls[best]};
}

/* The tooltip of what lies under the mouse; `changed`: only when that is no longer what it shows (after the
 * view moved under a still mouse). */
export function hover(p, changed) {
  if (state.drag) { hideTooltip(); return; }
  const item = itemAt(p.x, p.y);
  const marks = item ? null : marksAt(p.x, p.y);
  /* What an overlay draws there: a line wins over the call below it, an area only where nothing else is. */
  const over = overlays.map((o) => o.tip && o.tip(p.x, p.y, !item && !marks)).find((html) => html);
  if (over) { showTip(over, p.x, p.y); return; }
  const objectsTip = item || marks ? null : objects.tip(p.x, p.y);
  const tip = item || marks || objectsTip ? null : sections.reduce((found, s) => found || s.tip(p.x, p.y, sectionView(canvas.clientHeight)), null);
  const now = tooltipNow();
  if (changed && now.shown === !!(item || marks || objectsTip || tip) && (!item || now.key === callKey(item))) return;
  if (item) showTooltip(item, p.x, p.y);
  else if (marks) showMarks(marks, p.x, p.y);
  else if (objectsTip) showMarks(objectsTip.lines, p.x, p.y, objectsTip.title);
  else if (tip) showMarks(tip.lines, p.x, p.y, tip.title);
  else hideTooltip();
}

on("draw", draw);

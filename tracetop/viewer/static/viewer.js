/* viewer.js -- the viewer served by `tracetop view`, its entry module: a timeline of every lane (thread) with
 * its call stack as a flame chart and its counter tracks, a call tree, a flat profile and a flame graph, for
 * the whole run or a selected range. The server answers viewport queries from the index with what can be seen
 * (lod.h), so drawing costs the same at any size.
 *
 * This module loads the experiment's meta, then starts the modules that need it; it imports the others for
 * their listeners. Where things are: state.js owns the state; data.js fetches for the view, timeline.js draws
 * it, layout.js places the lanes, input.js moves it; details.js, selection.js, search.js, tabs.js,
 * profile_tab.js and flame_tab.js are the panels; objects.js, comm.js and tasks.js add their views when the
 * run has objects, MPI ranks or asyncio tasks.
 *
 * Exports nothing. For tests and the bench (and for nothing else) it sets window.tracetopViewer: the state,
 * and ways to find and move what is drawn. */
import {panBy, setView, state} from "./state.js";
import {GUTTER, MARKS, ROW, RULER, plotWidth, scroller, xOf, zoomAt} from "./geometry.js";
import {api} from "./api.js";
import * as format from "./format.js";
import * as calltree from "./calltree.js";
import {$, setStatus} from "./dom.js";
import {buildLayout, initLaneViews, lanePlace} from "./layout.js";
import {loadActivity, loadMarks} from "./data.js";
import {BAND} from "./timeline.js";
import {findFrame} from "./flame_tab.js";
import * as objects from "./objects.js";
import * as comm from "./comm.js";
import * as tasks from "./tasks.js";
import "./input.js";

api("meta").then((r) => r.json()).then((meta) => {
  state.meta = meta;
  state.begin = meta.begin_ns;
  state.end = Math.max(meta.end_ns, meta.begin_ns + 1);
  document.title = "tracetop · " + meta.experiment;
  $("experiment").textContent = meta.experiment;
  const lanes = $("scope-lanes");
  lanes.innerHTML = '<option value="all">all threads, merged</option>' +
    meta.lanes.map((l, i) => '<option value="' + i + '">' + format.escapeHtml(l.name) + " (pid " + l.pid + ")</option>").join("");
  const calls = meta.lanes.reduce((s, l) => s + l.calls, 0);
  if (meta.running.length) setStatus("still being measured (process " + meta.running.join(", ") + " running): what it had written when opened");
  else if (meta.problems.length) setStatus(meta.problems[0] + (meta.problems.length > 1 ? " (+" + (meta.problems.length - 1) + " more)" : ""), true);
  else setStatus(format.count(meta.lanes.length, "thread") + " · " + format.count(calls, "call") + " · " + format.fmtDuration(state.end - state.begin));
  objects.init();
  initLaneViews();
  buildLayout();
  loadMarks();
  loadActivity();
  const margin = (state.end - state.begin) * 0.01;
  setView(state.begin - margin, state.end + margin);
  comm.start();
}).catch((error) => setStatus("cannot load the experiment: " + error.message, true));
tasks.start();

window.tracetopViewer = {
  state,
  ready: () => state.spans !== null && state.firstPaint !== null,
  setView, panBy, zoomAt, xOf, lanePlace, findFrame,
  format, calltree,
  comm: comm.probe, tasks: tasks.probe, objects: objects.probe,
  /* Where a bar of region `name` lies on screen, wide enough to point at: {x, y} in client coordinates. */
  findBar(name, minWidth) {
    if (!state.spans) return null;
    const box = scroller.getBoundingClientRect();
    const s = state.spans;
    for (let i = 0; i < s.count; i++) {
      if (state.meta.regions[s.region[i]].name !== name || s.calls[i] !== 1) continue;
      const x0 = Math.max(GUTTER, xOf(s.start[i])), x1 = Math.min(GUTTER + plotWidth(), xOf(s.end[i]));
      if (x1 - x0 < (minWidth || 4)) continue;
      const lane = state.layout.lanes[s.lane[i]];
      if (lane.hidden || s.depth[i] >= lane.shown) continue;
      const y = lane.rows + s.depth[i] * ROW + ROW / 2 - scroller.scrollTop;
      if (y < RULER || y > box.height - 4) continue;
      return {x: box.left + (x0 + x1) / 2, y: box.top + y};
    }
    return null;
  },
  /* Zooms to a call of region `name` (one in the data drawn now): true when there is one. */
  revealBar(name) {
    const s = state.spans;
    for (let i = 0; s && i < s.count; i++) {
      if (state.meta.regions[s.region[i]].name !== name) continue;
      const length = Math.max(s.end[i] - s.start[i], 1000);
      setView(s.start[i] - length, s.end[i] + length);
      return true;
    }
    return false;
  },
  /* Where the mark named `name` is drawn: {x, y} in client coordinates. */
  findMark(name) {
    const box = scroller.getBoundingClientRect();
    for (const l of state.layout.lanes) {
      for (const [time, mark] of (!l.hidden && !l.folded && state.marks[l.index]) || []) {
        if (mark === name && time >= state.t0 && time <= state.t1) {
          return {x: box.left + xOf(time), y: box.top + l.rows - MARKS - scroller.scrollTop + MARKS / 2};
        }
      }
    }
    return null;
  },
  /* A lane's thread over its life as its activity band shows it: {cpu, gil} shares, and where the band
     is drawn in the canvas (CSS pixels), {x0, x1, y, height}; null without usage records. */
  activity(name) {
    const i = state.meta.lanes.findIndex((lane) => lane.name === name);
    const usage = i >= 0 && state.activity && state.activity[i];
    if (!usage || !usage.length) return null;
    const lane = state.meta.lanes[i], l = state.layout.lanes[i], last = usage[usage.length - 1];
    return {
      cpu: last[1] / Math.max(1, last[0] - lane.begin_ns),
      gil: last[2] ? last[3] / last[2] : 0,
      band: {x0: Math.max(GUTTER, xOf(lane.begin_ns)), x1: Math.min(GUTTER + plotWidth(), xOf(last[0])),
             y: l.rows + l.shown * ROW + 1 - scroller.scrollTop, height: BAND},
    };
  },
  /* The calls of the regions searched for in the last answer. */
  highlighted() {
    const h = state.highlight;
    if (!h) return 0;
    let calls = 0;
    for (let i = 0; i < h.count; i++) calls += h.calls[i];
    return calls;
  },
};

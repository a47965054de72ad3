/* layout.js -- where each lane, process header and track lies on the timeline (state.layout), and their names in
 * the gutter with the buttons that fold, expand and raise them. Below the lanes come the counter tracks, then
 * the sections other modules add (tasks.js), each {layout(y, labels) -> the y below it, draw(g, view),
 * tip(x, y, view) -> {title, lines} or null}.
 *
 * Exports: sections, addSection, initLaneViews, buildLayout (also on the "layout" event), placeLabels,
 * lanePlace. */
import {on, raiseLane, state, toggleDepth, toggleLane, toggleProcess} from "./state.js";
import {FOLDED, LANE_PAD, MARKS, OVERVIEW, PROCESS_HEADER, ROW, RULER, TRACK, TRACK_HEADER, scroller} from "./geometry.js";
import {$, button} from "./dom.js";
import {count, escapeHtml, fmtCount} from "./format.js";
import * as objects from "./objects.js";

const MIN_ROWS = 2, MAX_ROWS = 12; /* rows of calls a lane shows before its depth is expanded */

export const sections = [];

export function addSection(section) {
  sections.push(section);
}

/* How each lane is shown: folded to its overview band, or with its rows of
 * calls, the first `rows` of them (the lane's deepest stack is drawn in the
 * band above them); a folded process shows its header alone. */
export function initLaneViews() {
  const lanes = state.meta.lanes;
  const available = Math.max(200, scroller.clientHeight) - RULER - (state.meta.tracks.length ? TRACK_HEADER + 2 * TRACK : 0) - objects.height();
  const processes = new Set(lanes.map((l) => l.pid)).size;
  const perLane = (available - (processes > 1 ? processes * PROCESS_HEADER : 0)) / Math.max(1, lanes.length) - OVERVIEW - LANE_PAD;
  state.rowCap = Math.min(MAX_ROWS, Math.max(MIN_ROWS, Math.floor(perLane / ROW)));
  state.laneViews = lanes.map(() => ({folded: false, rows: state.rowCap}));
  state.foldedProcesses = new Set();
  state.laneOrder = lanes.map((lane, i) => i);
}

export function buildLayout() {
  const lanes = [], tracks = [], processes = [];
  const several = state.meta.lanes.some((o) => o.pid !== state.meta.lanes[0].pid);
  let y = RULER;
  /* Below a process's threads, its objects alive (objects.js). */
  const objectsOf = (k) => { const pid = state.meta.lanes[state.laneOrder[k]].pid; y = objects.place(pid, y, several && state.foldedProcesses.has(pid)); };
  state.laneOrder.forEach((i, k) => {
    const lane = state.meta.lanes[i];
    if (k > 0 && lane.pid !== state.meta.lanes[state.laneOrder[k - 1]].pid) objectsOf(k - 1);
    /* With more than one process, each process's lanes come as a group under a header. */
    if (several && (k === 0 || lane.pid !== state.meta.lanes[state.laneOrder[k - 1]].pid)) {
      processes.push({lane: i, pid: lane.pid, top: y});
      y += PROCESS_HEADER;
    }
    const view = state.laneViews[i];
    const depths = Math.max(1, lane.depths);
    if (several && state.foldedProcesses.has(lane.pid)) {
      lanes[i] = {index: i, top: y, band: y, rows: y, depths, shown: 0, height: 0, hidden: true};
      return;
    }
    /* The overview band, then a strip for the lane's marks when it has any, then the rows of calls. */
    const band = view.folded ? FOLDED : OVERVIEW, strip = view.folded || !lane.marks ? 0 : MARKS;
    const shown = view.folded ? 0 : Math.min(depths, view.rows);
    const height = band + strip + shown * ROW + (view.folded ? 2 : LANE_PAD);
    lanes[i] = {index: i, top: y, band: y, rows: y + band + strip, depths, shown, height, folded: view.folded};
    y += height;
  });
  if (state.laneOrder.length) objectsOf(state.laneOrder.length - 1);
  if (state.meta.tracks.length) y += TRACK_HEADER;
  state.meta.tracks.forEach((track, i) => {
    tracks.push({index: i, top: y, height: TRACK});
    y += TRACK;
  });
  const labels = $("tl-labels");
  labels.textContent = "";
  for (const section of sections) y = section.layout(y, labels);
  state.layout = {lanes, tracks, processes, height: y + 10};
  $("tl-spacer").style.height = state.layout.height + "px";
  processes.forEach((p) => {
    const lane = state.meta.lanes[p.lane];
    const div = document.createElement("div");
    div.className = "process-label";
    div.dataset.top = p.top + 1;
    div.dataset.pid = p.pid;
    const folded = state.foldedProcesses.has(p.pid);
    div.appendChild(button("fold", folded ? "▸" : "▾", (folded ? "show" : "fold") + " the threads of this process", () => toggleProcess(p.pid)));
    const name = document.createElement("span");
    name.className = "name";
    name.textContent = "process " + lane.pid + " · " + lane.process;
    div.appendChild(name);
    div.title = name.textContent;
    labels.appendChild(div);
  });
  state.laneOrder.forEach((i) => {
    const l = lanes[i];
    if (l.hidden) return;
    const lane = state.meta.lanes[l.index];
    const div = document.createElement("div");
    div.className = "lane-label" + (l.folded ? " folded" : "");
    div.dataset.top = l.top - 1;
    div.dataset.lane = l.index;
    div.title = lane.name + " — pid " + lane.pid + ", tid " + lane.native_tid + "\n" + lane.process +
      "\n" + count(l.depths, "level") + " of calls; the band shows the deepest call at each moment";
    div.appendChild(button("fold", l.folded ? "▸" : "▾", l.folded ? "show the calls" : "fold to the overview band", () => toggleLane(l.index)));
    const name = document.createElement("span");
    name.className = "name";
    name.innerHTML = escapeHtml(lane.name) + (several ? " <small>" + lane.pid + "</small>" : "");
    div.appendChild(name);
    if (state.laneOrder.find((j) => state.meta.lanes[j].pid === lane.pid) !== l.index) {
      div.appendChild(button("raise", "↑", "move this thread to the top" + (several ? " of its process" : ""), () => raiseLane(l.index)));
    }
    if (!l.folded && (l.depths > l.shown || l.shown > state.rowCap)) {
      div.appendChild(button("depth", l.depths > l.shown ? "+" + (l.depths - l.shown) : "−",
        l.depths > l.shown ? "show all " + l.depths + " levels" : "show " + state.rowCap + " levels", () => toggleDepth(l.index)));
    }
    labels.appendChild(div);
  });
  tracks.forEach((t) => {
    const track = state.meta.tracks[t.index];
    const div = document.createElement("div");
    div.className = "track-label";
    div.dataset.top = t.top + 2;
    div.textContent = (track.kind === "parameter" ? "param " : "") + track.name + " · " + state.meta.lanes[track.lane].name;
    div.title = track.name + " (" + track.kind + ", " + state.meta.lanes[track.lane].name + "): " +
      fmtCount(track.samples) + " samples, " + track.min + " to " + track.max;
    labels.appendChild(div);
  });
  objects.labels(labels);
  placeLabels();
}

export function placeLabels() {
  const scroll = scroller.scrollTop;
  for (const div of $("tl-labels").children) {
    const top = +div.dataset.top - scroll;
    div.style.top = top + "px";
    div.style.display = top < RULER - 4 ? "none" : "";
  }
}

/* Where lane i lies in the lanes' box, before scrolling: top, height and anchor (the middle of its overview
   band; of its process's header when the process is folded). */
export function lanePlace(i) {
  const l = state.layout.lanes[i];
  if (!l.hidden) return {top: l.top, height: l.height, anchor: l.band + (l.folded ? FOLDED : OVERVIEW) / 2};
  const p = state.layout.processes.find((o) => o.pid === state.meta.lanes[i].pid);
  return {top: p.top, height: PROCESS_HEADER, anchor: p.top + PROCESS_HEADER / 2};
}

on("layout", buildLayout);

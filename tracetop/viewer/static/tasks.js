/* tasks.js -- asyncio tasks as lanes, a section of the timeline below the threads (layout.js's addSection). A
 * lane per task, named by its Task.get_name(): its steps (the event loop resuming it) as bars in the colour of
 * its coroutine, and between two steps, while it was suspended at an await, a thin dashed line; in the profile
 * tab, a table of the tasks and the await time per coroutine. The server stitches the steps in C (TaskLanes)
 * and joins those under a pixel apart.
 *
 * Exports: start, probe (for tests). */
import {relayout, scheduleDraw} from "./state.js";
import {addSection} from "./layout.js";
import {api} from "./api.js";
import {count, escapeHtml, fmtCount, fmtDuration} from "./format.js";
import {colourOf, nameHtml} from "./names.js";
import {$} from "./dom.js";
const HEADER = 20, LANE = 16, MARGIN = 4;
let lanes = [], steps = null, shown = null, inflight = null, top = 0, drawn = null;

export function start() {
  addSection({layout, draw, tip});
  api("tasks").then((r) => r.json()).then((data) => {
    lanes = data.lanes;
    if (!lanes.length) return;
    relayout();
    profilePanel(data);
  }).catch(() => {});
}

/* The profile tab's per-task view: a row per task, and the await time per coroutine. */
function profilePanel(data) {
  const panel = document.createElement("div");
  panel.className = "panel";
  panel.id = "tasks-panel";
  const cell = (text) => "<td>" + escapeHtml(String(text)) + "</td>";
  panel.innerHTML = '<div class="tasks"><h3>asyncio tasks</h3><table id="tasks-table"><thead><tr><th>Task</th>' +
    "<th>Thread</th><th>Steps</th><th>Running</th><th>Suspended</th><th>First coroutine</th><th>Most time in</th></tr></thead><tbody>" +
    data.lanes.map((l) => "<tr>" + cell(l.name) + cell(l.thread) + cell(fmtCount(l.steps)) + cell(fmtDuration(l.running_ns)) +
      cell(fmtDuration(l.suspended_ns)) + '<td class="name">' + nameHtml(l.coroutine) + '</td><td class="name">' +
      nameHtml(l.top) + "</td></tr>").join("") + "</tbody></table></div>" +
    '<div class="awaits"><h3>Await time per coroutine</h3><table id="awaits-table"><thead><tr><th>Coroutine</th><th>Suspended</th>' +
    "<th>Suspensions</th></tr></thead><tbody>" +
    data.awaits.map((a) => '<tr><td class="name">' + nameHtml(a.coroutine) + "</td>" + cell(fmtDuration(a.suspended_ns)) +
      cell(fmtCount(a.suspensions)) + "</tr>").join("") + "</tbody></table></div>";
  $("profile-tab").appendChild(panel);
}

function layout(y, labels) {
  if (!lanes.length) return y;
  top = y;
  const header = document.createElement("div");
  header.className = "track-label";
  header.dataset.top = y + 3;
  header.textContent = "asyncio tasks";
  labels.appendChild(header);
  lanes.forEach((lane, i) => {
    const div = document.createElement("div");
    div.className = "track-label task-label";
    div.dataset.top = y + HEADER + i * LANE;
    div.dataset.task = lane.name;
    div.textContent = lane.name;
    div.title = lane.name + " — task of pid " + lane.pid + ", thread " + lane.thread + "\n" +
      count(lane.steps, "step") + ", running " + fmtDuration(lane.running_ns) + ", suspended " +
      fmtDuration(lane.suspended_ns) + "\nfirst coroutine " + lane.coroutine + "; most time in " + lane.top;
    labels.appendChild(div);
  });
  return y + HEADER + lanes.length * LANE + MARGIN;
}

/* The steps fetched cover the view at about its resolution. */
function covers(view) {
  if (!shown) return false;
  const perPixel = (view.t1 - view.t0) / view.width;
  return view.t0 >= shown.t0 && view.t1 <= shown.t1 && perPixel >= shown.gap / 2 && perPixel <= shown.gap * 2;
}

/* Three views wide, so that a pan is drawn at once. */
function fetchFor(view) {
  const span = view.t1 - view.t0, width = Math.max(1, Math.round(view.width * 3));
  const t0 = Math.max(0, Math.floor(view.t0 - span)), t1 = Math.max(t0 + 1, Math.ceil(view.t1 + span));
  const key = t0 + "/" + t1 + "/" + width;
  if (inflight === key) return;
  inflight = key;
  api("task_steps", {t0, t1, width}).then((r) => r.json()).then((data) => {
    if (inflight !== key) return;
    steps = data;
    shown = {t0, t1, gap: (t1 - t0) / width};
    inflight = null;
    scheduleDraw();
  }).catch(() => { if (inflight === key) inflight = null; });
}

function laneTop(i, view) { return top - view.scroll + HEADER + i * LANE; }

function draw(g, view) {
  if (!lanes.length) return;
  drawn = view;
  if (!covers(view)) fetchFor(view);
  const headerTop = top - view.scroll;
  g.fillStyle = "#6b6b70";
  g.font = "11px system-ui, sans-serif";
  g.fillText("asyncio tasks: running, - - - suspended (awaiting)", view.left + 4, headerTop + HEADER / 2);
  lanes.forEach((lane, i) => {
    const y = laneTop(i, view);
    if (y > view.height || y + LANE < view.top) return;
    g.fillStyle = i % 2 ? "#f7f7f9" : "#fff";
    g.fillRect(view.left, y, view.width, LANE);
    const s = steps && steps[i];
    if (!s) return;
    const n = s.length - (s.length % 2);
    g.strokeStyle = "#8a8a93";
    g.setLineDash([3, 3]);
    g.beginPath();
    for (let k = 1; k + 1 < n; k += 2) {
      g.moveTo(view.xOf(s[k]), y + LANE / 2 + 0.5);
      g.lineTo(view.xOf(s[k + 1]), y + LANE / 2 + 0.5);
    }
    g.stroke();
    g.setLineDash([]);
    g.fillStyle = colourOf(lane.coroutine);
    for (let k = 0; k < n; k += 2) {
      const x0 = view.xOf(s[k]), x1 = view.xOf(s[k + 1]);
      g.fillRect(x0, y + 2, Math.max(1, x1 - x0), LANE - 4);
    }
  });
}

/* What lies under the mouse: a step, or a suspension between two. */
function at(x, y, view) {
  const i = Math.floor((y - (top - view.scroll) - HEADER) / LANE);
  if (!lanes.length || i < 0 || i >= lanes.length || x < view.left || !steps || !steps[i]) return null;
  const s = steps[i], n = s.length - (s.length % 2), slack = (view.t1 - view.t0) / view.width * 2;
  const t = view.t0 + (x - view.left) / view.width * (view.t1 - view.t0);
  for (let k = 0; k < n; k += 2) {
    if (t >= s[k] - slack && t <= s[k + 1] + slack) return {lane: i, kind: "running", begin: s[k], end: s[k + 1]};
    if (k + 2 < n && t > s[k + 1] && t < s[k + 2]) return {lane: i, kind: "suspended", begin: s[k + 1], end: s[k + 2]};
  }
  return null;
}

function tip(x, y, view) {
  const hit = at(x, y, view);
  if (!hit) return null;
  const lane = lanes[hit.lane], length = hit.end - hit.begin;
  if (hit.kind === "suspended") return {title: lane.name, lines: ["suspended (awaiting) " + fmtDuration(length)]};
  return {title: lane.name, lines: ["running " + fmtDuration(length) + " (steps under a pixel apart joined)",
    "coroutine " + lane.coroutine]};
}

/* For tests: the lanes, and the suspensions drawn in a lane now as [begin, end] pairs. */
export const probe = {
  lanes: () => lanes,
  ready: () => steps !== null,
  /* Where time t of task `name`'s lane was last drawn: {x, y} in client coordinates. */
  point(name, t) {
    const i = lanes.findIndex((lane) => lane.name === name);
    if (i < 0 || !drawn) return null;
    const box = $("tl-canvas").getBoundingClientRect();
    return {x: box.left + drawn.xOf(t), y: box.top + laneTop(i, drawn) + LANE / 2};
  },
  suspensions(name) {
    const i = lanes.findIndex((lane) => lane.name === name), s = i >= 0 && steps ? steps[i] : null;
    const out = [];
    for (let k = 1; s && k + 1 < s.length && s[k + 1] !== null; k += 2) out.push([s[k], s[k + 1]]);
    return out;
  },
};

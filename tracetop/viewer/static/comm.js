/* comm.js -- the viewer's MPI communication view, for an experiment whose
 * processes are MPI ranks: over the timeline, a line from each message's
 * send to its receive between the ranks' lanes and a box across the lanes
 * of the ranks of each collective operation; below it, the communication
 * matrix (messages and bytes per rank pair; a cell lists its messages) and
 * per-communicator statistics, for the whole run or the selected range.
 *
 * Matching and counting are done in C (mpi_view.h); the server answers
 * api/comm_* with what a range holds, a bounded number of lines and boxes
 * spread over it. Drawn as an overlay of timeline.js.
 *
 * Exports: start (once the experiment is loaded), probe (for tests). */
import {scheduleDraw, setLaneOrder, setView, state} from "./state.js";
import {xOf} from "./geometry.js";
import {lanePlace as placeOfLane} from "./layout.js";
import {addOverlay} from "./timeline.js";
import {api} from "./api.js";
import {count, escapeHtml, fmtBytes, fmtCount, fmtDuration, fmtTime} from "./format.js";
import {$} from "./dom.js";
const comm = {
  meta: null,
  laneOf: new Map(),  /* "pid:stream" -> lane index */
  rankOf: new Map(),  /* pid -> world rank */
  shown: true,        /* lines and boxes drawn */
  data: null,         /* {t0, t1, lines, collectives} for a window around the view */
  loading: false,
  selection: undefined, /* the range the matrix is for (null: whole run) */
  matrixTimer: 0,
  pair: null,         /* [sender, receiver] listed */
  drawn: {lines: [], boxes: []}, /* where the last frame drew them, for tooltips */
};

const get = (name, params) => api(name, params).then((r) => r.json());

function commName(i) {
  const c = comm.meta.communicators[i];
  if (c.kind === "world") return "MPI_COMM_WORLD";
  if (c.kind === "self") return "MPI_COMM_SELF";
  return "comm " + i + (c.members ? " (ranks " + c.members.join(",") + ")" : " (" + c.size + " ranks)");
}

/* ---- the timeline ---- */

function lanePlace(pid, stream) {
  const lane = comm.laneOf.get(pid + ":" + stream);
  return lane === undefined ? null : placeOfLane(lane);
}

/* A window around the view, as the timeline fetches its spans; a new one when the view leaves it or
 * zooms well into it while it held more than it gave. */
function ensureData() {
  const d = comm.data, span = state.t1 - state.t0;
  const inside = d && d.t0 <= Math.max(state.begin, state.t0) && d.t1 >= Math.min(state.end, state.t1);
  const truncated = d && (d.lines.total > d.lines.rows.length || d.collectives.total > d.collectives.rows.length);
  if ((inside && !(truncated && span < (d.t1 - d.t0) / 8)) || comm.loading) return;
  const t0 = Math.max(0, Math.floor(state.t0 - span)), t1 = Math.ceil(state.t1 + span);
  comm.loading = true;
  Promise.all([get("comm_lines", {t0, t1}), get("comm_collectives", {t0, t1})]).then(([lines, collectives]) => {
    comm.data = {t0, t1, lines, collectives};
  }).catch((error) => { $("comm-info").textContent = error.message; }).finally(() => {
    comm.loading = false;
    scheduleDraw();
  });
}

function drawCollectives(g, scroll) {
  for (const [begin, end, c, op, root, calls] of comm.data.collectives.rows) {
    const places = calls.map((call) => lanePlace(call[1], call[2])).filter((p) => p);
    if (!places.length) continue;
    const top = Math.min(...places.map((p) => p.top)) - scroll;
    const bottom = Math.max(...places.map((p) => p.top + p.height)) - scroll;
    const x0 = xOf(begin), x1 = Math.max(x0 + 2, xOf(end));
    comm.drawn.boxes.push([x0, top, x1, bottom, [begin, end, c, op, root, calls]]);
    g.fillStyle = "rgba(232, 122, 24, 0.13)";
    g.fillRect(x0, top, x1 - x0, bottom - top);
    g.strokeStyle = "rgba(196, 90, 0, 0.75)";
    g.lineWidth = 1;
    g.strokeRect(x0 + 0.5, top + 0.5, x1 - x0 - 1, bottom - top - 1);
    /* Each rank's own call, on its band. */
    g.fillStyle = "rgba(196, 90, 0, 0.85)";
    for (const call of calls) {
      const p = lanePlace(call[1], call[2]);
      if (p) g.fillRect(xOf(call[3]), p.anchor - scroll - 2, Math.max(1, xOf(call[4]) - xOf(call[3])), 4);
    }
    if (x1 - x0 > 40) {
      g.fillStyle = "#8a3d00";
      g.font = "10px system-ui, sans-serif";
      g.fillText(op + (root === null ? "" : " root " + root), x0 + 3, top + 7);
    }
  }
}

function drawLines(g, scroll) {
  g.lineWidth = 1.2;
  for (const row of comm.data.lines.rows) {
    const from = lanePlace(row[4], row[5]), to = lanePlace(row[6], row[7]);
    if (!from || !to) continue;
    const x0 = xOf(row[0]), y0 = from.anchor - scroll, x1 = xOf(row[1]), y1 = to.anchor - scroll;
    comm.drawn.lines.push([x0, y0, x1, y1, row]);
    g.strokeStyle = g.fillStyle = "rgba(16, 16, 24, 0.85)";
    g.beginPath();
    g.moveTo(x0, y0);
    g.lineTo(x1, y1);
    g.stroke();
    g.beginPath();
    g.arc(x0, y0, 2, 0, 2 * Math.PI);
    g.fill();
    /* An arrowhead at the receive. */
    const a = Math.atan2(y1 - y0, x1 - x0);
    g.beginPath();
    g.moveTo(x1, y1);
    g.lineTo(x1 - 7 * Math.cos(a - 0.4), y1 - 7 * Math.sin(a - 0.4));
    g.lineTo(x1 - 7 * Math.cos(a + 0.4), y1 - 7 * Math.sin(a + 0.4));
    g.closePath();
    g.fill();
  }
}

/* "rank r" on the header of each process that is a rank (the headers are made anew with each layout). */
function labelRanks() {
  for (const div of document.querySelectorAll(".process-label:not([data-rank])")) {
    const rank = comm.rankOf.get(+div.dataset.pid);
    div.dataset.rank = rank === undefined ? "" : rank;
    if (rank === undefined) continue;
    const name = div.querySelector(".name");
    name.textContent = "rank " + rank + " · " + name.textContent;
    div.title = name.textContent;
  }
}

/* The tooltip of a message line within 4 px of (x, y), else (alone) of a collective's box around it. */
function tip(x, y, alone) {
  if (!comm.shown || !comm.meta) return null;
  const begin = state.begin;
  for (const [x0, y0, x1, y1, m] of comm.drawn.lines) {
    const dx = x1 - x0, dy = y1 - y0, length = dx * dx + dy * dy;
    const k = length ? Math.max(0, Math.min(1, ((x - x0) * dx + (y - y0) * dy) / length)) : 0;
    if (Math.hypot(x - x0 - k * dx, y - y0 - k * dy) > 4) continue;
    const took = m[1] - m[0];
    return "<div class='name'>message: rank " + m[2] + " → rank " + m[3] + "</div><div>" + escapeHtml(commName(m[8])) +
      ", tag " + m[9] + ", " + fmtCount(m[10]) + " bytes</div><div class='sub'>sent " + fmtTime(m[0] - begin, Math.abs(took) || 1000) +
      ", received " + fmtTime(m[1] - begin, Math.abs(took) || 1000) + " (" + fmtDuration(Math.abs(took)) + ")</div>";
  }
  if (!alone) return null;
  for (const [x0, top, x1, bottom, [b, e, c, op, root, calls]] of comm.drawn.boxes) {
    if (x < x0 - 2 || x > x1 + 2 || y < top || y > bottom) continue;
    const sent = calls.reduce((s, call) => s + call[5], 0);
    return "<div class='name'>" + escapeHtml(op) + (root === null ? "" : ", root rank " + root) + "</div><div>" +
      escapeHtml(commName(c)) + ", " + count(calls.length, "rank") + ", " + fmtCount(sent) + " bytes sent</div><div class='sub'>" +
      fmtDuration(e - b) + " from the first rank's call to the last one's end</div>";
  }
  return null;
}

const overlay = {
  tip,
  draw(g, scroll) {
    if (!comm.meta || !state.layout) return;
    labelRanks();
    const now = state.selection, was = comm.selection;
    if (now !== was && !(now && was && now[0] === was[0] && now[1] === was[1])) {
      /* The matrix follows the selection once it stops changing (it changes with every move of a drag). */
      comm.selection = state.selection;
      clearTimeout(comm.matrixTimer);
      comm.matrixTimer = setTimeout(showMatrix, 150);
    }
    if (!comm.shown) return;
    ensureData();
    comm.drawn = {lines: [], boxes: []};
    if (!comm.data) return;
    drawCollectives(g, scroll);
    drawLines(g, scroll);
    const lines = comm.data.lines, collectives = comm.data.collectives;
    $("comm-info").textContent = lines.rows.length + (lines.total > lines.rows.length ? " of " + fmtCount(lines.total) : "") +
      " messages, " + collectives.rows.length + (collectives.total > collectives.rows.length ? " of " + fmtCount(collectives.total) : "") +
      " collectives";
  },
};

/* ---- the matrix and the communicators ---- */

function range() {
  const s = comm.selection;
  return s ? {t0: Math.max(0, Math.floor(s[0])), t1: Math.ceil(s[1])} : {};
}

function rangeText() {
  const s = comm.selection, begin = state.begin;
  return s ? "selected range " + fmtTime(s[0] - begin, s[1] - s[0]) + " – " + fmtTime(s[1] - begin, s[1] - s[0]) : "whole run";
}

function showMatrix() {
  const body = $("comm-body"), asked = comm.selection;
  get("comm_matrix", range()).then((answer) => {
    if (comm.selection !== asked) return;
    const n = comm.meta.world_size, cells = new Map();
    let max = 1, messages = 0, bytes = 0;
    for (const [s, r, count, b] of answer.pairs) {
      cells.set(s * n + r, [count, b]);
      max = Math.max(max, b);
      messages += count;
      bytes += b;
    }
    let html = "<div class='comm-sum'>" + escapeHtml(rangeText() + ": " + count(messages, "message") + ", " + fmtBytes(bytes)) +
      " <span class='hint'>sender ↓ receiver →; click a cell for its messages</span></div>";
    html += "<table class='comm-matrix'><thead><tr><th>from \\ to</th>";
    for (let r = 0; r < n; r++) html += "<th>" + r + "</th>";
    html += "</tr></thead><tbody>";
    for (let s = 0; s < n; s++) {
      html += "<tr><th>" + s + "</th>";
      for (let r = 0; r < n; r++) {
        const cell = cells.get(s * n + r);
        if (!cell) { html += "<td class='none'></td>"; continue; }
        html += "<td data-sender='" + s + "' data-receiver='" + r + "' data-messages='" + cell[0] + "' data-bytes='" + cell[1] +
          "' title='" + s + " → " + r + ": " +
          count(cell[0], "message") + ", " + cell[1] + " bytes'>" + fmtCount(cell[0]) + "<small>" + fmtBytes(cell[1]) + "</small></td>";
      }
      html += "</tr>";
    }
    html += "</tbody></table><div id='comm-pair'></div>" + communicatorTable(answer.communicators);
    body.className = "";
    body.innerHTML = html;
    /* The heat of a cell, its share of the most bytes a pair sent (set here: the page allows no inline style). */
    for (const td of body.querySelectorAll("td[data-bytes]")) td.style.background = "rgba(43, 108, 176, " + (0.1 + 0.6 * td.dataset.bytes / max).toFixed(3) + ")";
    if (comm.pair) showPair(...comm.pair);
  }).catch((error) => { body.textContent = error.message; });
}

function communicatorTable(stats) {
  let html = "<table class='comm-comms'><thead><tr><th>communicator</th><th>ranks</th><th>messages</th><th>bytes</th>" +
    "<th>collectives</th><th>time in them</th></tr></thead><tbody>";
  stats.forEach((s, i) => {
    if (!s.messages && !s.collectives) return;
    html += "<tr data-comm='" + i + "'><td>" + escapeHtml(commName(i)) + "</td><td>" + comm.meta.communicators[i].size +
      "</td><td>" + fmtCount(s.messages) + "</td><td>" + fmtBytes(s.bytes) + "</td><td>" + fmtCount(s.collectives) +
      "</td><td>" + fmtDuration(s.collective_ns) + "</td></tr>";
  });
  return html + "</tbody></table>";
}

function showPair(sender, receiver) {
  comm.pair = [sender, receiver];
  const box = $("comm-pair"), asked = comm.selection;
  for (const td of document.querySelectorAll(".comm-matrix td.chosen")) td.classList.remove("chosen");
  const td = document.querySelector(".comm-matrix td[data-sender='" + sender + "'][data-receiver='" + receiver + "']");
  if (td) td.classList.add("chosen");
  get("comm_pair", Object.assign({sender, receiver}, range())).then((answer) => {
    if (comm.selection !== asked) return;
    const begin = state.begin;
    let html = "<div class='comm-sum'>" + escapeHtml("rank " + sender + " → rank " + receiver + ": " + count(answer.total, "message") +
      (answer.total > answer.rows.length ? ", the first " + answer.rows.length + " listed" : "")) +
      " <span class='hint'>click one to see it on the timeline</span></div><table class='comm-messages'><thead><tr><th>sent</th>" +
      "<th>received</th><th>took</th><th>communicator</th><th>tag</th><th>bytes</th></tr></thead><tbody>";
    for (const m of answer.rows) {
      const took = m[1] - m[0];
      html += "<tr data-send='" + m[0] + "' data-recv='" + m[1] + "'><td>" + fmtTime(m[0] - begin, Math.abs(took) || 1000) + "</td><td>" +
        (m[11] || m[1] !== m[0] ? fmtTime(m[1] - begin, Math.abs(took) || 1000) : "not received") + "</td><td>" + fmtDuration(Math.abs(took)) +
        "</td><td>" + escapeHtml(commName(m[8])) + "</td><td>" + m[9] + "</td><td>" + fmtCount(m[10]) + "</td></tr>";
    }
    box.innerHTML = html + "</tbody></table>";
  }).catch((error) => { box.textContent = error.message; });
}

function setUp() {
  state.meta.lanes.forEach((lane, i) => {
    const key = lane.pid + ":" + lane.stream;
    if (!comm.laneOf.has(key)) comm.laneOf.set(key, i);
  });
  for (const [rank, pid] of comm.meta.ranks) comm.rankOf.set(pid, rank);
  /* Ranks top to bottom in rank order, as Vampir shows them (other processes after them, as they were). */
  const rankOf = (i) => { const r = comm.rankOf.get(state.meta.lanes[i].pid); return r === undefined ? Infinity : r; };
  setLaneOrder(state.laneOrder.map((lane, k) => [rankOf(lane), k, lane]).sort((a, b) => a[0] - b[0] || a[1] - b[1]).map((o) => o[2]));
  /* The toolbar's switch and count. */
  const toolbar = document.querySelector("#timeline-tab .toolbar");
  const label = document.createElement("label");
  label.className = "comm-switch";
  label.title = "draw MPI messages (a line from send to receive) and collective operations (a box across their ranks)";
  label.innerHTML = "<input type='checkbox' id='comm-shown' checked> MPI <span id='comm-info' class='hint'></span>";
  toolbar.insertBefore(label, toolbar.querySelector(".hint"));
  $("comm-shown").addEventListener("change", (e) => { comm.shown = e.target.checked; scheduleDraw(); });
  /* The panel, beside the details and the selection. */
  const panel = document.createElement("div");
  panel.className = "panel";
  panel.id = "comm";
  panel.innerHTML = "<h3>Communication <span class='hint'>" + count(comm.meta.world_size, "rank") + ", " +
    count(comm.meta.messages, "message") + ", " + count(comm.meta.collectives, "collective operation") +
    (comm.meta.unmatched_sends || comm.meta.unmatched_receives ? "; unmatched: " + comm.meta.unmatched_sends + " sends, " +
      comm.meta.unmatched_receives + " receives" : "") + "</span></h3><div id='comm-body' class='empty'>Loading…</div>";
  $("bottom").appendChild(panel);
  /* Room for a matrix of a few ranks below the timeline (the splitter still moves). */
  const bottom = $("bottom");
  if (bottom.getBoundingClientRect().height < 280) {
    bottom.style.height = Math.min(280, window.innerHeight / 3) + "px";
    window.dispatchEvent(new Event("resize"));
  }
  panel.addEventListener("click", (e) => {
    const cell = e.target.closest("td[data-sender]");
    if (cell) return showPair(+cell.dataset.sender, +cell.dataset.receiver);
    const message = e.target.closest("tr[data-send]");
    if (message) {
      const a = Math.min(+message.dataset.send, +message.dataset.recv), b = Math.max(+message.dataset.send, +message.dataset.recv);
      const margin = Math.max(b - a, 2000) * 2;
      setView(a - margin, b + margin);
    }
  });
  addOverlay(overlay);
}

/* Once the viewer has its experiment: set up when it has MPI ranks, else nothing. */
export function start() {
  get("comm_meta").then((meta) => {
    if (!meta.world_size) return;
    comm.meta = meta;
    setUp();
  }).catch((error) => { $("status").textContent = "MPI communication: " + error.message; });
}

/* For tests: what is drawn (the answers for the window around the view), and the rank of a pid. */
export const probe = {state: comm, rankOf: (pid) => comm.rankOf.get(pid), showPair};

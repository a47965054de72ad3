/* live.js -- the live page (`tracetop view --live`): the running programs'
 * timeline per thread (scrolling with time; pause, scroll back within the
 * window, open the recorded part in the viewer), their stacks now, top's
 * table, counters and parameters as tracks, measurement on/off; where a
 * program counts objects (--objects), top's rows of types as bars and a
 * dial whose needle winds once per NOVA_TURN lists made.
 *
 * The server (tracetop/viewer/live.py) sends server-sent events: a "hello"
 * with the window so far, then a "frame" ten times a second with what is
 * new. Times are milliseconds on the server's clock. What is older than the
 * window is dropped here too, so the page's memory stays bounded.
 *
 * Exports nothing. For tests and the bench (and for nothing else) it sets
 * window.ttLive: the state, the last frames' draw times, when each process
 * was first seen, and the dial's reading (nova). */
import {escapeHtml, fmtCount, fmtDuration} from "./format.js";
import {colourOf} from "./names.js";
import {$} from "./dom.js";

const LANE_ROW = 14, PROCESS_ROW = 18, TRACK_ROW = 34, LABELS = 170, MAX_DEPTH = 40;
const MAX_SPANS = 300000, MAX_SAMPLES = 100000, MIN_VIEW_MS = 5;
const NOVA_TURN = 10000, OBJECT_ROWS = 30;

const state = {
  windowMs: 60000, functions: [], processes: new Map(), rows: [],
  objects: null,         // top's rows of types: [type, created, destroyed, alive, created/s, destroyed/s]
  lanes: new Map(),      // "pid/stream" -> {pid, stream, spans: [], depth}
  tracks: new Map(),     // "pid/name" -> {pid, name, samples: []}
  spanCount: 0, sampleCount: 0,
  serverNow: 0, receivedAt: 0, frames: 0,
  paused: false, viewEnd: 0, viewSpan: 10000,
  rates: new Map(),      // pid -> {events, t, rate}
  lastStacks: new Map(), // "pid/stream" -> the stack shown last
};
const frameTimes = [];
const live = window.ttLive = {state, frameTimes, firstSeen: new Map()};

const canvas = $("tl-canvas"), ctx = canvas.getContext("2d");

/* The server's time now, between frames too. */
function now() {
  return state.serverNow + (state.receivedAt ? performance.now() - state.receivedAt : 0);
}

function fname(f) {
  const fn = state.functions[f];
  return fn ? fn[0] : "?";
}

function laneOf(pid, stream) {
  const key = pid + "/" + stream;
  let lane = state.lanes.get(key);
  if (!lane) {
    lane = {pid, stream, spans: [], depth: 1};
    state.lanes.set(key, lane);
  }
  return lane;
}

function addSpans(spans) {
  for (const s of spans) {
    const lane = laneOf(s[0], s[1]);
    lane.spans.push(s);
    if (s[3] + 1 > lane.depth) lane.depth = Math.min(s[3] + 1, MAX_DEPTH);
  }
  state.spanCount += spans.length;
}

function addSamples(samples) {
  for (const s of samples) {
    const key = s[0] + "/" + s[2];
    let track = state.tracks.get(key);
    if (!track) state.tracks.set(key, track = {pid: s[0], name: s[2], samples: []});
    track.samples.push(s);
  }
  state.sampleCount += samples.length;
}

/* Forgets what left the window, and the oldest beyond the bounds. */
function prune() {
  const oldest = state.serverNow - state.windowMs;
  const over = Math.max(0, state.spanCount - MAX_SPANS);
  let count = 0;
  for (const lane of state.lanes.values()) {
    let cut = 0;
    const drop = over ? Math.ceil(over * lane.spans.length / state.spanCount) : 0;
    while (cut < lane.spans.length && (lane.spans[cut][5] < oldest || cut < drop)) cut++;
    if (cut) lane.spans.splice(0, cut);
    count += lane.spans.length;
  }
  state.spanCount = count;
  count = 0;
  for (const track of state.tracks.values()) {
    let cut = 0;
    while (cut < track.samples.length && (track.samples[cut][3] < oldest || track.samples.length - cut > MAX_SAMPLES)) cut++;
    if (cut) track.samples.splice(0, cut);
    count += track.samples.length;
  }
  state.sampleCount = count;
}

function takeProcesses(processes) {
  for (const p of processes) {
    if (!live.firstSeen.has(p.pid)) live.firstSeen.set(p.pid, performance.now());
    const previous = state.rates.get(p.pid);
    if (!previous || state.serverNow - previous.t >= 1000) {
      const rate = previous ? (p.events - previous.events) / ((state.serverNow - previous.t) / 1000) : 0;
      state.rates.set(p.pid, {events: p.events, t: state.serverNow, rate: Math.max(0, rate)});
    }
    for (const th of p.threads) laneOf(p.pid, th.stream).depth = Math.max(laneOf(p.pid, th.stream).depth, Math.min(th.stack.length, MAX_DEPTH));
    state.processes.set(p.pid, p);
  }
}

function onMessage(event) {
  const m = JSON.parse(event.data);
  if (m.type === "hello") {
    state.windowMs = m.window_ms;
    state.functions = m.functions;
    state.lanes.clear();
    state.tracks.clear();
    state.spanCount = state.sampleCount = 0;
    addSpans(m.spans);
    addSamples(m.samples);
    if (m.processes) takeProcesses(m.processes);
    if (m.rows) state.rows = m.rows;
    if (m.objects !== undefined) state.objects = m.objects;
    if (m.scope) state.scope = m.scope;
    return;
  }
  state.serverNow = m.t;
  state.receivedAt = performance.now();
  state.frames++;
  for (let i = 0; i < m.functions.length; i++) state.functions[m.fbase + i] = m.functions[i];
  addSpans(m.spans);
  addSamples(m.samples);
  takeProcesses(m.processes);
  state.rows = m.rows;
  state.objects = m.objects;
  state.scope = m.scope;
  prune();
  showProcesses();
  showTop();
  showObjects();
  showStacks();
  $("status").textContent = "live";
  $("status").className = "";
}

/* ---- processes: state, numbers, on/off, open the recorded part ---- */

function baseName(path) {
  const parts = String(path).split("/");
  return parts[parts.length - 1] || path;
}

function showProcesses() {
  const box = $("processes");
  const pids = [...state.processes.keys()].sort((a, b) => a - b);
  for (const el of [...box.children]) if (!state.processes.has(Number(el.dataset.pid))) el.remove();
  let events = 0, drops = 0;
  for (const pid of pids) {
    const p = state.processes.get(pid);
    let el = box.querySelector(`[data-pid="${pid}"]`);
    if (!el) {
      el = document.createElement("div");
      el.className = "process";
      el.dataset.pid = pid;
      el.innerHTML = '<span class="name"></span><span class="state"></span><span class="numbers"></span>' +
        '<button class="switch"></button><button class="open">Open the recorded part</button>';
      el.querySelector(".switch").addEventListener("click", () => toggle(pid));
      el.querySelector(".open").addEventListener("click", () => openRecorded(pid));
      box.appendChild(el);
    }
    const rate = state.rates.get(pid);
    el.querySelector(".name").textContent = baseName(p.name) + " (" + pid + ")";
    el.querySelector(".state").textContent = p.pending ? "switching…" : p.state;
    el.querySelector(".numbers").textContent = fmtCount(rate ? rate.rate : 0) + " events/s · drops " +
      approx(p.dropped) + (p.lost ? " · not drawn " + fmtCount(p.lost) : "");
    const button = el.querySelector(".switch");
    const running = p.state === "measuring" || p.state === "not measuring";
    button.disabled = !running;
    button.textContent = p.state === "measuring" ? "Measurement on" : "Measurement off";
    button.className = "switch" + (p.state === "measuring" ? " on" : "");
    events += p.events;
    drops += p.dropped;
  }
  $("summary").textContent = fmtCount(pids.length) + (pids.length === 1 ? " process · " : " processes · ") +
    fmtCount(events) + " events read · " + approx(drops) + " dropped";
}

// Drops are counted exactly in bytes; in events at the bytes per event read: "~", as top shows them.
function approx(dropped) {
  return (dropped ? "~" : "") + fmtCount(dropped);
}

async function toggle(pid) {
  const p = state.processes.get(pid);
  const on = p && p.state === "measuring" ? 0 : 1;
  const answer = await (await fetch(`api/switch?pid=${pid}&on=${on}`)).json();
  if (answer.error) problem(answer.error);
  else if (p) p.state = answer.measuring ? "measuring" : "not measuring";
  showProcesses();
}

async function openRecorded(pid) {
  const answer = await (await fetch(`api/open?pid=${pid}`)).json();
  if (answer.error) problem(answer.error);
  else window.open(answer.url, "_blank", "noopener");
}

function problem(text) {
  $("status").textContent = text;
  $("status").className = "problem";
}

/* ---- top's table ---- */

/* The table's scope, as the server applies it: [0, -1] all, [pid, -1] a process, [pid, stream] a thread. */
function scopeKey(pid, stream) { return pid ? (stream >= 0 ? pid + ":" + stream : String(pid)) : "0"; }

function showScope() {
  const select = $("top-scope");
  const options = [["0", "all processes, all threads"]];
  for (const [pid, p] of state.processes) {
    options.push([scopeKey(pid, -1), `${baseName(p.name)} (${pid}), all threads`]);
    for (const th of p.threads) options.push([scopeKey(pid, th.stream), `  ${th.name || "thread " + th.stream} (${pid})`]);
  }
  const keys = options.map((o) => o[0]).join();
  if (select.dataset.keys !== keys) {
    select.replaceChildren(...options.map(([value, text]) => new Option(text, value)));
    select.dataset.keys = keys;
  }
  const key = state.scope ? scopeKey(state.scope[0], state.scope[1]) : "0";
  if (select.value !== key && document.activeElement !== select) select.value = key;
}

$("top-scope").addEventListener("change", (e) => {
  const [pid, stream] = e.target.value.split(":");
  fetch(`api/top?pid=${pid}` + (stream !== undefined ? `&stream=${stream}` : ""));
});

function showTop() {
  showScope();
  const body = $("top").tBodies[0];
  const rows = state.rows.slice(0, 60);
  while (body.rows.length > rows.length) body.deleteRow(-1);
  while (body.rows.length < rows.length) {
    const tr = body.insertRow();
    for (let i = 0; i < 7; i++) tr.insertCell();
  }
  rows.forEach((r, i) => {
    const fn = state.functions[r[0]] || ["?", "", 0];
    const cells = body.rows[i].cells;
    const text = [r[4].toFixed(1), r[2].toFixed(3), r[3].toFixed(3), r[5].toFixed(1), String(r[1]), fn[0],
                  fn[1] ? baseName(fn[1]) + ":" + fn[2] : "-"];
    for (let c = 0; c < 7; c++) if (cells[c].textContent !== text[c]) cells[c].textContent = text[c];
    cells[5].title = fn[1] ? `${fn[0]} (${fn[1]}:${fn[2]})` : fn[0];
    cells[6].title = fn[1] ? fn[1] + ":" + fn[2] : "";
  });
}

/* ---- objects: a row of bars per type, and the dial of lists made ---- */

/* As top writes counts: 1234, 12.3k, 4.5M, 6.7G. */
function compact(n) {
  const a = Math.abs(n), sign = n < 0 ? "-" : "";
  if (a < 10000) return sign + Math.round(a);
  if (a < 1e6) return sign + (a / 1e3).toFixed(1) + "k";
  if (a < 1e9) return sign + (a / 1e6).toFixed(1) + "M";
  return sign + (a / 1e9).toFixed(1) + "G";
}

function showObjects() {
  const panel = $("objects-panel");
  panel.hidden = !state.objects;
  if (!state.objects) return;
  const rows = state.objects.slice(0, OBJECT_ROWS);
  let rate = 0, alive = 0;
  for (const r of rows) {
    rate = Math.max(rate, r[4], r[5]);
    alive = Math.max(alive, r[3]);
  }
  const body = $("objects").tBodies[0];
  while (body.rows.length > rows.length) body.deleteRow(-1);
  while (body.rows.length < rows.length) {
    const tr = body.insertRow();
    for (let i = 0; i < 5; i++) tr.insertCell();
    tr.cells[4].innerHTML = '<div class="bar created"></div><div class="bar destroyed"></div><div class="bar alive"></div>';
  }
  const share = (v, most) => (most > 0 && v > 0 ? Math.max(0.5, 100 * v / most) : 0) + "%";
  rows.forEach((r, i) => {
    const tr = body.rows[i], cells = tr.cells;
    tr.dataset.type = r[0];
    const text = [r[0], compact(r[4]), compact(r[5]), compact(r[3])];
    for (let c = 0; c < 4; c++) if (cells[c].textContent !== text[c]) cells[c].textContent = text[c];
    const bars = cells[4].children;
    bars[0].style.width = share(r[4], rate);
    bars[1].style.width = share(r[5], rate);
    bars[2].style.width = share(r[3], alive);
    tr.title = `${r[0]}: ${fmtCount(r[1])} made, ${fmtCount(r[2])} freed since the server attached, ` +
      `${fmtCount(r[3])} alive`;
  });
  const list = state.objects.find((r) => r[0] === "list");
  drawNova(list ? list[1] : 0, list ? list[4] : 0);
}

/* The needle turns once per NOVA_TURN lists made; the ring fills with the rate. */
function drawNova(made, perSecond) {
  const c = $("nova-canvas"), g = c.getContext("2d"), dpr = window.devicePixelRatio || 1;
  const size = 130;
  if (c.width !== size * dpr) c.width = c.height = size * dpr;
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, size, size);
  const r = size / 2 - 8, cx = size / 2, cy = size / 2;
  g.lineWidth = 6;
  g.strokeStyle = "#e4e4e8";
  g.beginPath();
  g.arc(cx, cy, r, 0, 2 * Math.PI);
  g.stroke();
  const fill = Math.min(1, Math.log10(1 + perSecond) / 7);
  g.strokeStyle = "#2f855a";
  g.beginPath();
  g.arc(cx, cy, r, -Math.PI / 2, -Math.PI / 2 + fill * 2 * Math.PI);
  g.stroke();
  g.strokeStyle = "#6b6b70";
  g.lineWidth = 1;
  for (let i = 0; i < 10; i++) {
    const a = i / 10 * 2 * Math.PI - Math.PI / 2;
    g.beginPath();
    g.moveTo(cx + Math.cos(a) * (r - 10), cy + Math.sin(a) * (r - 10));
    g.lineTo(cx + Math.cos(a) * (r - 4), cy + Math.sin(a) * (r - 4));
    g.stroke();
  }
  const angle = (made % NOVA_TURN) / NOVA_TURN * 2 * Math.PI - Math.PI / 2;
  g.strokeStyle = "#b42318";
  g.lineWidth = 3;
  g.beginPath();
  g.moveTo(cx, cy);
  g.lineTo(cx + Math.cos(angle) * (r - 14), cy + Math.sin(angle) * (r - 14));
  g.stroke();
  $("nova-text").textContent = "lists: " + fmtCount(made) + " made · " + fmtCount(Math.round(perSecond)) +
    "/s (a turn: " + fmtCount(NOVA_TURN) + ")";
  live.nova = {made, perSecond, angle};
}

/* ---- stacks now, and what changed since the last frame ---- */

function showStacks() {
  const box = $("stacks");
  const parts = [];
  for (const [pid, p] of [...state.processes].sort((a, b) => a[0] - b[0])) {
    for (const th of p.threads) {
      if (th.ended) continue;
      const key = pid + "/" + th.stream;
      const before = state.lastStacks.get(key) || [];
      const stack = th.stack.map((frame) => frame[0]);
      let same = 0;
      while (same < stack.length && same < before.length && stack[same] === before[same]) same++;
      state.lastStacks.set(key, stack);
      const items = stack.map((f, depth) => ({f, changed: depth >= same})).reverse().slice(0, 30);
      parts.push(`<div class="stack"><h4>${escapeHtml(th.name || "thread " + th.stream)} <small>(${pid})</small></h4><ol>` +
        items.map((it) => `<li${it.changed ? ' class="changed"' : ""}>${escapeHtml(fname(it.f))}</li>`).join("") +
        (stack.length ? "" : "<li>(no call open)</li>") + "</ol></div>");
    }
  }
  const html = parts.join("");
  if (box.innerHTML !== html) box.innerHTML = html;
}

/* ---- the timeline ---- */

function layout() {
  const rows = [];
  let y = 0;
  const tracks = [...state.tracks.values()];
  for (const pid of [...state.processes.keys()].sort((a, b) => a - b)) {
    const p = state.processes.get(pid);
    rows.push({kind: "process", y, h: PROCESS_ROW, text: baseName(p.name) + " · pid " + pid});
    y += PROCESS_ROW;
    for (const th of p.threads) {
      const lane = laneOf(pid, th.stream);
      const h = Math.max(1, lane.depth) * LANE_ROW + 4;
      rows.push({kind: "lane", y, h, lane, thread: th, text: th.name || "thread " + th.stream});
      y += h;
    }
    for (const track of tracks.filter((t) => t.pid === pid)) {
      rows.push({kind: "track", y, h: TRACK_ROW, track, text: track.name});
      y += TRACK_ROW;
    }
  }
  return rows;
}

let labelsKey = "";
function showLabels(rows) {
  const key = rows.map((r) => r.kind + r.y + r.text).join("|");
  if (key === labelsKey) return;
  labelsKey = key;
  $("tl-labels").innerHTML = rows.map((r) =>
    `<div class="${r.kind}-label">${escapeHtml(r.text)}</div>`).join("");
  // Placed through the CSSOM: the page's policy allows no inline style.
  for (const [i, el] of [...$("tl-labels").children].entries()) el.style.top = (rows[i].y + 2) + "px";
}

function view() {
  const t = now();
  const end = state.paused ? state.viewEnd : t;
  return {t0: end - state.viewSpan, t1: end, t};
}

function draw() {
  const started = performance.now();
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth, h = canvas.clientHeight;
  if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(h * dpr);
  }
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, h);
  const {t0, t1, t} = view();
  const plot = w - LABELS, scale = plot / (t1 - t0);
  const x = (ms) => LABELS + (ms - t0) * scale;
  const rows = layout();
  showLabels(rows);
  ctx.font = "11px system-ui, sans-serif";
  ctx.textBaseline = "middle";
  for (const row of rows) {
    if (row.y > h) break;
    if (row.kind === "process") {
      ctx.fillStyle = "#f2f2f5";
      ctx.fillRect(0, row.y, w, row.h);
    } else if (row.kind === "lane") {
      drawLane(row, x, t0, t1, t);
    } else {
      drawTrack(row, x, t0, t1);
    }
    ctx.fillStyle = "#e4e4e8";
    ctx.fillRect(0, row.y + row.h - 1, w, 1);
  }
  if (!rows.length) {
    ctx.fillStyle = "#6b6b70";
    ctx.fillText("waiting for programs run with --live…", LABELS, 20);
  }
  $("view-range").textContent = (state.paused ? "paused at " : "") + fmtDuration((t1 - t0) * 1e6) + " shown" +
    (state.paused ? ", " + fmtDuration((t - t1) * 1e6) + " ago" : "");
  frameTimes.push(performance.now() - started);
  if (frameTimes.length > 600) frameTimes.splice(0, frameTimes.length - 600);
  requestAnimationFrame(draw);
}

function box(x0, x1, y, f) {
  const left = Math.max(LABELS, x0), width = Math.max(1, x1 - left);
  ctx.fillStyle = colourOf(fname(f));
  ctx.fillRect(left, y, width, LANE_ROW - 1);
  if (width > 40) {
    ctx.fillStyle = "#1d1d1f";
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, y, width, LANE_ROW);
    ctx.clip();
    ctx.fillText(fname(f), left + 3, y + LANE_ROW / 2);
    ctx.restore();
  }
}

function drawLane(row, x, t0, t1, t) {
  const lane = row.lane, top = row.y + 2;
  const lastX = new Float64Array(MAX_DEPTH).fill(-1);
  for (const s of lane.spans) {
    if (s[5] < t0 || s[4] > t1 || s[3] >= MAX_DEPTH) continue;
    const x0 = x(s[4]), x1 = x(s[5]);
    if (x1 < lastX[s[3]] + 0.5) continue; // within a pixel already drawn at this depth
    lastX[s[3]] = x1;
    box(x0, x1, top + s[3] * LANE_ROW, s[2]);
  }
  // The calls still open, up to now.
  const stack = row.thread.ended ? [] : row.thread.stack;
  for (let d = 0; d < stack.length && d < MAX_DEPTH; d++) {
    if (stack[d][1] > t1) continue;
    box(x(stack[d][1]), x(Math.min(t, t1)), top + d * LANE_ROW, stack[d][0]);
  }
}

function drawTrack(row, x, t0, t1) {
  const samples = row.track.samples.filter((s) => s[3] >= t0 && s[3] <= t1);
  if (!samples.length) return;
  let lo = Infinity, hi = -Infinity;
  for (const s of samples) {
    lo = Math.min(lo, s[4]);
    hi = Math.max(hi, s[4]);
  }
  const y = (v) => row.y + row.h - 4 - (hi > lo ? (v - lo) / (hi - lo) : 0.5) * (row.h - 8);
  ctx.strokeStyle = "#2b6cb0";
  ctx.beginPath();
  samples.forEach((s, i) => (i ? ctx.lineTo(x(s[3]), y(s[4])) : ctx.moveTo(x(s[3]), y(s[4]))));
  ctx.stroke();
  ctx.fillStyle = "#6b6b70";
  ctx.fillText(String(+samples[samples.length - 1][4].toPrecision(6)), LABELS + 4, row.y + 8);
}

/* ---- pause, scroll back, zoom ---- */

function clampView() {
  const t = now();
  state.viewSpan = Math.min(Math.max(state.viewSpan, MIN_VIEW_MS), state.windowMs);
  state.viewEnd = Math.min(Math.max(state.viewEnd, t - state.windowMs + state.viewSpan), t);
}

function setPaused(paused) {
  state.paused = paused;
  if (paused) state.viewEnd = now();
  $("pause").textContent = paused ? "Follow" : "Pause";
  $("pause").className = paused ? "on" : "";
}

$("pause").addEventListener("click", () => setPaused(!state.paused));
document.addEventListener("keydown", (e) => {
  if (e.key === " " && e.target === document.body) {
    e.preventDefault();
    setPaused(!state.paused);
  }
});
const timeline = $("timeline");
timeline.addEventListener("wheel", (e) => {
  e.preventDefault();
  if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
    if (!state.paused) setPaused(true);
    state.viewEnd += (e.deltaX || e.deltaY) / Math.max(1, canvas.clientWidth - LABELS) * state.viewSpan;
  } else {
    state.viewSpan *= Math.exp(e.deltaY / 400);
  }
  clampView();
}, {passive: false});
let drag = null;
timeline.addEventListener("mousedown", (e) => {
  drag = {x: e.clientX, end: state.paused ? state.viewEnd : now()};
});
window.addEventListener("mousemove", (e) => {
  if (!drag) return;
  if (!state.paused) setPaused(true);
  state.viewEnd = drag.end - (e.clientX - drag.x) / Math.max(1, canvas.clientWidth - LABELS) * state.viewSpan;
  clampView();
});
window.addEventListener("mouseup", () => (drag = null));

const source = new EventSource("api/events");
source.onmessage = onMessage;
source.onerror = () => problem("disconnected: trying again");
requestAnimationFrame(draw);

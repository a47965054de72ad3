/* live.js -- the live page (`tracetop view --live`): the running programs' timeline (scrolling with time;
 * pause, scroll back within the window, open the recorded part in the viewer), their stacks now, top's table,
 * counters and parameters as tracks, measurement on/off; where a program counts objects (--objects), top's
 * rows of types as bars and a dial whose needle winds once per NOVA_TURN lists made.
 *
 * The server (tracetop/viewer/live.py) sends server-sent events: a "hello" with the window so far, then a
 * "frame" ten times a second with what is new. Times are milliseconds on the server's clock. What is older
 * than the window is dropped here too, so the page's memory stays bounded. The timeline's lanes (which
 * threads share one, the calls each keeps, the levels each shows) are live_lanes.js's; the lanes' box
 * scrolls, each lane's height bounded.
 *
 * Exports nothing. For tests and the bench (and for nothing else) it sets window.ttLive: the state (its
 * lanes: live_lanes.js's), the last frames' draw times, when each process was first seen, and the dial's
 * reading (nova). */
import {count, escapeHtml, fmtCount, fmtDuration} from "./format.js";
import {colourOf} from "./names.js";
import {$, button} from "./dom.js";
import * as lanes from "./live_lanes.js";

const LANE_ROW = 14, BAND_ROW = 8, FOLDED_ROW = 16, LANE_PAD = 4, PROCESS_ROW = 18, TRACK_ROW = 34, LABELS = 170;
const MAX_SPANS = 300000, MAX_SAMPLES = 100000, MIN_VIEW_MS = 5;
const NOVA_TURN = 10000, OBJECT_ROWS = 30;

const state = {
  windowMs: 60000, functions: [], processes: new Map(), rows: [],
  objects: null,         // top's rows of types: [type, created, destroyed, alive, created/s, destroyed/s]
  lanes: lanes.lanes,    // live_lanes.js's: key -> lane
  tracks: new Map(),     // "pid/name" -> {pid, name, samples: []}
  spanCount: 0, sampleCount: 0,
  serverNow: 0, receivedAt: 0, frames: 0,
  paused: false, viewEnd: 0, viewSpan: 10000,
  rates: new Map(),      // pid -> {events, t, rate}
  lastStacks: new Map(), // "pid/stream" -> the stack shown last
  layout: {rows: [], height: 0}, layoutStale: true, // the timeline's rows, laid out again after a frame or a fold
};
const frameTimes = [];
const live = window.ttLive = {state, frameTimes, firstSeen: new Map()};

const canvas = $("tl-canvas"), ctx = canvas.getContext("2d"), scroller = $("tl-scroll");

/* The server's time now, between frames too. */
function now() {
  return state.serverNow + (state.receivedAt ? performance.now() - state.receivedAt : 0);
}

function fname(f) {
  const fn = state.functions[f];
  return fn ? fn[0] : "?";
}

let colours = [];
/* names.js's colour of function f, kept per function: a lane draws thousands of calls a frame. */
function colourOfFunction(f) {
  return colours[f] || (colours[f] = colourOf(fname(f)));
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
  state.spanCount = lanes.prune(oldest, MAX_SPANS);
  let kept = 0;
  for (const track of state.tracks.values()) {
    let cut = 0;
    while (cut < track.samples.length && (track.samples[cut][3] < oldest || track.samples.length - cut > MAX_SAMPLES)) cut++;
    if (cut) track.samples.splice(0, cut);
    kept += track.samples.length;
  }
  state.sampleCount = kept;
}

function takeProcesses(processes) {
  for (const p of processes) {
    if (!live.firstSeen.has(p.pid)) live.firstSeen.set(p.pid, performance.now());
    const previous = state.rates.get(p.pid);
    if (!previous || state.serverNow - previous.t >= 1000) {
      const rate = previous ? (p.events - previous.events) / ((state.serverNow - previous.t) / 1000) : 0;
      state.rates.set(p.pid, {events: p.events, t: state.serverNow, rate: Math.max(0, rate)});
    }
    state.processes.set(p.pid, p);
  }
  lanes.takeThreads(processes);
}

/* A frame's calls and samples, after its threads (which say each call's lane). */
function take(m) {
  if (m.processes) takeProcesses(m.processes);
  lanes.addSpans(m.spans);
  addSamples(m.samples);
  if (m.rows) state.rows = m.rows;
  if (m.objects !== undefined) state.objects = m.objects;
  if (m.scope) state.scope = m.scope;
  prune();
  state.layoutStale = true;
}

function onMessage(event) {
  const m = JSON.parse(event.data);
  if (m.type === "hello") {
    state.windowMs = m.window_ms;
    state.functions = m.functions;
    colours = [];
    lanes.clear();
    state.tracks.clear();
    state.spanCount = state.sampleCount = 0;
    take(m);
    return;
  }
  state.serverNow = m.t;
  state.receivedAt = performance.now();
  state.frames++;
  for (let i = 0; i < m.functions.length; i++) state.functions[m.fbase + i] = m.functions[i];
  take(m);
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
      el.querySelector(".open").addEventListener("click", (e) => openRecorded(pid, e.target));
      box.appendChild(el);
    }
    const rate = state.rates.get(pid);
    el.querySelector(".name").textContent = baseName(p.name) + " (" + pid + ")";
    el.querySelector(".state").textContent = p.pending ? "switching…" : p.state;
    el.querySelector(".numbers").textContent = fmtCount(rate ? rate.rate : 0) + " events/s · drops " +
      approx(p.dropped) + (p.lost ? " · not drawn " + fmtCount(p.lost) : "");
    const onOff = el.querySelector(".switch");
    const running = p.state === "measuring" || p.state === "not measuring";
    onOff.disabled = !running;
    onOff.textContent = p.state === "measuring" ? "Measurement on" : "Measurement off";
    onOff.className = "switch" + (p.state === "measuring" ? " on" : "");
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

/* The viewer of what process pid recorded so far. Its window opens on the click, saying what it waits for: the
 * server indexes the recorded part first (seconds, a minute for a long run), and a window opened after that
 * wait, no longer by a click, is what popup blockers stop. The button counts the seconds meanwhile. */
async function openRecorded(pid, opener) {
  const popup = window.open("", "_blank");
  if (popup) {
    popup.document.title = "tracetop: opening the recorded part";
    popup.document.body.textContent = `Indexing what process ${pid} recorded so far; the viewer opens here when done…`;
  }
  const started = performance.now();
  const waiting = () => {
    opener.textContent = `Indexing… ${Math.round((performance.now() - started) / 1000)} s`;
  };
  waiting();
  opener.disabled = true;
  const ticking = setInterval(waiting, 1000);
  try {
    const answer = await (await fetch(`api/open?pid=${pid}`)).json();
    if (answer.error) throw new Error(answer.error);
    if (popup) {
      popup.opener = null;
      popup.location.replace(answer.url);
    } else {
      window.open(answer.url, "_blank", "noopener");
    }
  } catch (failure) {
    if (popup) popup.close();
    problem(failure.message);
  } finally {
    clearInterval(ticking);
    opener.disabled = false;
    opener.textContent = "Open the recorded part";
  }
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
    // A group's threads (a thread per request) are each too short-lived to choose.
    for (const th of p.threads) {
      const lane = lanes.laneOf(pid, th.stream);
      if (!lane || !lane.group) options.push([scopeKey(pid, th.stream), `  ${th.name || "thread " + th.stream} (${pid})`]);
    }
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

/* The rows of the lanes' box, top to bottom: per process its header, its lanes, its tracks. */
function layout() {
  const rows = [];
  let y = 0;
  const tracks = [...state.tracks.values()];
  for (const pid of [...state.processes.keys()].sort((a, b) => a - b)) {
    const p = state.processes.get(pid);
    const name = baseName(p.name) + " · pid " + pid;
    rows.push({id: "p" + pid, kind: "process", y, h: PROCESS_ROW, text: name, title: p.name + " · pid " + pid});
    y += PROCESS_ROW;
    for (const lane of lanes.lanesOf(pid)) {
      const shape = lanes.shapeOf(lane);
      const h = shape.rows ? shape.rows * LANE_ROW + (shape.band ? BAND_ROW + 1 : 0) + LANE_PAD : FOLDED_ROW;
      rows.push({id: lane.key, kind: "lane", y, h, lane, shape});
      y += h;
    }
    for (const track of tracks.filter((t) => t.pid === pid)) {
      rows.push({id: "c" + pid + "/" + track.name, kind: "track", y, h: TRACK_ROW, track, text: track.name, title: track.name});
      y += TRACK_ROW;
    }
  }
  return {rows, height: y};
}

/* How a lane's label reads: its name, a group's count of threads, its hover, whether its fold button
 * unfolds, and its depth button ("+N" levels folded, "−" back to LEVELS, "" none). */
function laneLabel(row) {
  const lane = row.lane, {rows, band} = row.shape, alive = lane.threads.filter((th) => !th.ended).length;
  const what = lane.group
    ? `${count(lane.threads.length, "thread")} named like ${lane.threads[0].name} within the window, ${alive} running ` +
      "now (a thread per request, or a pool's): drawn over each other"
    : `${lane.name}, stream ${lane.threads[0].stream}${alive ? "" : ", ended"}`;
  const levels = count(lane.depth, "level") + " of calls" +
    (!band ? "" : rows ? `; the band below shows levels ${rows + 1} to ${lane.depth}` : "; the band shows the deepest call at each moment");
  return {
    text: lane.name,
    count: lane.group ? "×" + fmtCount(lane.threads.length) : "",
    title: what + "\n" + levels,
    ended: lane.done,
    folded: !rows,
    more: band && rows ? "+" + (lane.depth - rows) : lane.all && lane.depth > lanes.LEVELS ? "−" : "",
  };
}

/* The gutter's labels, one element per row kept from frame to frame: changed only where they differ. */
const labels = new Map(); // row id -> element
function showLabels(rows) {
  const box = $("tl-labels"), shown = new Set();
  for (const row of rows) {
    shown.add(row.id);
    let el = labels.get(row.id);
    if (!el) {
      el = document.createElement("div");
      el.className = row.kind + "-label";
      if (row.kind === "lane") {
        const key = row.id;
        const threads = document.createElement("small");
        threads.className = "count";
        el.append(button("fold", "▾", "", () => { lanes.toggleFolded(key); state.layoutStale = true; }),
                  document.createElement("span"), threads,
                  button("depth", "", "", () => { lanes.toggleAll(key); state.layoutStale = true; }));
        el.lastChild.hidden = true;
      }
      labels.set(row.id, el);
      box.appendChild(el);
    }
    const shownAs = row.kind === "lane" ? laneLabel(row) : {text: row.text, title: row.title};
    const name = row.kind === "lane" ? el.children[1] : el;
    if (name.textContent !== shownAs.text) name.textContent = shownAs.text;
    if (el.title !== shownAs.title) el.title = shownAs.title;
    if (row.kind === "lane") {
      el.classList.toggle("ended", shownAs.ended);
      const [fold, , threads, more] = el.children;
      if (threads.textContent !== shownAs.count) threads.textContent = shownAs.count;
      const glyph = shownAs.folded ? "▸" : "▾";
      if (fold.textContent !== glyph || !fold.title) {
        fold.textContent = glyph;
        fold.title = shownAs.folded ? "show the calls" : "fold to one band";
      }
      if (more.textContent !== shownAs.more) {
        more.textContent = shownAs.more;
        more.title = shownAs.more === "−" ? `show ${lanes.LEVELS} levels` : "show every level";
        more.hidden = !shownAs.more;
      }
    }
    // Placed through the CSSOM: the page's policy allows no inline style.
    const top = row.y + (row.kind === "lane" ? 1 : 2) + "px";
    if (el.style.top !== top) el.style.top = top;
  }
  for (const [id, el] of labels) {
    if (!shown.has(id)) {
      el.remove();
      labels.delete(id);
    }
  }
}

function view() {
  const t = now();
  const end = state.paused ? state.viewEnd : t;
  return {t0: end - state.viewSpan, t1: end, t};
}

function draw() {
  const started = performance.now();
  if (state.layoutStale) {
    state.layout = layout();
    state.layoutStale = false;
    showLabels(state.layout.rows);
    const height = state.layout.height + "px";
    if ($("tl-spacer").style.height !== height) $("tl-spacer").style.height = height;
  }
  const dpr = window.devicePixelRatio || 1;
  // As wide as the lanes' box without its scroll bar.
  const w = scroller.clientWidth, h = scroller.clientHeight;
  if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(h * dpr);
    canvas.style.width = w + "px";
    canvas.style.height = h + "px";
  }
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, h);
  const {t0, t1, t} = view();
  const plot = w - LABELS, scale = plot / (t1 - t0);
  const x = (ms) => LABELS + (ms - t0) * scale;
  const rows = state.layout.rows, scroll = scroller.scrollTop;
  ctx.font = "11px system-ui, sans-serif";
  ctx.textBaseline = "middle";
  for (const row of rows) {
    const top = row.y - scroll;
    if (top + row.h < 0) continue;
    if (top > h) break;
    if (row.kind === "process") {
      ctx.fillStyle = "#f2f2f5";
      ctx.fillRect(0, top, w, row.h);
    } else if (row.kind === "lane") {
      drawLane(row, top, x, t0, t1, t);
    } else {
      drawTrack(row, top, x, t0, t1);
    }
    ctx.fillStyle = "#e4e4e8";
    ctx.fillRect(0, top + row.h - 1, w, 1);
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

/* A call from x0 to x1 at y, `height` high; named when it is a row's and wide enough. */
function box(x0, x1, y, height, f, named) {
  const left = Math.max(LABELS, x0), width = Math.max(1, x1 - left);
  ctx.fillStyle = colourOfFunction(f);
  ctx.fillRect(left, y, width, height);
  if (named && width > 40) {
    ctx.fillStyle = "#1d1d1f";
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, y, width, height);
    ctx.clip();
    ctx.fillText(fname(f), left + 3, y + height / 2);
    ctx.restore();
  }
}

/* The first of a level's calls that may end at t0 or later. A level's calls come in the order they ended but for
 * the threads of a group within one frame: the few out of order, on the left edge of the view, may go undrawn. */
function firstEndingAfter(level, t0) {
  let lo = 0, hi = level.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (level[mid][5] < t0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* A lane's rows of calls, then the levels below them in one band (a folded lane: all its levels), the deeper
 * drawn over the shallower: the deepest call at each moment shows. A group's threads are drawn over each other. */
function drawLane(row, top, x, t0, t1, t) {
  const lane = row.lane, rows = row.shape.rows;
  const band = rows ? top + 2 + rows * LANE_ROW : top + (FOLDED_ROW - BAND_ROW) / 2;
  const place = (d) => (d < rows ? [top + 2 + d * LANE_ROW, LANE_ROW - 1, true] : [band, BAND_ROW, false]);
  lane.levels.forEach((level, d) => {
    if (d >= rows && !row.shape.band) return;
    const [y, height, named] = place(d);
    let pixel = -1;
    for (let i = firstEndingAfter(level, t0); i < level.length; i++) {
      const s = level[i];
      if (s[5] < t0 || s[4] > t1) continue;
      const x0 = x(s[4]), x1 = x(s[5]);
      if (x1 - x0 < 1) { // within a pixel: one call a pixel is enough
        if (Math.floor(x0) === pixel) continue;
        pixel = Math.floor(x0);
      }
      box(x0, x1, y, height, s[2], named);
    }
  });
  // The calls still open, up to now.
  for (const th of lane.threads) {
    if (th.ended) continue;
    const depth = Math.min(th.stack.length, row.shape.band ? lanes.MAX_DEPTH : rows);
    for (let d = 0; d < depth; d++) {
      if (th.stack[d][1] > t1) continue;
      const [y, height, named] = place(d);
      box(x(th.stack[d][1]), x(Math.min(t, t1)), y, height, th.stack[d][0], named);
    }
  }
}

function drawTrack(row, top, x, t0, t1) {
  const samples = row.track.samples.filter((s) => s[3] >= t0 && s[3] <= t1);
  if (!samples.length) return;
  let lo = Infinity, hi = -Infinity;
  for (const s of samples) {
    lo = Math.min(lo, s[4]);
    hi = Math.max(hi, s[4]);
  }
  const y = (v) => top + row.h - 4 - (hi > lo ? (v - lo) / (hi - lo) : 0.5) * (row.h - 8);
  ctx.strokeStyle = "#2b6cb0";
  ctx.beginPath();
  samples.forEach((s, i) => (i ? ctx.lineTo(x(s[3]), y(s[4])) : ctx.moveTo(x(s[3]), y(s[4]))));
  ctx.stroke();
  ctx.fillStyle = "#6b6b70";
  ctx.fillText(String(+samples[samples.length - 1][4].toPrecision(6)), LABELS + 4, top + 8);
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
/* Over the names the wheel scrolls the lanes; over the calls it zooms (with shift, or sideways, it pans). */
timeline.addEventListener("wheel", (e) => {
  if (e.clientX - timeline.getBoundingClientRect().left < LABELS && !e.ctrlKey) return;
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
  // Not a label's button, nor the lanes' scroll bar.
  if (e.target.closest("button") || e.clientX - timeline.getBoundingClientRect().left >= scroller.clientWidth) return;
  drag = {x: e.clientX, end: state.paused ? state.viewEnd : now()};
});
window.addEventListener("mousemove", (e) => {
  if (!drag || e.clientX === drag.x) return;
  if (!state.paused) setPaused(true);
  state.viewEnd = drag.end - (e.clientX - drag.x) / Math.max(1, canvas.clientWidth - LABELS) * state.viewSpan;
  clampView();
});
window.addEventListener("mouseup", () => (drag = null));

const source = new EventSource("api/events");
source.onmessage = onMessage;
source.onerror = () => problem("disconnected: trying again");
requestAnimationFrame(draw);

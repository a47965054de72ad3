/* objects.js -- the viewer's objects views, for a run measured with
 * --objects: per process, a track per type of the objects alive over time
 * (below the process's threads, foldable); objects created, destroyed and
 * their bytes as columns of the profile (call tree, flat profile, range
 * summary); and the flame graph's widths by objects or bytes created.
 *
 * The index computes it all (lod_objects.c): the tracks' samples come from
 * api/samples, a scope's objects per call path from api/tree_objects, a
 * range's per region and type from api/objects. Without objects in the run
 * every export below adds nothing.
 *
 * Exports: init, height, place, labels, draw, tip (the timeline's tracks);
 * attach, heads, nodeCells, addRows, rowCells, sortKeys, rangeSummary,
 * scopeKey (the profile's columns); flameTree, flameTip (the flame graph's
 * widths); probe (for tests). */
import {emit, ensureData, on, relayout, resetScope, scheduleDraw, state} from "./state.js";
import {GUTTER, plotWidth, scroller, tOf, xOf} from "./geometry.js";
import {covers, trackRanges, windowFor} from "./data.js";
import {api} from "./api.js";
import {NO_PARENT, decodeObjects, decodeSamples, decodeTreeObjects} from "./decode.js";
import {count, escapeHtml, fmtBytes, fmtCount, percent} from "./format.js";
import {colourOf, displayName} from "./names.js";
import {$, button, setStatus} from "./dom.js";

const HEADER = 18, ROW = 22, SHOWN = 5; /* a process's header, a type's track, types shown unfolded */
let groups = [];         /* per process with objects: {pid, lane, tracks, folded, all, top, rows} */
let totals = new Map();  /* type name -> {created, destroyed, bytes} over the whole run */
let samples = null, inflight = false;
let mode = "time";       /* the flame graph's widths: time, objects, bytes */
let type = "";           /* the profile's and flame graph's objects: of one type, or of all ("") */

/* The rows of a range by type name, most created first. */
function byType(rows) {
  const types = new Map();
  for (const r of rows) {
    const name = state.meta.objects.find((o) => o.track === r.track).name;
    const t = types.get(name) || {name, created: 0, destroyed: 0, bytes: 0};
    t.created += r.created;
    t.destroyed += r.destroyed;
    t.bytes += r.bytes;
    types.set(name, t);
  }
  return Array.from(types.values()).sort((a, b) => b.created - a.created);
}

function present() { return state.meta !== null && (state.meta.objects || []).length > 0; }

/* ---- start ---- */

export function init() {
  if (!present()) return;
  const meta = state.meta, byPid = new Map();
  for (const o of meta.objects) {
    const pid = meta.lanes[o.lane].pid;
    if (!byPid.has(pid)) byPid.set(pid, {pid, lane: o.lane, tracks: [], folded: false, all: false, top: 0, rows: []});
    byPid.get(pid).tracks.push(o);
  }
  groups = Array.from(byPid.values());
  for (const g of groups) g.tracks.sort((a, b) => b.max - a.max || a.name.localeCompare(b.name));
  addControls();
  api("objects", {t0: state.begin, t1: state.end + 1, lanes: "all"}).then((r) => r.arrayBuffer()).then((buffer) => {
    totals = new Map(byType(decodeObjects(buffer)).map((t) => [t.name, t]));
    const select = $("objects-type");
    for (const t of totals.values()) {
      const option = document.createElement("option");
      option.value = t.name;
      option.textContent = t.name + " (" + fmtCount(t.created) + ")";
      select.appendChild(option);
    }
    relayout();
  }).catch((error) => setStatus(error.message, true));
}

/* The flame graph's widths and the type the profile counts: controls of their own. */
function addControls() {
  const scope = $("scope"), label = document.createElement("label");
  label.textContent = "objects of ";
  const select = document.createElement("select");
  select.id = "objects-type";
  select.innerHTML = '<option value="">all types</option>';
  select.addEventListener("change", () => { type = select.value; resetScope(); });
  label.appendChild(select);
  scope.insertBefore(label, $("scope-info"));
  const widths = document.createElement("label");
  widths.textContent = "widths: ";
  const by = document.createElement("select");
  by.id = "flame-by";
  by.innerHTML = '<option value="time">time</option><option value="objects">objects created</option><option value="bytes">bytes created</option>';
  by.addEventListener("change", () => { mode = by.value; emit("flame"); });
  widths.appendChild(by);
  const note = document.createElement("span");
  note.id = "objects-note";
  note.className = "hint";
  $("flame-reset").after(" ", widths, " ", note);
}

/* ---- the timeline: tracks of the objects alive ---- */

/* Places the objects of process `pid` at y (below its threads): the y after them. */
export function place(pid, y, hidden) {
  const g = groups.find((o) => o.pid === pid);
  if (!g) return y;
  g.hidden = hidden;
  g.rows = [];
  if (hidden) return y;
  g.top = y;
  y += HEADER;
  if (!g.folded) {
    for (const track of g.all ? g.tracks : g.tracks.slice(0, SHOWN)) {
      g.rows.push({track, top: y});
      y += ROW;
    }
  }
  return y + 4;
}

/* The height the objects take unfolded, to leave them room on the first screen. */
export function height() {
  return groups.reduce((sum, g) => sum + HEADER + Math.min(SHOWN, g.tracks.length) * ROW + 4, 0);
}

/* Their names in the gutter. */
export function labels(container) {
  for (const g of groups) {
    if (g.hidden) continue;
    const head = document.createElement("div");
    head.className = "lane-label objects-head";
    head.dataset.top = g.top;
    head.appendChild(button("fold", g.folded ? "▸" : "▾", g.folded ? "show the objects alive" : "fold the objects",
      () => { g.folded = !g.folded; relayout(); ensureData(); }));
    const name = document.createElement("span");
    name.className = "name";
    name.textContent = "objects alive";
    head.appendChild(name);
    head.title = "objects alive over time, per type, in process " + g.pid + " (--objects)";
    if (!g.folded && g.tracks.length > SHOWN) {
      head.appendChild(button("depth", g.all ? "−" : "+" + (g.tracks.length - SHOWN),
        g.all ? "show the " + SHOWN + " types most alive" : "show all " + g.tracks.length + " types",
        () => { g.all = !g.all; relayout(); ensureData(); }));
    }
    container.appendChild(head);
    for (const row of g.rows) {
      const t = row.track, total = totals.get(t.name);
      const div = document.createElement("div");
      div.className = "track-label objects-label";
      div.dataset.top = row.top + 3;
      div.dataset.type = t.name;
      div.innerHTML = '<span class="name">' + escapeHtml(displayName(t.name)) + '</span><small>' + fmtCount(t.max) + "</small>";
      div.title = t.name + ": at most " + fmtCount(t.max) + " alive (" + fmtBytes(t.max * t.size) + " of " + t.size + " bytes each)" +
        (total ? "\ncreated " + fmtCount(total.created) + ", destroyed " + fmtCount(total.destroyed) + " in the run" : "");
      container.appendChild(div);
    }
  }
}

function shownTracks() {
  return groups.flatMap((g) => g.rows.map((r) => r.track.track));
}

function ensureTracks() {
  const tracks = shownTracks();
  if (!tracks.length || inflight || (samples && samples.key === tracks.join(",") && covers(samples.window))) return;
  const w = windowFor(), key = tracks.join(",");
  inflight = true;
  api("samples", {t0: w.t0, t1: w.t1, width: w.width, tracks: key}).then((r) => r.arrayBuffer()).then((buffer) => {
    samples = trackRanges(decodeSamples(buffer), w);
    samples.key = key;
  }).catch((error) => setStatus(error.message, true)).finally(() => {
    inflight = false;
    ensureTracks();
    scheduleDraw();
  });
}

/* Each type's objects alive as steps: the count a record left stands until the next one; a band where
 * one pixel holds several records (their least and most). Scaled to the type's most alive. */
export function draw(g, scroll, height) {
  const left = GUTTER, width = plotWidth();
  for (const group of groups) {
    if (group.hidden) continue;
    const top = group.top - scroll;
    if (top > height) continue;
    g.fillStyle = "#eef0f4";
    g.fillRect(left, top, width, HEADER - 2);
    g.fillStyle = "#6b6b70";
    g.font = "11px system-ui, sans-serif";
    g.textBaseline = "middle";
    g.fillText(count(group.tracks.length, "type") + " of objects" + (group.folded ? " (folded)" : ""), left + 4, top + HEADER / 2 - 1);
    group.rows.forEach((row, k) => {
      const y = row.top - scroll;
      if (y > height || y + ROW < 0) return;
      g.fillStyle = k % 2 ? "#f7f7f9" : "#fff";
      g.fillRect(left, y, width, ROW);
      const r = samples && samples.ranges.get(row.track.track);
      if (!r) return;
      const hi = Math.max(1, row.track.max), yOf = (n) => y + ROW - 2 - Math.max(0, n) / hi * (ROW - 5);
      const colour = colourOf(row.track.name);
      for (let i = r[0]; i < r[1]; i++) {
        const x0 = xOf(samples.time[i]), x1 = i + 1 < r[1] ? xOf(samples.time[i + 1]) : left + width;
        if (x1 < left || x0 > left + width) continue;
        g.fillStyle = colour;
        g.globalAlpha = 0.45;
        g.fillRect(x0, yOf(samples.last[i]), Math.max(1, x1 - x0), y + ROW - 2 - yOf(samples.last[i]));
        if (samples.max[i] > samples.min[i]) {
          g.globalAlpha = 0.25;
          g.fillRect(x0, yOf(samples.max[i]), Math.max(1, x1 - x0), yOf(samples.min[i]) - yOf(samples.max[i]));
        }
      }
      g.globalAlpha = 1;
      g.strokeStyle = colour.replace(/,(\d+)%\)$/, ",32%)");
      g.beginPath();
      for (let i = r[0]; i < r[1]; i++) {
        const x = xOf(samples.time[i]), y1 = yOf(samples.last[i]);
        if (i === r[0]) g.moveTo(x, y1); else g.lineTo(x, yOf(samples.last[i - 1])), g.lineTo(x, y1);
      }
      if (r[1] > r[0]) g.lineTo(left + width, yOf(samples.last[r[1] - 1]));
      g.stroke();
    });
  }
}

/* The track under canvas point (x, y) and what it shows at that time: null elsewhere. */
function pointAt(x, y) {
  if (!samples || x < GUTTER) return null;
  const yy = y + scroller.scrollTop;
  for (const g of groups) {
    const row = g.rows.find((r) => yy >= r.top && yy < r.top + ROW);
    if (!row) continue;
    const range = samples.ranges.get(row.track.track), t = tOf(x);
    if (!range) return {track: row.track, time: t, alive: 0, low: 0, high: 0};
    let i = range[0] - 1;
    while (i + 1 < range[1] && samples.time[i + 1] <= t) i++;
    if (i < range[0]) return {track: row.track, time: t, alive: 0, low: 0, high: 0};
    return {track: row.track, time: t, alive: samples.last[i], low: samples.min[i], high: samples.max[i]};
  }
  return null;
}

/* The tooltip of a track: the objects alive at the time under the mouse. */
export function tip(x, y) {
  const p = pointAt(x, y);
  if (!p) return null;
  const lines = [fmtCount(p.alive) + " alive (" + fmtBytes(p.alive * p.track.size) + ")",
    "at " + ((p.time - state.begin) / 1e6).toFixed(3) + " ms"];
  if (p.high > p.low) lines.push("from " + fmtCount(p.low) + " to " + fmtCount(p.high) + " at this zoom");
  lines.push("at most " + fmtCount(p.track.max) + " in the run");
  return {title: p.track.name, lines};
}

/* ---- the profile's columns ---- */

/* Adds the scope's objects per node (tree.objects) to the tree of [t0, t1) of `lanes` a promise brings: a
 * promise of it. Both are asked for at once (the server answers them in parallel). */
export function attach(treePromise, t0, t1, lanes, onlyType) {
  if (!present()) return treePromise;
  const wanted = onlyType === undefined ? type : onlyType;
  const objects = api("tree_objects", {t0, t1, lanes, type: wanted}).then((r) => r.arrayBuffer());
  return Promise.all([treePromise, objects]).then(([tree, buffer]) => {
    tree.objects = decodeTreeObjects(buffer);
    tree.objects.type = wanted;
    return tree;
  });
}

export function heads(tree) {
  return tree && tree.objects ? "<th>Created</th><th>Destroyed</th><th>Bytes</th>" : "";
}

/* "≈" where the objects of a function are shared among its call paths by their time (lod.h). */
function cells(created, destroyed, bytes, paths) {
  const about = (n) => (paths > 1 && n > 0 ? '<span class="shared" title="made by a function that ran in ' + paths +
    ' call paths: its objects are shared among them by their time there">≈</span>' : "");
  return '<td class="objects">' + about(created) + fmtCount(created) + '</td><td class="objects">' + about(destroyed) +
    fmtCount(destroyed) + '</td><td class="objects">' + about(bytes) + fmtBytes(bytes) + "</td>";
}

export function nodeCells(tree, node) {
  const o = tree.objects;
  return o ? cells(o.created[node], o.destroyed[node], o.bytes[node], o.paths[node]) : "";
}

/* The objects of each flat profile row: its nodes' summed. */
export function addRows(rows, tree) {
  const o = tree.objects;
  if (!o) return;
  const byRegion = new Map(rows.map((r) => [r.region, r]));
  for (const r of rows) r.created = r.destroyed = r.bytes = 0;
  for (let n = 0; n < tree.count; n++) {
    const r = byRegion.get(tree.region[n]);
    if (!r) continue;
    r.created += o.created[n];
    r.destroyed += o.destroyed[n];
    r.bytes += o.bytes[n];
  }
}

export function rowCells(tree, row) {
  return tree && tree.objects ? cells(row.created, row.destroyed, row.bytes, 1) : "";
}

export function sortKeys(tree) {
  return tree && tree.objects ? ["created", "destroyed", "bytes"] : [];
}

/* The objects of a selected range by type, above its function summary. */
export function rangeSummary(body, a, b) {
  if (!present()) return;
  api("objects", {t0: Math.floor(a), t1: Math.ceil(b), lanes: "all"}).then((r) => r.arrayBuffer()).then((buffer) => {
    const types = byType(decodeObjects(buffer));
    const div = document.createElement("div");
    div.className = "objects-range";
    div.innerHTML = "<div>Objects recorded in the range (records come every 100 ms): " + count(types.reduce((s, t) => s + t.created, 0), "object") +
      " created</div><table id=\"range-objects\"><thead><tr><th>Type</th><th>Created</th><th>Destroyed</th><th>Bytes</th></tr></thead><tbody>" +
      types.slice(0, 8).map((t) => '<tr data-type="' + escapeHtml(t.name) + '"><td>' + escapeHtml(t.name) + "</td><td>" + fmtCount(t.created) +
        "</td><td>" + fmtCount(t.destroyed) + "</td><td>" + fmtBytes(t.bytes) + "</td></tr>").join("") + "</tbody></table>";
    body.insertBefore(div, body.querySelector("table"));
  }).catch((error) => setStatus(error.message, true));
}

/* ---- the flame graph by objects or bytes ---- */

/* The tree to draw: the time tree, or one whose widths are the objects (or bytes) created under each node. */
export function flameTree(tree) {
  const note = $("objects-note");
  if (mode === "time" || !tree || !tree.objects) {
    if (note) note.textContent = "";
    return tree;
  }
  const key = mode + "/" + tree.objects.type;
  if (!tree.flame || tree.flame.key !== key) {
    const own = mode === "bytes" ? tree.objects.bytes : tree.objects.created, inclusive = Float64Array.from(own);
    for (let n = tree.count - 1; n >= 0; n--) if (tree.parent[n] !== NO_PARENT) inclusive[tree.parent[n]] += inclusive[n];
    tree.flame = Object.assign({}, tree, {inclusive, own, key});
    tree.flame.total = tree.roots.reduce((s, n) => s + inclusive[n], 0);
  }
  /* What no call path shown holds: made outside any recorded function, or by one that did not run here. */
  const outside = mode === "bytes" ? tree.objects.unplaced[2] : tree.objects.unplaced[0];
  const say = (n) => (mode === "bytes" ? fmtBytes(n) : fmtCount(n) + " objects");
  note.textContent = say(tree.flame.total) + " created in these call paths" +
    (outside > 0 ? "; " + say(outside) + " outside any of them" : "");
  return tree.flame;
}

/* The hover of a frame in objects or bytes mode: HTML, or null in time mode. */
export function flameTip(tree, node) {
  const f = flameTree(tree);
  if (f === tree) return null;
  const o = tree.objects, name = state.meta.regions[tree.region[node]].name;
  const what = o.type ? o.type + " objects" : "objects";
  const lines = [
    mode === "bytes" ? fmtBytes(f.inclusive[node]) + " created in " + what + " (" + percent(f.inclusive[node], f.total) + ")"
      : fmtCount(f.inclusive[node]) + " " + what + " created (" + percent(f.inclusive[node], f.total) + ")",
    "by the function itself: " + fmtCount(o.created[node]) + " (" + fmtBytes(o.bytes[node]) + "), " + fmtCount(o.destroyed[node]) + " of them destroyed",
  ];
  if (o.paths[node] > 1) lines.push("≈ its objects shared among its " + o.paths[node] + " call paths by their time");
  return '<div class="name">' + escapeHtml(displayName(name)) + '</div><div class="sub">' + escapeHtml(name) + "</div><div>" +
    lines.map(escapeHtml).join("<br>") + "</div>";
}

export function scopeKey() { return type; }

/* For tests: where the track of `typeName` shows time `t`, {x, y} in client coordinates, or null. */
function pointOf(typeName, t) {
  const box = scroller.getBoundingClientRect();
  for (const g of groups) {
    const row = g.rows.find((r) => r.track.name === typeName);
    if (row) return {x: box.left + xOf(t), y: box.top + row.top - scroller.scrollTop + ROW / 2};
  }
  return null;
}

export const probe = {pointOf};

on("fetch", ensureTracks);

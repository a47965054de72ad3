/* common.js -- what the viewer (viewer.js) and the report (report.js) share:
 * formatting, colours, the binary answers of the index (layouts in
 * src/index/lod.h), profiles from call trees, and the flame graph. */
"use strict";

const TT = (function () {
  const NO_PARENT = 0xffffffff;

  /* Three significant digits, never in exponent notation (toPrecision writes 1.00e+3). */
  function fmtThreeDigits(x) {
    const a = Math.abs(x);
    return x.toFixed(a >= 100 ? 0 : a >= 10 ? 1 : 2);
  }

  /* Rounded first, so that 999.7 µs reads "1.00 ms", not "1000 µs". */
  function fmtDuration(ns) {
    const r = Number(ns.toPrecision(3)), a = Math.abs(r);
    if (a < 1e3) return ns.toFixed(0) + " ns";
    if (a < 1e6) return fmtThreeDigits(r / 1e3) + " µs";
    if (a < 1e9) return fmtThreeDigits(r / 1e6) + " ms";
    return (ns / 1e9).toFixed(3) + " s";
  }

  function fmtBytes(n) {
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (Math.abs(n) >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return (i ? fmtThreeDigits(n) : Math.round(n)) + " " + units[i];
  }

  /* A time on the experiment's axis, with a precision that suits `step`. */
  function fmtTime(ns, step) {
    let text;
    if (step >= 1e9) text = (ns / 1e9).toFixed(0) + " s";
    else if (step >= 1e6) text = (ns / 1e6).toFixed(Math.max(0, 3 - Math.round(Math.log10(step / 1e3)))) + " ms";
    else if (step >= 1e3) text = (ns / 1e3).toFixed(Math.max(0, 3 - Math.round(Math.log10(step)))) + " µs";
    else text = ns.toFixed(0) + " ns";
    return text.replace(/^-(0(\.0*)? )/, "$1"); /* a time just before the start, rounded to zero, is zero */
  }

  function fmtCount(n) {
    return Math.round(n).toLocaleString("en-US");
  }

  /* "1 thread", "5 threads", "1,234 calls". */
  function count(n, noun) {
    return fmtCount(n) + " " + noun + (n === 1 ? "" : "s");
  }

  function percent(part, whole) {
    return whole > 0 ? (100 * part / whole).toFixed(1) + "%" : "";
  }

  /* The module of a region name: "pkg.mod:Class.method" -> "pkg.mod",
   * "str.join" -> "str", "user:load" -> "user". */
  function moduleOf(name) {
    const colon = name.indexOf(":");
    if (colon >= 0) return name.slice(0, colon);
    const dot = name.indexOf(".");
    return dot >= 0 ? name.slice(0, dot) : name;
  }

  /* The name a region is shown by: its qualname, "pkg.mod:Class.method" ->
   * "Class.method"; names without a module ("str.join") as they are. The
   * module is said beside it where there is room (hover, details). */
  function displayName(name) {
    const colon = name.indexOf(":");
    return colon >= 0 && colon < name.length - 1 ? name.slice(colon + 1) : name;
  }

  /* `text` cut in the middle to `keep` characters, "…" for what is left out. */
  function middle(text, keep) {
    if (text.length <= keep) return text;
    if (keep < 2) return "";
    const head = Math.ceil((keep - 1) / 2);
    return text.slice(0, head) + "…" + text.slice(text.length - (keep - 1 - head));
  }

  const textWidths = new Map();
  /* `text` as it fits `width` pixels in the canvas's font: whole, or cut in
   * the middle (both ends of a name say most), or "" when nothing useful fits. */
  function fitText(g, text, width) {
    if (width < 12) return "";
    const key = g.font + "\n" + text;
    let full = textWidths.get(key);
    if (full === undefined) {
      if (textWidths.size > 20000) textWidths.clear();
      full = g.measureText(text).width;
      textWidths.set(key, full);
    }
    if (full <= width) return text;
    /* Characters are about equally wide: guess, then take off what still overflows. */
    let keep = Math.floor(width / full * text.length);
    let cut = middle(text, keep);
    while (keep > 3 && g.measureText(cut).width > width) cut = middle(text, --keep);
    return keep > 3 ? cut : "";
  }

  /* A table cell's content for a region name: its colour, the short name
   * (cut in the middle beyond `keep` characters), the full name on hover. */
  function nameHtml(name, keep) {
    return '<span class="swatch" data-name="' + escapeHtml(name) + '"></span><span class="fn" title="' + escapeHtml(name) + '">' +
      escapeHtml(middle(displayName(name), keep || 60)) + "</span>";
  }

  /* The flame graph's hover for `node` of `tree` (region `name`), in the viewer and the report alike: shown in
   * `tip` beside the mouse of event `e`, within `box`, the flame graph's scrolling box that holds `tip`. */
  function flameTip(tip, box, e, tree, node, name, html) {
    tip.innerHTML = html || '<div class="name">' + escapeHtml(displayName(name)) + '</div><div class="sub">' + escapeHtml(name) + "</div>" +
      "<div>" + ["Inclusive " + fmtDuration(tree.inclusive[node]) + " (" + percent(tree.inclusive[node], tree.total) + ")",
        "Exclusive " + fmtDuration(tree.exclusive[node]), count(tree.visits[node], "visit")].map(escapeHtml).join("<br>") + "</div>";
    tip.hidden = false;
    tip.style.left = "0px"; /* measured where it has its whole width, then placed where it fits */
    const area = box.getBoundingClientRect(), x = e.clientX - area.left + box.scrollLeft, y = e.clientY - area.top + box.scrollTop;
    tip.style.left = Math.max(0, Math.min(x + 14, area.width - tip.offsetWidth - 4)) + "px";
    tip.style.top = y + 18 + "px";
  }

  const colours = new Map();
  /* One colour per module, the same in every view and run. */
  function colourOf(name) {
    const module = moduleOf(name);
    let colour = colours.get(module);
    if (!colour) {
      let h = 2166136261;
      for (let i = 0; i < module.length; i++) h = Math.imul(h ^ module.charCodeAt(i), 16777619);
      const hue = (h >>> 0) % 360;
      const light = 62 + ((h >>> 9) % 3) * 6;
      colour = "hsl(" + hue + ",58%," + light + "%)";
      colours.set(module, colour);
    }
    return colour;
  }

  function escapeHtml(text) {
    return String(text).replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"})[c]);
  }

  /* u32 count, u32 level, f64 start[n], f64 end[n], u32 region[n], calls[n], lane[n], depth[n] */
  function decodeSpans(buffer) {
    const head = new Uint32Array(buffer, 0, 2);
    const n = head[0];
    return {
      count: n, level: head[1],
      start: new Float64Array(buffer, 8, n), end: new Float64Array(buffer, 8 + 8 * n, n),
      region: new Uint32Array(buffer, 8 + 16 * n, n), calls: new Uint32Array(buffer, 8 + 20 * n, n),
      lane: new Uint32Array(buffer, 8 + 24 * n, n), depth: new Uint32Array(buffer, 8 + 28 * n, n),
    };
  }

  /* u32 count, u32 level, f64 time[n], min[n], max[n], last[n], u32 track[n] */
  function decodeSamples(buffer) {
    const head = new Uint32Array(buffer, 0, 2);
    const n = head[0];
    return {
      count: n, level: head[1],
      time: new Float64Array(buffer, 8, n), min: new Float64Array(buffer, 8 + 8 * n, n),
      max: new Float64Array(buffer, 8 + 16 * n, n), last: new Float64Array(buffer, 8 + 24 * n, n),
      track: new Uint32Array(buffer, 8 + 32 * n, n),
    };
  }

  /* u32 count, u32 0, then per node u32 parent, u32 region, f64 visits, inclusive, exclusive */
  function decodeTree(buffer) {
    const view = new DataView(buffer);
    const n = view.getUint32(0, true);
    const tree = {
      count: n, parent: new Uint32Array(n), region: new Uint32Array(n),
      visits: new Float64Array(n), inclusive: new Float64Array(n), exclusive: new Float64Array(n),
      children: [], roots: [],
    };
    for (let i = 0; i < n; i++) tree.children.push([]);
    for (let i = 0, p = 8; i < n; i++, p += 32) {
      tree.parent[i] = view.getUint32(p, true);
      tree.region[i] = view.getUint32(p + 4, true);
      tree.visits[i] = view.getFloat64(p + 8, true);
      tree.inclusive[i] = view.getFloat64(p + 16, true);
      tree.exclusive[i] = view.getFloat64(p + 24, true);
      (tree.parent[i] === NO_PARENT ? tree.roots : tree.children[tree.parent[i]]).push(i);
    }
    tree.total = tree.roots.reduce((s, root) => s + tree.inclusive[root], 0);
    return tree;
  }

  /* Per region of a call tree: visits, exclusive time, and inclusive time
   * counted once per outermost activation (recursion is not counted twice),
   * as `tracetop summary` counts them. Sorted by exclusive time. */
  function flatProfile(tree, regions) {
    const rows = new Map();
    const active = new Map();
    /* Depth first with an explicit stack of (node, leaving): trees can be deep. */
    const stack = tree.roots.slice().reverse().map((node) => [node, false]);
    while (stack.length) {
      const [node, leaving] = stack.pop();
      const r = tree.region[node];
      if (leaving) {
        active.set(r, active.get(r) - 1);
        continue;
      }
      let row = rows.get(r);
      if (!row) {
        const region = regions[r];
        row = {region: r, name: region.name, file: region.file, line: region.line, visits: 0, inclusive: 0, exclusive: 0};
        rows.set(r, row);
      }
      row.visits += tree.visits[node];
      row.exclusive += tree.exclusive[node];
      const open = active.get(r) || 0;
      if (open === 0) row.inclusive += tree.inclusive[node];
      active.set(r, open + 1);
      stack.push([node, true]);
      const children = tree.children[node];
      for (let i = children.length - 1; i >= 0; i--) stack.push([children[i], false]);
    }
    return Array.from(rows.values()).sort((a, b) => b.exclusive - a.exclusive);
  }

  /* Callers and callees of `region` in a call tree ("sandwich"): for the
   * function itself and per caller and callee region, visits and inclusive
   * time. A time is counted once however deep recursion nests it: a node
   * adds its time only when no ancestor already counts for the same row. */
  function sandwich(tree, region) {
    const self = {visits: 0, inclusive: 0, exclusive: 0};
    const callers = new Map(), callees = new Map();
    const activeCaller = new Map(), activeCallee = new Map();
    let activeSelf = 0;
    const add = (rows, active, key, node) => {
      let row = rows.get(key);
      if (!row) rows.set(key, row = {region: key, visits: 0, inclusive: 0});
      row.visits += tree.visits[node];
      if (!active.get(key)) row.inclusive += tree.inclusive[node];
      active.set(key, (active.get(key) || 0) + 1);
    };
    const stack = tree.roots.slice().reverse().map((node) => [node, null]);
    while (stack.length) {
      const [node, leave] = stack.pop();
      if (leave) {
        for (const [active, key] of leave) active.set(key, active.get(key) - 1);
        if (tree.region[node] === region) activeSelf--;
        continue;
      }
      const parent = tree.parent[node], undo = [];
      if (parent !== NO_PARENT && tree.region[parent] === region) {
        add(callees, activeCallee, tree.region[node], node);
        undo.push([activeCallee, tree.region[node]]);
      }
      if (tree.region[node] === region) {
        const caller = parent === NO_PARENT ? -1 : tree.region[parent];
        add(callers, activeCaller, caller, node);
        undo.push([activeCaller, caller]);
        self.visits += tree.visits[node];
        self.exclusive += tree.exclusive[node];
        if (activeSelf === 0) self.inclusive += tree.inclusive[node];
        activeSelf++;
      }
      stack.push([node, undo]);
      const children = tree.children[node];
      for (let i = children.length - 1; i >= 0; i--) stack.push([children[i], null]);
    }
    const order = (rows) => Array.from(rows.values()).sort((a, b) => b.inclusive - a.inclusive);
    return {self, callers: order(callers), callees: order(callees)};
  }

  function location(region) {
    if (!region.file) return "";
    const slash = region.file.lastIndexOf("/");
    return region.file.slice(slash + 1) + (region.line ? ":" + region.line : "");
  }

  /* A step of 1, 2 or 5 times a power of ten near range / target. */
  function niceStep(range, target) {
    const raw = range / Math.max(1, target);
    const power = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 5, 10]) if (m * power >= raw) return m * power;
    return 10 * power;
  }

  /* ---- flame graph: callers above their callees, widths by inclusive time ---- */

  const FLAME_ROW = 18;

  /* Lays out the tree under `focus` (null: all roots) for a canvas `width`
   * pixels wide: boxes {node, x, w, depth}, the focus's ancestors across the
   * full width above it. Boxes below half a pixel are left out. */
  function flameLayout(tree, focus, width) {
    const boxes = [];
    const ancestors = [];
    for (let n = focus; n !== null && n !== undefined && tree.parent[n] !== NO_PARENT; ) {
      n = tree.parent[n];
      ancestors.unshift(n);
    }
    ancestors.forEach((node, depth) => boxes.push({node, x: 0, w: width, depth}));
    const top = focus === null ? tree.roots : [focus];
    const total = top.reduce((sum, n) => sum + tree.inclusive[n], 0);
    if (total <= 0) return {boxes, depth: ancestors.length};
    const scale = width / total;
    let maxDepth = ancestors.length;
    const byName = (a, b) => tree.region[a] - tree.region[b];
    const stack = [];
    let x = 0;
    for (const n of top.slice().sort(byName)) {
      stack.push([n, x, ancestors.length]);
      x += tree.inclusive[n] * scale;
    }
    while (stack.length) {
      const [node, left, depth] = stack.pop();
      const w = tree.inclusive[node] * scale;
      if (w < 0.5) continue;
      boxes.push({node, x: left, w, depth});
      if (depth > maxDepth) maxDepth = depth;
      let cx = left;
      for (const child of tree.children[node].slice().sort(byName)) {
        stack.push([child, cx, depth + 1]);
        cx += tree.inclusive[child] * scale;
      }
    }
    return {boxes, depth: maxDepth + 1};
  }

  function drawFlame(canvas, tree, regions, focus, highlight) {
    const ratio = window.devicePixelRatio || 1;
    const width = canvas.clientWidth;
    const layout = flameLayout(tree, focus, width);
    const height = Math.max(60, layout.depth * FLAME_ROW + 4);
    canvas.style.height = height + "px";
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    const g = canvas.getContext("2d");
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.clearRect(0, 0, width, height);
    g.font = "11px system-ui, sans-serif";
    g.textBaseline = "middle";
    for (const box of layout.boxes) {
      const name = regions[tree.region[box.node]].name;
      const y = box.depth * FLAME_ROW;
      g.fillStyle = colourOf(name);
      g.globalAlpha = highlight && !highlight(name) ? 0.3 : 1;
      g.fillRect(box.x, y, Math.max(0.5, box.w - 0.5), FLAME_ROW - 1);
      const label = box.w > 16 ? fitText(g, displayName(name), box.w - 6) : "";
      if (label) {
        g.fillStyle = "#111";
        g.fillText(label, box.x + 3, y + FLAME_ROW / 2);
      }
    }
    g.globalAlpha = 1;
    return layout;
  }

  function flameHit(layout, x, y) {
    const depth = Math.floor(y / FLAME_ROW);
    for (const box of layout.boxes) if (box.depth === depth && x >= box.x && x < box.x + box.w) return box;
    return null;
  }

  return {
    NO_PARENT, fmtDuration, fmtBytes, fmtTime, fmtCount, count, percent, moduleOf, displayName, middle, fitText, nameHtml, flameTip, colourOf,
    escapeHtml, decodeSpans, sandwich,
    decodeSamples, decodeTree, flatProfile, location, niceStep, flameLayout, drawFlame, flameHit, FLAME_ROW,
  };
})();

/* flame.js -- the flame graph of a call tree, in the viewer's flame tab and the report alike: callers above
 * their callees, widths by inclusive time (or whatever a tree's `inclusive` holds).
 *
 * Exports: FLAME_ROW, flameLayout, drawFlame, flameHit (the frame at a point), flameTip (its hover). */
import {NO_PARENT} from "./decode.js";
import {count, escapeHtml, fmtDuration, percent} from "./format.js";
import {colourOf, displayName, fitText} from "./names.js";

export const FLAME_ROW = 18;

/* Lays out the tree under `focus` (null: all roots) for a canvas `width`
 * pixels wide: boxes {node, x, w, depth}, the focus's ancestors across the
 * full width above it. Boxes below half a pixel are left out. */
export function flameLayout(tree, focus, width) {
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

export function drawFlame(canvas, tree, regions, focus, highlight) {
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

export function flameHit(layout, x, y) {
  const depth = Math.floor(y / FLAME_ROW);
  for (const box of layout.boxes) if (box.depth === depth && x >= box.x && x < box.x + box.w) return box;
  return null;
}

/* The flame graph's hover for `node` of `tree` (region `name`): shown in `tip` beside the mouse of event `e`,
 * within `box`, the flame graph's scrolling box that holds `tip`; `html` in place of the times when given. */
export function flameTip(tip, box, e, tree, node, name, html) {
  tip.innerHTML = html || '<div class="name">' + escapeHtml(displayName(name)) + '</div><div class="sub">' + escapeHtml(name) + "</div>" +
    "<div>" + ["Inclusive " + fmtDuration(tree.inclusive[node]) + " (" + percent(tree.inclusive[node], tree.total) + ")",
      "Exclusive " + fmtDuration(tree.exclusive[node]), count(tree.visits[node], "visit")].map(escapeHtml).join("<br>") + "</div>";
  tip.hidden = false;
  tip.style.left = "0px"; /* measured where it has its whole width, then placed where it fits */
  const area = box.getBoundingClientRect(), x = e.clientX - area.left + box.scrollLeft, y = e.clientY - area.top + box.scrollTop;
  tip.style.left = Math.max(0, Math.min(x + 14, area.width - tip.offsetWidth - 4)) + "px";
  tip.style.top = y + 18 + "px";
}

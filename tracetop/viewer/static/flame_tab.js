/* flame_tab.js -- the flame graph tab: the profile's tree (state.tree) drawn by flame.js, the function
 * searched for in full colour; a click zooms into a frame and selects its function.
 *
 * Exports: drawFlameTab, findFrame (for tests). */
import {on, state} from "./state.js";
import {FLAME_ROW, drawFlame, flameHit, flameTip} from "./flame.js";
import {$} from "./dom.js";
import {searchMatcher, selectRegion} from "./search.js";
import * as objects from "./objects.js";

let flameLayout = null;

export function drawFlameTab() {
  if (!state.tree) return;
  const match = searchMatcher();
  flameLayout = drawFlame($("flame"), objects.flameTree(state.tree), state.meta.regions, state.focus, match);
}

function redrawShown() {
  if (state.tab === "flame") drawFlameTab();
}

/* Where the flame graph draws a frame of region `name` at `depth` or deeper: {x, y} in client coordinates. */
export function findFrame(name, depth) {
  const box = $("flame").getBoundingClientRect();
  for (const b of (flameLayout && flameLayout.boxes) || []) {
    if (b.depth >= depth && b.w > 4 && state.meta.regions[state.tree.region[b.node]].name === name) {
      return {x: box.left + b.x + b.w / 2, y: box.top + b.depth * FLAME_ROW + FLAME_ROW / 2};
    }
  }
  return null;
}

$("flame").addEventListener("click", (e) => {
  if (!flameLayout) return;
  const box = flameHit(flameLayout, e.offsetX, e.offsetY);
  state.focus = box ? box.node : null;
  if (box) selectRegion(state.tree.region[box.node]); else drawFlameTab();
});
$("flame-reset").addEventListener("click", () => { state.focus = null; drawFlameTab(); });
$("flame").addEventListener("mousemove", (e) => {
  const box = flameLayout && flameHit(flameLayout, e.offsetX, e.offsetY);
  const tip = $("flame-tip");
  if (!box) { tip.hidden = true; return; }
  const t = state.tree, n = box.node;
  flameTip(tip, $("flame-box"), e, t, n, state.meta.regions[t.region[n]].name, objects.flameTip(t, n));
});
$("flame").addEventListener("mouseleave", () => { $("flame-tip").hidden = true; });
window.addEventListener("resize", redrawShown);

on("search", redrawShown);
on("flame", redrawShown);

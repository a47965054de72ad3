/* input.js -- the timeline's mouse and keys: the wheel zooms (or pans), a drag pans, shift+drag or a drag on the
 * ruler selects a range, a click shows a call's details, W/S/A/D and the arrows move the view (held, at a speed
 * per second, as in Perfetto), 0 or Home shows the whole run, Esc clears; the splitter shares the height
 * between the timeline and the panels below it.
 *
 * Exports nothing: importing it adds the listeners. */
import {ensureData, panBy, scheduleDraw, setView, state} from "./state.js";
import {GUTTER, RULER, plotWidth, pos, scroller, tOf, zoomAt} from "./geometry.js";
import {placeLabels} from "./layout.js";
import {hover, itemAt} from "./timeline.js";
import {hideTooltip, showDetails} from "./details.js";
import {clearSelection, setSelection} from "./selection.js";
import {clearSelectedRegion} from "./search.js";
import {$} from "./dom.js";

scroller.addEventListener("scroll", () => { placeLabels(); scheduleDraw(); });

scroller.addEventListener("wheel", (e) => {
  const x = pos(e).x;
  if (x < GUTTER && !e.ctrlKey) return; /* over the names: scroll the lanes */
  e.preventDefault();
  if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
    panBy((e.shiftKey ? e.deltaY : e.deltaX) / plotWidth());
  } else {
    zoomAt(x, Math.pow(1.0015, e.deltaY * (e.deltaMode === 1 ? 30 : 1)));
  }
}, {passive: false});

scroller.addEventListener("mousedown", (e) => {
  if (e.button !== 0) return;
  const {x, y} = pos(e);
  const select = e.shiftKey || y < RULER;
  state.drag = {x0: e.clientX, t0: state.t0, t1: state.t1, select, anchor: tOf(x), moved: false, startX: x, startY: y};
  if (!select) scroller.classList.add("dragging");
  e.preventDefault();
});

window.addEventListener("mousemove", (e) => {
  const drag = state.drag;
  if (!drag) return;
  const dx = e.clientX - drag.x0;
  if (Math.abs(dx) > 2) drag.moved = true;
  if (drag.select) {
    const t = tOf(drag.startX + dx);
    state.selection = [Math.min(drag.anchor, t), Math.max(drag.anchor, t)];
    scheduleDraw();
  } else if (drag.moved) {
    const dt = dx / plotWidth() * (drag.t1 - drag.t0);
    setView(drag.t0 - dt, drag.t1 - dt);
  }
});

window.addEventListener("mouseup", () => {
  if (!state.drag) return;
  const d = state.drag;
  state.drag = null;
  scroller.classList.remove("dragging");
  if (d.select && d.moved && state.selection) setSelection(state.selection[0], state.selection[1]);
  else if (d.select && !d.moved) scheduleDraw();
  else if (!d.moved) {
    const item = itemAt(d.startX, d.startY);
    if (item) showDetails(item);
  }
});

scroller.addEventListener("mousemove", (e) => {
  state.mouse = pos(e);
  hover(state.mouse, false);
});
scroller.addEventListener("mouseleave", () => { hideTooltip(); state.mouse = null; });

/* The lane names take clicks (fold, depth) and pass the wheel on to the lanes. */
$("tl-labels").addEventListener("wheel", (e) => {
  e.preventDefault();
  scroller.scrollTop += e.deltaY * (e.deltaMode === 1 ? 15 : 1);
}, {passive: false});

/* The bar between the timeline and the panels below it: dragged, it shares the height between them. */
$("splitter").addEventListener("mousedown", (e) => {
  if (e.button !== 0) return;
  e.preventDefault();
  const bottom = $("bottom"), start = e.clientY, height = bottom.getBoundingClientRect().height;
  const room = $("timeline-tab").getBoundingClientRect().height;
  const move = (m) => { bottom.style.height = Math.max(40, Math.min(room - 160, height - (m.clientY - start))) + "px"; };
  const up = () => { window.removeEventListener("mousemove", move); window.removeEventListener("mouseup", up); };
  window.addEventListener("mousemove", move);
  window.addEventListener("mouseup", up);
});
new ResizeObserver(() => { placeLabels(); ensureData(); scheduleDraw(); }).observe($("timeline"));

/* W/S/A/D (and the arrows): a press moves one step at once; held, the view
 * keeps moving every frame, at a speed per second, as in Perfetto. */
const MOTION = {
  w: (f) => zoomAt(zoomCentre(), Math.pow(0.8, f)), s: (f) => zoomAt(zoomCentre(), Math.pow(1.25, f)),
  a: (f) => panBy(-0.1 * f), d: (f) => panBy(0.1 * f),
};
const ARROWS = {arrowleft: "a", arrowright: "d", arrowup: "w", arrowdown: "s"};
const HELD_STEPS_PER_SECOND = 8, HELD_AFTER_MS = 250;
const held = new Map(); /* key -> when it went down */
let motionFrame = 0, motionLast = 0;

function zoomCentre() { return state.mouse ? state.mouse.x : GUTTER + plotWidth() / 2; }

function keepMoving(now) {
  const seconds = Math.min(0.1, (now - motionLast) / 1000);
  motionLast = now;
  for (const [key, since] of held) if (now - since > HELD_AFTER_MS) MOTION[key](seconds * HELD_STEPS_PER_SECOND);
  motionFrame = held.size ? requestAnimationFrame(keepMoving) : 0;
}

window.addEventListener("keydown", (e) => {
  if (e.target instanceof HTMLInputElement || e.target instanceof HTMLSelectElement || state.tab !== "timeline") return;
  const lower = e.key.toLowerCase(), key = ARROWS[lower] || lower;
  if (MOTION[key]) {
    if (!e.repeat) {
      MOTION[key](1);
      held.set(key, performance.now());
      if (!motionFrame) {
        motionLast = performance.now();
        motionFrame = requestAnimationFrame(keepMoving);
      }
    }
  } else if (key === "escape") {
    clearSelection();
    clearSelectedRegion();
  } else if (key === "0" || key === "home") {
    setView(state.begin, state.end);
  } else {
    return;
  }
  e.preventDefault();
});
window.addEventListener("keyup", (e) => {
  const lower = e.key.toLowerCase();
  held.delete(ARROWS[lower] || lower);
});
window.addEventListener("blur", () => held.clear());

window.addEventListener("resize", () => { ensureData(); scheduleDraw(); });

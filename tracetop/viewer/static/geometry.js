/* geometry.js -- where the timeline draws: its sizes, its canvas and scrolling box, and the mapping between
 * times and x.
 *
 * Exports: GUTTER, RULER, ROW, LANE_PAD, TRACK, TRACK_HEADER, MARKS, PROCESS_HEADER, OVERVIEW, FOLDED, canvas,
 * scroller, pos, plotWidth, xOf, tOf, zoomAt. */
import {setView, state} from "./state.js";
import {$} from "./dom.js";

export const GUTTER = 170, RULER = 26, ROW = 15, LANE_PAD = 8, TRACK = 38, TRACK_HEADER = 20, MARKS = 9, PROCESS_HEADER = 18;
export const OVERVIEW = 8, FOLDED = 14; /* the overview band of a lane, shown and folded */

export const canvas = $("tl-canvas"), scroller = $("tl-scroll");

/* A mouse event's point in the timeline's visible box. */
export function pos(e) {
  const box = scroller.getBoundingClientRect();
  return {x: e.clientX - box.left, y: e.clientY - box.top};
}

export function plotWidth() { return Math.max(1, canvas.clientWidth - GUTTER); }
export function xOf(t) { return GUTTER + (t - state.t0) / (state.t1 - state.t0) * plotWidth(); }
export function tOf(x) { return state.t0 + (x - GUTTER) / plotWidth() * (state.t1 - state.t0); }

export function zoomAt(x, factor) {
  const t = tOf(Math.min(Math.max(x, GUTTER), GUTTER + plotWidth()));
  setView(t - (t - state.t0) * factor, t + (state.t1 - t) * factor);
}

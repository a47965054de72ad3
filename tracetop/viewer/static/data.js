/* data.js -- what the timeline draws, fetched for the view: the spans of every lane, those of the regions
 * searched for, the counter tracks' samples, the lanes' marks and their threads' activity.
 *
 * An answer covers a window around the view (a view on each side) at about the view's resolution; a new one is
 * asked for when the view leaves it or needs finer detail. One query at a time per kind; the latest view wins.
 *
 * Exports: windowFor, covers, trackRanges, loadMarks, loadActivity; it answers the "fetch" event. */
import {ensureData, on, scheduleDraw, state} from "./state.js";
import {plotWidth} from "./geometry.js";
import {api} from "./api.js";
import {decodeSamples, decodeSpans} from "./decode.js";
import {setStatus} from "./dom.js";
import {showSearchInfo} from "./search.js";

const MAX_MARKS = 20000; /* marks fetched at start; beyond, lanes show none */

export function windowFor() {
  const span = state.t1 - state.t0;
  const t0 = Math.max(state.begin, Math.floor(state.t0 - span));
  const t1 = Math.min(state.end + 1, Math.ceil(state.t1 + span));
  const width = Math.min(65536, Math.max(1, Math.round(plotWidth() * (t1 - t0) / span)));
  return {t0, t1: Math.max(t1, t0 + 1), width, nsPerPx: (t1 - t0) / width};
}

/* Whether an answer for window w still serves the view. */
export function covers(w) {
  if (!w) return false;
  const nsPerPx = (state.t1 - state.t0) / plotWidth();
  const leftOk = w.t0 <= Math.max(state.begin, state.t0), rightOk = w.t1 >= Math.min(state.end + 1, state.t1);
  return leftOk && rightOk && w.nsPerPx <= nsPerPx * 1.5 && w.nsPerPx >= nsPerPx / 4;
}

/* Decoded samples `s` of window `w`, with where each track's samples are: s.ranges, track -> [first, end). */
export function trackRanges(s, w) {
  s.window = w;
  s.ranges = new Map();
  for (let i = 0; i < s.count; i++) {
    const r = s.ranges.get(s.track[i]);
    if (r) r[1] = i + 1; else s.ranges.set(s.track[i], [i, i + 1]);
  }
  return s;
}

function request(kind, make) {
  if (state.inflight[kind]) return;
  const job = make();
  if (!job) return;
  state.inflight[kind] = true;
  job.promise.then((response) => response.arrayBuffer()).then((buffer) => job.done(buffer)).catch((error) => setStatus(error.message, true)).finally(() => {
    state.inflight[kind] = false;
    ensureData();
    scheduleDraw();
  });
}

function ensureTimelineData() {
  if (!covers(state.spans && state.spans.window)) {
    request("spans", () => {
      const w = windowFor();
      return {
        promise: api("spans", {t0: w.t0, t1: w.t1, width: w.width, lanes: "all"}),
        done: (buffer) => { state.spans = indexRows(decodeSpans(buffer), w); },
      };
    });
  }
  const regions = state.search.regions;
  if (regions && regions.length && !(state.highlight && state.highlight.key === state.search.key && covers(state.highlight.window))) {
    request("highlight", () => {
      const w = windowFor(), key = state.search.key;
      return {
        promise: api("spans", {t0: w.t0, t1: w.t1, width: w.width, lanes: "all", only: regions.join(",")}),
        done: (buffer) => {
          state.highlight = indexRows(decodeSpans(buffer), w);
          state.highlight.key = key;
          showSearchInfo();
        },
      };
    });
  }
  if (state.meta.tracks.length && !covers(state.samples && state.samples.window)) {
    request("samples", () => {
      const w = windowFor();
      return {
        promise: api("samples", {t0: w.t0, t1: w.t1, width: w.width, tracks: state.meta.tracks.map((t, i) => i).join(",")}),
        done: (buffer) => { state.samples = trackRanges(decodeSamples(buffer), w); },
      };
    });
  }
}

/* The answer's items come grouped by lane, then depth, in start order:
 * remember where each (lane, depth) row is, for drawing and hit tests. */
function indexRows(spans, w) {
  spans.window = w;
  spans.rows = new Map();
  for (let i = 0; i < spans.count; i++) {
    const key = spans.lane[i] * 65536 + spans.depth[i];
    const r = spans.rows.get(key);
    if (r) r[1] = i + 1; else spans.rows.set(key, [i, i + 1]);
  }
  return spans;
}

export function loadMarks() {
  const lanes = state.meta.lanes;
  if (lanes.reduce((s, l) => s + l.marks, 0) > MAX_MARKS) return;
  lanes.forEach((lane, i) => {
    if (!lane.marks) return;
    api("marks", {lane: i}).then((r) => r.json()).then((marks) => {
      state.marks[i] = marks;
      scheduleDraw();
    }).catch((error) => setStatus(error.message, true));
  });
}

export function loadActivity() {
  api("activity").then((r) => r.json()).then((activity) => {
    state.activity = activity;
    scheduleDraw();
  }).catch(() => {}); /* no band: the timeline stands without it */
}

on("fetch", ensureTimelineData);

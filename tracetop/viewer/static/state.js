/* state.js -- the viewer's state, owned here: the experiment (meta), the view's range, the lanes' order and
 * folding, what is fetched for the view, the range and the call selected, the search, the tab and its profile
 * tree. Other modules read `state`; they change it through the functions below, or (for what only they fill
 * in, such as the answers they fetched) by assigning its fields.
 *
 * Changes are told as events, so that the modules that react to them need not be imported by those that make
 * them:
 *   "fetch"   the view needs data: each fetching module asks for what it lacks (ensureData)
 *   "draw"    a frame is due (scheduleDraw: at most one per animation frame)
 *   "layout"  the lanes' order or folding changed (relayout)
 *   "search"  the search or the function selected changed
 *   "scope"   the profile's scope changed: its tree was dropped (resetScope)
 *   "flame"   the flame graph's widths changed
 *
 * Exports: state, TREE_PAGE, FLAT_PAGE, on, emit, scheduleDraw, ensureData, relayout, setView, panBy,
 * raiseLane, toggleLane, toggleDepth, toggleProcess, setLaneOrder, resetScope. */

export const TREE_PAGE = 3000, FLAT_PAGE = 1000; /* rows of the call tree and the flat profile shown at a time */
const MIN_SPAN = 200; /* ns: the narrowest view */

export const state = {
  meta: null,
  begin: 0, end: 1,
  t0: 0, t1: 1,
  layout: null,         /* lane and track positions (layout.js) */
  rowCap: 0,            /* rows of calls a lane shows before its depth is expanded */
  laneViews: [],        /* per lane: {folded, rows} */
  foldedProcesses: new Set(),
  laneOrder: [],        /* lanes top to bottom; a process's lanes stay together */
  spans: null,          /* the last answer for the view, with its window */
  highlight: null,      /* the last answer of the search */
  samples: null,
  marks: [],            /* per lane: [[time, name], ...] */
  activity: null,       /* per lane: its thread's usage records (timeline.js's drawActivity) */
  inflight: {},
  selection: null,      /* [t0, t1] */
  selected: null,       /* {lane, depth, start, end, region, calls} */
  search: {text: "", regions: null},
  mouse: null,
  drag: null,           /* a press of the mouse on the timeline until it is let go (input.js) */
  callCache: new Map(),
  frameTimes: [],
  firstPaint: null,
  tab: "timeline",
  focus: null,          /* flame graph focus node */
  tree: null,           /* profile tree for the current scope */
  flatSort: {key: "exclusive", down: true},
  treeRows: TREE_PAGE, flatRows: FLAT_PAGE,
  treeLoading: null,    /* {key, promise} of the tree being computed */
};

const listeners = new Map(); /* event -> [listener, ...], called in the order they were added */

export function on(event, listener) {
  if (!listeners.has(event)) listeners.set(event, []);
  listeners.get(event).push(listener);
}

export function emit(event) {
  for (const listener of listeners.get(event) || []) listener();
}

let drawPending = false;
export function scheduleDraw() {
  if (drawPending) return;
  drawPending = true;
  requestAnimationFrame(() => {
    drawPending = false;
    emit("draw");
  });
}

export function ensureData() {
  if (state.meta) emit("fetch");
}

export function relayout() {
  if (state.meta) emit("layout");
  scheduleDraw();
}

/* ---- the view's range ---- */

export function setView(t0, t1) {
  const full = state.end - state.begin;
  let span = Math.min(Math.max(t1 - t0, MIN_SPAN), full * 1.1 + MIN_SPAN);
  let a = (t0 + t1) / 2 - span / 2;
  a = Math.min(Math.max(a, state.begin - full * 0.05), state.end + full * 0.05 - span);
  state.t0 = a;
  state.t1 = a + span;
  ensureData();
  scheduleDraw();
}

export function panBy(fraction) {
  const d = (state.t1 - state.t0) * fraction;
  setView(state.t0 + d, state.t1 + d);
}

/* ---- the lanes ---- */

/* Moves lane i to the top of its process's lanes. */
export function raiseLane(i) {
  const pid = state.meta.lanes[i].pid, order = state.laneOrder.filter((j) => j !== i);
  order.splice(order.findIndex((j) => state.meta.lanes[j].pid === pid), 0, i);
  setLaneOrder(order);
}

/* Lanes top to bottom (a process's lanes together), e.g. MPI ranks in rank order. */
export function setLaneOrder(order) {
  state.laneOrder = order;
  relayout();
}

export function toggleLane(i) {
  state.laneViews[i].folded = !state.laneViews[i].folded;
  relayout();
}

/* All the depths of a lane, or back to the default bound. */
export function toggleDepth(i) {
  const v = state.laneViews[i], depths = Math.max(1, state.meta.lanes[i].depths);
  v.rows = v.rows >= depths ? state.rowCap : depths;
  v.folded = false;
  relayout();
}

export function toggleProcess(pid) {
  if (state.foldedProcesses.has(pid)) state.foldedProcesses.delete(pid); else state.foldedProcesses.add(pid);
  relayout();
}

/* ---- the profile's scope ---- */

/* The scope's tree is computed anew, and the flame graph's focus, a node of the old tree, dropped. */
export function resetScope() {
  state.tree = null;
  state.focus = null;
  emit("scope");
}

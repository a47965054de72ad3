/* viewer.js -- the viewer served by `tracetop view`: a timeline of every
 * lane (thread) with its call stack as a flame chart and its counter tracks,
 * a call tree, a flat profile and a flame graph, for the whole run or a
 * selected range. The server answers viewport queries from the index with
 * what can be seen (src/index/lod.h), so drawing costs the same at any size.
 *
 * Data flow: the view (t0, t1) changes at once on input and is drawn from
 * the last answer, placed by its times; a new answer is asked for when the
 * view leaves the range fetched, or needs finer detail. One query at a time
 * per kind; the latest view wins. */
"use strict";

(function () {
  const GUTTER = 170, RULER = 26, ROW = 15, LANE_PAD = 8, TRACK = 38, TRACK_HEADER = 20, MARKS = 9, PROCESS_HEADER = 18;
  const OVERVIEW = 8, FOLDED = 14; /* the overview band of a lane, shown and folded */
  const MIN_ROWS = 2, MAX_ROWS = 12; /* rows of calls a lane shows before its depth is expanded */
  const MAX_MARKS = 20000; /* marks fetched at start; beyond, lanes show none */
  const MIN_SPAN = 200; /* ns: the narrowest view */
  const TREE_PAGE = 3000, FLAT_PAGE = 1000; /* rows of the call tree and the flat profile shown at a time */
  const $ = (id) => document.getElementById(id);

  const api = (name, params) => {
    const query = new URLSearchParams(params).toString();
    return fetch("api/" + name + (query ? "?" + query : "")).then((response) => {
      if (!response.ok) return response.text().then((text) => { throw new Error(text.trim()); });
      return response;
    });
  };

  const state = {
    meta: null,
    begin: 0, end: 1,
    t0: 0, t1: 1,
    layout: null,         /* lane and track positions */
    spans: null,          /* the last answer for the view, with its window */
    highlight: null,      /* the last answer of the search */
    samples: null,
    marks: [],            /* per lane: [[time, name], ...] */
    activity: null,       /* per lane: its thread's usage records (see drawActivity) */
    inflight: {},
    selection: null,      /* [t0, t1] */
    selected: null,       /* {lane, depth, start, end, region, calls} */
    search: {text: "", regions: null},
    mouse: null,
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

  const canvas = $("tl-canvas"), scroller = $("tl-scroll"), spacer = $("tl-spacer"), tooltip = $("tooltip");
  const overlays = []; /* what other files draw over the lanes (comm.js): {draw(g, scroll, height)} each */

  /* Sections that other files draw below the lanes (tasks.js), each {layout(y, labels) -> the y below it,
   * draw(g, view), tip(x, y, view) -> {title, lines} or null}; window.tracetopSection(section) adds one. */
  const sections = [];
  function sectionView(height) {
    return {t0: state.t0, t1: state.t1, xOf, left: GUTTER, width: plotWidth(), top: RULER, height,
            scroll: scroller.scrollTop, meta: state.meta};
  }
  window.tracetopSection = (section) => {
    sections.push(section);
    section.start({api, relayout: () => { if (state.meta) buildLayout(); scheduleDraw(); }, redraw: scheduleDraw});
  };

  /* ---- geometry ---- */

  /* A mouse event's point in the timeline's visible box. */
  function pos(e) {
    const box = scroller.getBoundingClientRect();
    return {x: e.clientX - box.left, y: e.clientY - box.top};
  }

  function plotWidth() { return Math.max(1, canvas.clientWidth - GUTTER); }
  function xOf(t) { return GUTTER + (t - state.t0) / (state.t1 - state.t0) * plotWidth(); }
  function tOf(x) { return state.t0 + (x - GUTTER) / plotWidth() * (state.t1 - state.t0); }

  /* How each lane is shown: folded to its overview band, or with its rows of
   * calls, the first `rows` of them (the lane's deepest stack is drawn in the
   * band above them); a folded process shows its header alone. */
  function initLaneViews() {
    const lanes = state.meta.lanes;
    const available = Math.max(200, scroller.clientHeight) - RULER - (state.meta.tracks.length ? TRACK_HEADER + 2 * TRACK : 0) - TTObjects.height();
    const processes = new Set(lanes.map((l) => l.pid)).size;
    const perLane = (available - (processes > 1 ? processes * PROCESS_HEADER : 0)) / Math.max(1, lanes.length) - OVERVIEW - LANE_PAD;
    state.rowCap = Math.min(MAX_ROWS, Math.max(MIN_ROWS, Math.floor(perLane / ROW)));
    state.laneViews = lanes.map(() => ({folded: false, rows: state.rowCap}));
    state.foldedProcesses = new Set();
    state.laneOrder = lanes.map((lane, i) => i); /* lanes top to bottom; a process's lanes stay together */
  }

  /* Moves lane i to the top of its process's lanes. */
  function raiseLane(i) {
    const pid = state.meta.lanes[i].pid, order = state.laneOrder.filter((j) => j !== i);
    order.splice(order.findIndex((j) => state.meta.lanes[j].pid === pid), 0, i);
    state.laneOrder = order;
    buildLayout();
    scheduleDraw();
  }

  function toggleLane(i) {
    state.laneViews[i].folded = !state.laneViews[i].folded;
    buildLayout();
    scheduleDraw();
  }

  /* All the depths of a lane, or back to the default bound. */
  function toggleDepth(i) {
    const v = state.laneViews[i], depths = Math.max(1, state.meta.lanes[i].depths);
    v.rows = v.rows >= depths ? state.rowCap : depths;
    v.folded = false;
    buildLayout();
    scheduleDraw();
  }

  function toggleProcess(pid) {
    if (state.foldedProcesses.has(pid)) state.foldedProcesses.delete(pid); else state.foldedProcesses.add(pid);
    buildLayout();
    scheduleDraw();
  }

  function button(className, text, title, action) {
    const b = document.createElement("button");
    b.className = className;
    b.textContent = text;
    b.title = title;
    b.addEventListener("click", (e) => { e.stopPropagation(); action(); });
    return b;
  }

  function buildLayout() {
    const lanes = [], tracks = [], processes = [];
    const several = state.meta.lanes.some((o) => o.pid !== state.meta.lanes[0].pid);
    let y = RULER;
    /* Below a process's threads, its objects alive (objects.js). */
    const objectsOf = (k) => { const pid = state.meta.lanes[state.laneOrder[k]].pid; y = TTObjects.place(pid, y, several && state.foldedProcesses.has(pid)); };
    state.laneOrder.forEach((i, k) => {
      const lane = state.meta.lanes[i];
      if (k > 0 && lane.pid !== state.meta.lanes[state.laneOrder[k - 1]].pid) objectsOf(k - 1);
      /* With more than one process, each process's lanes come as a group under a header. */
      if (several && (k === 0 || lane.pid !== state.meta.lanes[state.laneOrder[k - 1]].pid)) {
        processes.push({lane: i, pid: lane.pid, top: y});
        y += PROCESS_HEADER;
      }
      const view = state.laneViews[i];
      const depths = Math.max(1, lane.depths);
      if (several && state.foldedProcesses.has(lane.pid)) {
        lanes[i] = {index: i, top: y, band: y, rows: y, depths, shown: 0, height: 0, hidden: true};
        return;
      }
      /* The overview band, then a strip for the lane's marks when it has any, then the rows of calls. */
      const band = view.folded ? FOLDED : OVERVIEW, strip = view.folded || !lane.marks ? 0 : MARKS;
      const shown = view.folded ? 0 : Math.min(depths, view.rows);
      const height = band + strip + shown * ROW + (view.folded ? 2 : LANE_PAD);
      lanes[i] = {index: i, top: y, band: y, rows: y + band + strip, depths, shown, height, folded: view.folded};
      y += height;
    });
    if (state.laneOrder.length) objectsOf(state.laneOrder.length - 1);
    if (state.meta.tracks.length) y += TRACK_HEADER;
    state.meta.tracks.forEach((track, i) => {
      tracks.push({index: i, top: y, height: TRACK});
      y += TRACK;
    });
    const labels = $("tl-labels");
    labels.textContent = "";
    for (const section of sections) y = section.layout(y, labels);
    state.layout = {lanes, tracks, processes, height: y + 10};
    spacer.style.height = state.layout.height + "px";
    processes.forEach((p) => {
      const lane = state.meta.lanes[p.lane];
      const div = document.createElement("div");
      div.className = "process-label";
      div.dataset.top = p.top + 1;
      div.dataset.pid = p.pid;
      const folded = state.foldedProcesses.has(p.pid);
      div.appendChild(button("fold", folded ? "▸" : "▾", (folded ? "show" : "fold") + " the threads of this process", () => toggleProcess(p.pid)));
      const name = document.createElement("span");
      name.className = "name";
      name.textContent = "process " + lane.pid + " · " + lane.process;
      div.appendChild(name);
      div.title = name.textContent;
      labels.appendChild(div);
    });
    state.laneOrder.forEach((i) => {
      const l = lanes[i];
      if (l.hidden) return;
      const lane = state.meta.lanes[l.index];
      const div = document.createElement("div");
      div.className = "lane-label" + (l.folded ? " folded" : "");
      div.dataset.top = l.top - 1;
      div.dataset.lane = l.index;
      div.title = lane.name + " — pid " + lane.pid + ", tid " + lane.native_tid + "\n" + lane.process +
        "\n" + TT.count(l.depths, "level") + " of calls; the band shows the deepest call at each moment";
      div.appendChild(button("fold", l.folded ? "▸" : "▾", l.folded ? "show the calls" : "fold to the overview band", () => toggleLane(l.index)));
      const name = document.createElement("span");
      name.className = "name";
      name.innerHTML = TT.escapeHtml(lane.name) + (several ? " <small>" + lane.pid + "</small>" : "");
      div.appendChild(name);
      if (state.laneOrder.find((j) => state.meta.lanes[j].pid === lane.pid) !== l.index) {
        div.appendChild(button("raise", "↑", "move this thread to the top" + (several ? " of its process" : ""), () => raiseLane(l.index)));
      }
      if (!l.folded && (l.depths > l.shown || l.shown > state.rowCap)) {
        div.appendChild(button("depth", l.depths > l.shown ? "+" + (l.depths - l.shown) : "−",
          l.depths > l.shown ? "show all " + l.depths + " levels" : "show " + state.rowCap + " levels", () => toggleDepth(l.index)));
      }
      labels.appendChild(div);
    });
    tracks.forEach((t) => {
      const track = state.meta.tracks[t.index];
      const div = document.createElement("div");
      div.className = "track-label";
      div.dataset.top = t.top + 2;
      div.textContent = (track.kind === "parameter" ? "param " : "") + track.name + " · " + state.meta.lanes[track.lane].name;
      div.title = track.name + " (" + track.kind + ", " + state.meta.lanes[track.lane].name + "): " +
        TT.fmtCount(track.samples) + " samples, " + track.min + " to " + track.max;
      labels.appendChild(div);
    });
    TTObjects.labels(labels);
    placeLabels();
  }

  function placeLabels() {
    const scroll = scroller.scrollTop;
    for (const div of $("tl-labels").children) {
      const top = +div.dataset.top - scroll;
      div.style.top = top + "px";
      div.style.display = top < RULER - 4 ? "none" : "";
    }
  }

  /* (lane, depth) under canvas point y, or null. */
  function rowAt(y) {
    const yy = y + scroller.scrollTop;
    for (const l of state.layout.lanes) {
      if (yy >= l.rows && yy < l.rows + l.shown * ROW) return {lane: l.index, depth: Math.floor((yy - l.rows) / ROW)};
    }
    return null;
  }

  /* ---- data ---- */

  function windowFor() {
    const span = state.t1 - state.t0;
    const t0 = Math.max(state.begin, Math.floor(state.t0 - span));
    const t1 = Math.min(state.end + 1, Math.ceil(state.t1 + span));
    const width = Math.min(65536, Math.max(1, Math.round(plotWidth() * (t1 - t0) / span)));
    return {t0, t1: Math.max(t1, t0 + 1), width, nsPerPx: (t1 - t0) / width};
  }

  /* Whether an answer for window w still serves the view. */
  function covers(w) {
    if (!w) return false;
    const nsPerPx = (state.t1 - state.t0) / plotWidth();
    const leftOk = w.t0 <= Math.max(state.begin, state.t0), rightOk = w.t1 >= Math.min(state.end + 1, state.t1);
    return leftOk && rightOk && w.nsPerPx <= nsPerPx * 1.5 && w.nsPerPx >= nsPerPx / 4;
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

  function ensureData() {
    if (!state.meta) return;
    if (!covers(state.spans && state.spans.window)) {
      request("spans", () => {
        const w = windowFor();
        return {
          promise: api("spans", {t0: w.t0, t1: w.t1, width: w.width, lanes: "all"}),
          done: (buffer) => { state.spans = indexRows(TT.decodeSpans(buffer), w); },
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
            state.highlight = indexRows(TT.decodeSpans(buffer), w);
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
          done: (buffer) => {
            const s = TT.decodeSamples(buffer);
            s.window = w;
            s.ranges = new Map();
            for (let i = 0; i < s.count; i++) {
              const r = s.ranges.get(s.track[i]);
              if (r) r[1] = i + 1; else s.ranges.set(s.track[i], [i, i + 1]);
            }
            state.samples = s;
          },
        };
      });
    }
    TTObjects.ensureData();
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

  /* ---- drawing ---- */

  let drawPending = false;
  function scheduleDraw() {
    if (drawPending) return;
    drawPending = true;
    requestAnimationFrame(() => {
      drawPending = false;
      draw();
    });
  }

  function draw() {
    if (!state.meta || state.tab !== "timeline") return;
    const started = performance.now();
    const ratio = window.devicePixelRatio || 1;
    /* As wide as the lanes' box, without its scroll bar. */
    if (canvas.clientWidth !== scroller.clientWidth) canvas.style.width = scroller.clientWidth + "px";
    const width = canvas.clientWidth, height = canvas.clientHeight;
    if (canvas.width !== Math.round(width * ratio) || canvas.height !== Math.round(height * ratio)) {
      canvas.width = Math.round(width * ratio);
      canvas.height = Math.round(height * ratio);
    }
    const g = canvas.getContext("2d");
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.clearRect(0, 0, width, height);
    const scroll = scroller.scrollTop;
    g.save();
    g.beginPath();
    g.rect(GUTTER, RULER, width - GUTTER, height - RULER);
    g.clip();
    drawLanes(g, scroll, height);
    for (const overlay of overlays) overlay.draw(g, scroll, height);
    drawTracks(g, scroll, height);
    TTObjects.draw(g, scroll, height);
    for (const section of sections) section.draw(g, sectionView(height));
    drawSelection(g, height);
    g.restore();
    drawRuler(g, width);
    g.strokeStyle = "#dcdce0";
    g.beginPath();
    g.moveTo(GUTTER - 0.5, 0);
    g.lineTo(GUTTER - 0.5, height);
    g.stroke();
    $("view-range").textContent = "view " + TT.fmtTime(state.t0 - state.begin, (state.t1 - state.t0) / 10) + " – " +
      TT.fmtTime(state.t1 - state.begin, (state.t1 - state.t0) / 10) + "  (" + TT.fmtDuration(state.t1 - state.t0) + ")";
    if (state.mouse) hover(state.mouse, true); /* a zoom or pan under a still mouse: the tooltip follows */
    const took = performance.now() - started;
    state.frameTimes.push(took);
    if (state.frameTimes.length > 2000) state.frameTimes.splice(0, 1000);
    if (state.firstPaint === null && state.spans) {
      state.firstPaint = performance.now();
      performance.mark("tracetop-first-paint");
      setTimeout(loadTree, 0); /* the profile of the whole run, ready before its tab is opened */
    }
  }

  function drawLanes(g, scroll, height) {
    const spans = state.spans;
    const hl = state.search.regions && state.search.regions.length ? state.highlight : null;
    const scale = plotWidth() / (state.t1 - state.t0);
    g.font = "11px system-ui, sans-serif";
    g.textBaseline = "middle";
    g.fillStyle = "#e6e6ea";
    for (const p of state.layout.processes) g.fillRect(GUTTER, p.top - scroll, plotWidth(), PROCESS_HEADER - 2);
    for (const l of state.layout.lanes) {
      const top = l.top - scroll;
      if (l.hidden || top > height || top + l.height < RULER) continue;
      g.fillStyle = l.index % 2 ? "#f7f7f9" : "#fff";
      g.fillRect(GUTTER, top, plotWidth(), l.height);
      if (!spans) continue;
      const dim = state.search.regions !== null;
      drawOverview(g, spans, l, top);
      if (!l.folded) drawMarks(g, l, l.rows - scroll - MARKS);
      if (!l.folded) drawActivity(g, l, l.rows - scroll + l.shown * ROW + 1);
      for (let d = 0; d < l.shown; d++) {
        const y = l.rows - scroll + d * ROW;
        if (y > height || y + ROW < RULER) continue;
        const r = spans.rows.get(l.index * 65536 + d);
        if (r) drawRow(g, spans, r, y, scale, dim ? 0.22 : 1, false);
        if (hl) {
          const h = hl.rows.get(l.index * 65536 + d);
          if (h) drawRow(g, hl, h, y, scale, 1, true);
        }
      }
    }
    const sel = state.selected;
    const l = sel && state.layout.lanes[sel.lane];
    if (sel && !l.hidden && sel.depth < l.shown) {
      const x0 = Math.max(GUTTER - 2, xOf(sel.start)), x1 = Math.min(GUTTER + plotWidth() + 2, xOf(sel.end));
      g.strokeStyle = "#000";
      g.lineWidth = 2;
      g.strokeRect(x0, l.rows - scroll + sel.depth * ROW, Math.max(2, x1 - x0), ROW - 1);
      g.lineWidth = 1;
    }
  }

  /* Per pixel column of lane l, the deepest call there (-1: none): the lane's activity at a glance, whatever
   * rows it shows. */
  function deepestCalls(spans, l) {
    const width = Math.ceil(plotWidth()), scale = plotWidth() / (state.t1 - state.t0);
    const depth = new Int32Array(width).fill(-1), item = new Int32Array(width);
    for (let d = 0; d < l.depths; d++) {
      const r = spans.rows.get(l.index * 65536 + d);
      if (!r) continue;
      for (let i = r[0]; i < r[1]; i++) {
        const x0 = Math.max(0, Math.floor((spans.start[i] - state.t0) * scale));
        const x1 = Math.min(width, Math.max(x0 + 1, Math.ceil((spans.end[i] - state.t0) * scale)));
        for (let x = x0; x < x1; x++) if (d >= depth[x]) { depth[x] = d; item[x] = i; }
      }
    }
    return {depth, item};
  }

  /* The overview band: the deepest call's colour at each moment, in runs of one region. */
  function drawOverview(g, spans, l, top) {
    const {depth, item} = deepestCalls(spans, l);
    const band = l.folded ? FOLDED : OVERVIEW, regions = state.meta.regions;
    let from = 0;
    for (let x = 1; x <= depth.length; x++) {
      const region = depth[from] < 0 ? -1 : spans.region[item[from]];
      if (x < depth.length && (depth[x] < 0 ? -1 : spans.region[item[x]]) === region) continue;
      if (region >= 0) {
        g.fillStyle = TT.colourOf(regions[region].name);
        g.fillRect(GUTTER + from, top + 1, x - from, band - 2);
      }
      from = x;
    }
  }

  /* The deepest call under x in the overview band at canvas point y, as itemAt answers; null elsewhere. */
  function bandItemAt(x, y) {
    const yy = y + scroller.scrollTop;
    const l = state.layout.lanes.find((l) => !l.hidden && yy >= l.band && yy < l.band + (l.folded ? FOLDED : OVERVIEW));
    if (!l || !state.spans || x < GUTTER) return null;
    const {depth, item} = deepestCalls(state.spans, l);
    const column = Math.floor(x - GUTTER);
    if (column < 0 || column >= depth.length || depth[column] < 0) return null;
    const s = state.spans, i = item[column];
    return {lane: l.index, depth: depth[column], start: s.start[i], end: s.end[i], region: s.region[i], calls: s.calls[i]};
  }

  /* A mark is a small triangle in the strip above the lane's calls. */
  function drawMarks(g, l, top) {
    const marks = state.marks[l.index];
    if (!marks) return;
    g.fillStyle = "#3d3d45";
    for (const [time] of marks) {
      if (time < state.t0 || time > state.t1) continue;
      const x = xOf(time);
      g.beginPath();
      g.moveTo(x - 4, top + 1);
      g.lineTo(x + 4, top + 1);
      g.lineTo(x, top + MARKS - 1);
      g.fill();
    }
  }

  /* ---- the activity band: a thread's use of the CPU and the GIL, below its calls ----
     Between two usage records [time, cpu_ns, samples, gil_samples] (cumulative), the share of the interval
     its thread held the GIL (dark), ran without holding it (light) and was off the CPU, waiting or idle
     (the band's ground), drawn as heights from the bottom. */
  const BAND = LANE_PAD - 2, BAND_GIL = "#2e7d32", BAND_CPU = "#9ccc65", BAND_OFF = "#e4e4ea";

  function loadActivity() {
    api("activity").then((r) => r.json()).then((activity) => {
      state.activity = activity;
      scheduleDraw();
    }).catch(() => {}); /* no band: the timeline stands without it */
  }

  /* Lane l's CPU and GIL band, its top at y (the lane's bottom padding). */
  function drawActivity(g, l, y) {
    const usage = state.activity && state.activity[l.index];
    if (!usage || !usage.length) return;
    let prev = [state.meta.lanes[l.index].begin_ns, 0, 0, 0];
    for (const u of usage) {
      const dt = u[0] - prev[0];
      if (dt > 0 && u[0] >= state.t0 && prev[0] <= state.t1) {
        const x0 = Math.max(GUTTER, xOf(prev[0])), x1 = Math.min(GUTTER + plotWidth(), xOf(u[0]));
        const cpu = Math.min(1, (u[1] - prev[1]) / dt);
        const gil = u[2] > prev[2] ? Math.min(1, (u[3] - prev[3]) / (u[2] - prev[2])) : 0;
        const w = Math.max(1, x1 - x0), hGil = BAND * gil, hCpu = BAND * Math.max(0, Math.min(1, cpu) - gil);
        g.fillStyle = BAND_OFF;
        g.fillRect(x0, y, w, BAND);
        g.fillStyle = BAND_GIL;
        g.fillRect(x0, y + BAND - hGil, w, hGil);
        g.fillStyle = BAND_CPU;
        g.fillRect(x0, y + BAND - hGil - hCpu, w, hCpu);
      }
      prev = u;
    }
  }

  /* The marks of lane strip under (x, y): their names, or null. */
  function marksAt(x, y) {
    const yy = y + scroller.scrollTop;
    const l = state.layout.lanes.find((l) => !l.hidden && !l.folded && yy >= l.rows - MARKS && yy < l.rows);
    if (!l || !state.marks[l.index]) return null;
    const near = state.marks[l.index].filter(([time]) => Math.abs(xOf(time) - x) <= 4);
    return near.length ? near.map(([time, name]) => name + " at " + ((time - state.begin) / 1e6).toFixed(3) + " ms") : null;
  }

  function drawRow(g, spans, range, y, scale, alpha, outline) {
    const regions = state.meta.regions;
    const left = GUTTER, right = GUTTER + plotWidth();
    g.globalAlpha = alpha;
    let lastX = -1;
    for (let i = range[0]; i < range[1]; i++) {
      let x0 = left + (spans.start[i] - state.t0) * scale, x1 = left + (spans.end[i] - state.t0) * scale;
      if (x1 < left || x0 > right) continue;
      if (x1 - x0 < 1) {
        if (Math.floor(x0) === lastX) continue; /* one sliver per pixel is all that shows */
        x1 = x0 + 1;
      }
      lastX = Math.floor(x0);
      const name = regions[spans.region[i]].name;
      g.fillStyle = outline ? "#f6c90e" : TT.colourOf(name);
      if (x0 < left - 1) x0 = left - 1;
      if (x1 > right + 1) x1 = right + 1;
      g.fillRect(x0, y, x1 - x0, ROW - 1);
      if (spans.calls[i] > 1 && x1 - x0 > 3) {
        g.fillStyle = "rgba(255,255,255,0.35)";
        g.fillRect(x0, y + ROW - 5, x1 - x0, 3);
      }
      if (outline) {
        g.strokeStyle = "#8a6d00";
        g.strokeRect(x0 + 0.5, y + 0.5, Math.max(1, x1 - x0 - 1), ROW - 2);
      }
      const room = Math.min(x1, right) - Math.max(x0, left) - 6;
      if (room > 16) {
        const short = TT.displayName(name);
        const label = TT.fitText(g, spans.calls[i] > 1 ? spans.calls[i] + " calls: " + short : short, room);
        if (label) {
          g.fillStyle = "#111";
          g.fillText(label, Math.max(x0, left) + 3, y + ROW / 2);
        }
      }
    }
    g.globalAlpha = 1;
  }

  function drawTracks(g, scroll, height) {
    const layout = state.layout;
    if (!layout.tracks.length) return;
    const headerTop = layout.tracks[0].top - TRACK_HEADER - scroll;
    g.fillStyle = "#6b6b70";
    g.font = "11px system-ui, sans-serif";
    g.fillText("counters and parameters", GUTTER + 4, headerTop + TRACK_HEADER / 2);
    const s = state.samples;
    for (const t of layout.tracks) {
      const top = t.top - scroll;
      if (top > height || top + t.height < RULER) continue;
      g.fillStyle = t.index % 2 ? "#f7f7f9" : "#fff";
      g.fillRect(GUTTER, top, plotWidth(), t.height);
      if (!s) continue;
      const r = s.ranges.get(t.index);
      if (!r) continue;
      const track = state.meta.tracks[t.index];
      const lo = track.min, hi = track.max > track.min ? track.max : track.min + 1;
      const yOf = (v) => top + t.height - 4 - (v - lo) / (hi - lo) * (t.height - 8);
      const colour = TT.colourOf(track.name + ":");
      g.fillStyle = colour;
      g.globalAlpha = 0.35;
      for (let i = r[0]; i < r[1]; i++) {
        const x = xOf(s.time[i]);
        const next = i + 1 < r[1] ? xOf(s.time[i + 1]) : x + 1;
        g.fillRect(x, yOf(s.max[i]), Math.max(1, next - x), Math.max(1, yOf(s.min[i]) - yOf(s.max[i])));
      }
      g.globalAlpha = 1;
      g.strokeStyle = colour.replace(/,(\d+)%\)$/, ",35%)");
      g.beginPath();
      for (let i = r[0]; i < r[1]; i++) {
        const x = xOf(s.time[i]), y = yOf(s.last[i]);
        if (i === r[0]) g.moveTo(x, y); else g.lineTo(x, yOf(s.last[i - 1])), g.lineTo(x, y);
      }
      g.stroke();
    }
  }

  function drawSelection(g, height) {
    if (!state.selection) return;
    const x0 = xOf(state.selection[0]), x1 = xOf(state.selection[1]);
    g.fillStyle = "rgba(43,108,176,0.12)";
    g.fillRect(x0, RULER, x1 - x0, height - RULER);
    g.strokeStyle = "rgba(43,108,176,0.8)";
    g.beginPath();
    g.moveTo(x0 + 0.5, RULER);
    g.lineTo(x0 + 0.5, height);
    g.moveTo(x1 - 0.5, RULER);
    g.lineTo(x1 - 0.5, height);
    g.stroke();
  }

  function drawRuler(g, width) {
    g.fillStyle = "#f2f2f5";
    g.fillRect(0, 0, width, RULER);
    const step = TT.niceStep(state.t1 - state.t0, plotWidth() / 110);
    g.fillStyle = "#444";
    g.strokeStyle = "#b8b8c0";
    g.font = "11px system-ui, sans-serif";
    g.textBaseline = "middle";
    g.beginPath();
    const first = Math.ceil((state.t0 - state.begin) / step) * step;
    for (let t = first; state.begin + t <= state.t1; t += step) {
      const x = Math.round(xOf(state.begin + t)) + 0.5;
      g.moveTo(x, RULER - 8);
      g.lineTo(x, RULER);
      g.fillText(TT.fmtTime(t, step), x + 3, RULER / 2 - 2);
    }
    g.stroke();
    if (state.selection) {
      const x0 = xOf(state.selection[0]), x1 = xOf(state.selection[1]);
      g.fillStyle = "rgba(43,108,176,0.35)";
      g.fillRect(Math.max(GUTTER, x0), RULER - 6, Math.max(1, x1 - Math.max(GUTTER, x0)), 6);
    }
    g.fillStyle = "#f2f2f5";
    g.fillRect(0, 0, GUTTER, RULER);
    g.fillStyle = "#6b6b70";
    g.fillText(TT.count(state.meta.lanes.length, "thread"), 6, RULER / 2);
  }

  /* ---- view changes ---- */

  function setView(t0, t1) {
    const full = state.end - state.begin;
    let span = Math.min(Math.max(t1 - t0, MIN_SPAN), full * 1.1 + MIN_SPAN);
    let a = (t0 + t1) / 2 - span / 2;
    a = Math.min(Math.max(a, state.begin - full * 0.05), state.end + full * 0.05 - span);
    state.t0 = a;
    state.t1 = a + span;
    ensureData();
    scheduleDraw();
  }

  function zoomAt(x, factor) {
    const t = tOf(Math.min(Math.max(x, GUTTER), GUTTER + plotWidth()));
    setView(t - (t - state.t0) * factor, t + (state.t1 - t) * factor);
  }

  function panBy(fraction) {
    const d = (state.t1 - state.t0) * fraction;
    setView(state.t0 + d, state.t1 + d);
  }

  /* ---- hit tests, tooltip, details ---- */

  function itemAt(x, y) {
    const row = rowAt(y);
    if (!row) return bandItemAt(x, y);
    if (!state.spans || x < GUTTER) return null;
    const source = state.search.regions && state.highlight && hitIn(state.highlight, row, x);
    return source || hitIn(state.spans, row, x);
  }

  function hitIn(spans, row, x) {
    const r = spans.rows.get(row.lane * 65536 + row.depth);
    if (!r) return null;
    const t = tOf(x), slack = 2 * (state.t1 - state.t0) / plotWidth();
    let lo = r[0], hi = r[1];
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (spans.end[mid] + slack > t) hi = mid; else lo = mid + 1;
    }
    let best = null;
    for (let i = lo; i < r[1] && spans.start[i] - slack <= t; i++) {
      if (best === null || Math.abs((spans.start[i] + spans.end[i]) / 2 - t) < Math.abs((spans.start[best] + spans.end[best]) / 2 - t)) best = i;
    }
    if (best === null) return null;
    return {lane: row.lane, depth: row.depth, start: spans.start[best], end: spans.end[best],
            region: spans.region[best], calls: spans.calls[best]};
  }

  function callDetails(item) {
    const key = item.lane + "/" + item.depth + "/" + item.start;
    if (!state.callCache.has(key)) {
      state.callCache.set(key, api("call", {lane: item.lane, depth: item.depth, t: Math.round((item.start + item.end) / 2)})
        .then((response) => response.json()));
    }
    return state.callCache.get(key);
  }

  function describe(item, call) {
    const region = state.meta.regions[item.region];
    const lane = state.meta.lanes[item.lane];
    const fields = [];
    if (region.name.includes(":")) fields.push(["Module", TT.moduleOf(region.name)]);
    if (item.calls > 1) {
      fields.push(["Calls", TT.fmtCount(item.calls) + " calls at this depth, merged at this zoom (mostly this one); zoom in to see them"]);
      fields.push(["Time span", TT.fmtDuration(item.end - item.start)]);
    } else {
      fields.push(["Duration", TT.fmtDuration(item.end - item.start)]);
      fields.push(["Self time", call ? TT.fmtDuration(call.self_ns) : "…"]);
    }
    fields.push(["Location", (region.file || "-") + (region.line ? ":" + region.line : "")]);
    fields.push(["Start", ((item.start - state.begin) / 1e6).toFixed(3) + " ms"]);
    fields.push(["Thread", lane.name + " (pid " + lane.pid + ", depth " + item.depth + ")"]);
    if (call && call.params.length) {
      fields.push(["Parameters", call.params.map((p) => p.name + " = " + p.value).join(", ")]);
    }
    return {name: region.name, short: TT.displayName(region.name), fields};
  }

  function showTooltip(item, x, y) {
    const render = (call) => {
      const d = describe(item, call);
      tooltip.innerHTML = '<div class="name">' + TT.escapeHtml(d.short) + "</div>" +
        d.fields.map(([k, v]) => '<div><span class="sub">' + TT.escapeHtml(k) + ":</span> " + TT.escapeHtml(v) + "</div>").join("");
      tooltip.hidden = false;
      const box = $("timeline").getBoundingClientRect();
      const left = Math.min(x + 14, box.width - tooltip.offsetWidth - 4);
      const top = y + 18 + tooltip.offsetHeight > box.height ? y - tooltip.offsetHeight - 8 : y + 18;
      tooltip.style.left = Math.max(0, left) + "px";
      tooltip.style.top = Math.max(0, top) + "px";
    };
    render(null);
    tooltip.dataset.key = item.lane + "/" + item.depth + "/" + item.start;
    if (item.calls === 1) {
      const key = tooltip.dataset.key;
      callDetails(item).then((call) => {
        if (!tooltip.hidden && tooltip.dataset.key === key) render(call);
      }).catch(() => {});
    }
  }

  function showMarks(names, x, y, title) {
    showTip('<div class="name">' + TT.escapeHtml(title || "mark") + "</div>" + names.map((n) => "<div>" + TT.escapeHtml(n) + "</div>").join(""), x, y);
  }

  function showTip(html, x, y) {
    tooltip.innerHTML = html;
    tooltip.dataset.key = "";
    tooltip.hidden = false;
    tooltip.style.left = x + 14 + "px";
    tooltip.style.top = y + 18 + "px";
  }

  function showDetails(item) {
    state.selected = item;
    const body = $("details-body");
    const render = (call) => {
      const d = describe(item, call);
      body.className = "";
      body.innerHTML = '<div class="name"><span class="swatch"></span><b></b></div><dl class="fields">' +
        d.fields.map(([k, v]) => "<dt>" + TT.escapeHtml(k) + "</dt><dd>" + TT.escapeHtml(v) + "</dd>").join("") + "</dl>";
      body.insertAdjacentHTML("beforeend", '<div class="actions"><button data-action="select">Highlight everywhere</button> ' +
        '<button data-action="sandwich">Callers and callees</button></div>');
      body.querySelector("b").textContent = d.short;
      body.querySelector("b").title = d.name;
      body.querySelector(".swatch").style.background = TT.colourOf(d.name);
    };
    render(null);
    if (item.calls === 1) callDetails(item).then((call) => { if (state.selected === item) render(call); }).catch(() => {});
    scheduleDraw();
  }

  $("details-body").addEventListener("click", (e) => {
    const action = e.target.dataset && e.target.dataset.action;
    if (!action || !state.selected) return;
    selectRegion(state.selected.region);
    if (action === "sandwich") showTab("profile");
  });

  /* ---- range selection: the function summary follows it ---- */

  function setSelection(a, b) {
    if (b - a < (state.t1 - state.t0) / plotWidth()) return;
    state.selection = [a, b];
    $("scope-selection").disabled = false;
    const body = $("range-body");
    body.className = "";
    body.textContent = "Computing…";
    TTObjects.attach(api("tree", {t0: Math.floor(a), t1: Math.ceil(b), lanes: "all"}).then((r) => r.arrayBuffer()).then(TT.decodeTree),
      Math.floor(a), Math.ceil(b), "all", "").then((tree) => {
      if (!state.selection || state.selection[0] !== a) return;
      const rows = TT.flatProfile(tree, state.meta.regions);
      TTObjects.addRows(rows, tree);
      const total = rows.reduce((s, r) => s + r.exclusive, 0);
      body.innerHTML = "<div>" + TT.escapeHtml(TT.fmtTime(a - state.begin, b - a) + " – " + TT.fmtTime(b - state.begin, b - a) +
        " (" + TT.fmtDuration(b - a) + "), all threads: " + rows.length + " regions") + "</div>" + profileTable(rows.slice(0, 50), total, "range-table", tree);
      paintSwatches(body);
      TTObjects.rangeSummary(body, a, b);
    }).catch((error) => { body.textContent = error.message; });
    if (document.querySelector('input[name="scope"]:checked').value === "selection") state.tree = null;
    scheduleDraw();
  }

  function clearSelection() {
    state.selection = null;
    $("scope-selection").disabled = true;
    document.querySelector('input[name="scope"][value="run"]').checked = true;
    $("range-body").className = "empty";
    $("range-body").textContent = "Select a time range (shift+drag, or drag on the ruler) for its function summary.";
    state.tree = null;
    scheduleDraw();
  }

  function profileTable(rows, total, id, tree) {
    const match = searchMatcher();
    return '<table id="' + id + '"><thead><tr><th>Region</th><th>Excl</th><th>Excl %</th><th>Incl</th><th>Visits</th>' + TTObjects.heads(tree) + "<th>Location</th></tr></thead><tbody>" +
      rows.map((r) => '<tr class="' + (match && match(r.name) ? "match" : "") + '" data-region="' + r.region + '"><td class="name">' + TT.nameHtml(r.name) +
        "</td><td>" + TT.fmtDuration(r.exclusive) + "</td><td>" + TT.percent(r.exclusive, total) + "</td><td>" + TT.fmtDuration(r.inclusive) +
        "</td><td>" + TT.fmtCount(r.visits) + "</td>" + TTObjects.rowCells(tree, r) + "<td>" + TT.escapeHtml(TT.location(r)) + "</td></tr>").join("") + "</tbody></table>";
  }

  function paintSwatches(root) {
    for (const s of root.querySelectorAll(".swatch[data-name]")) s.style.background = TT.colourOf(s.dataset.name);
  }

  /* ---- input on the timeline ---- */

  let drag = null;

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
    drag = {x0: e.clientX, t0: state.t0, t1: state.t1, select, anchor: tOf(x), moved: false, startX: x, startY: y};
    if (!select) scroller.classList.add("dragging");
    e.preventDefault();
  });

  window.addEventListener("mousemove", (e) => {
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
    if (!drag) return;
    const d = drag;
    drag = null;
    scroller.classList.remove("dragging");
    if (d.select && d.moved && state.selection) setSelection(state.selection[0], state.selection[1]);
    else if (d.select && !d.moved) scheduleDraw();
    else if (!d.moved) {
      const item = itemAt(d.startX, d.startY);
      if (item) showDetails(item);
    }
  });

  /* The tooltip of what lies under the mouse; `changed`: only when that is no longer what it shows (after the
   * view moved under a still mouse). */
  function hover(p, changed) {
    if (drag) { tooltip.hidden = true; return; }
    const item = itemAt(p.x, p.y);
    const marks = item ? null : marksAt(p.x, p.y);
    /* What an overlay draws there: a line wins over the call below it, an area only where nothing else is. */
    const over = overlays.map((o) => o.tip && o.tip(p.x, p.y, !item && !marks)).find((html) => html);
    if (over) { showTip(over, p.x, p.y); return; }
    const objects = item || marks ? null : TTObjects.tip(p.x, p.y);
    const tip = item || marks || objects ? null : sections.reduce((found, s) => found || s.tip(p.x, p.y, sectionView(canvas.clientHeight)), null);
    if (changed && !tooltip.hidden === !!(item || marks || objects || tip) && (!item || tooltip.dataset.key === item.lane + "/" + item.depth + "/" + item.start)) return;
    if (item) showTooltip(item, p.x, p.y);
    else if (marks) showMarks(marks, p.x, p.y);
    else if (objects) showMarks(objects.lines, p.x, p.y, objects.title);
    else if (tip) showMarks(tip.lines, p.x, p.y, tip.title);
    else tooltip.hidden = true;
  }

  scroller.addEventListener("mousemove", (e) => {
    state.mouse = pos(e);
    hover(state.mouse, false);
  });
  scroller.addEventListener("mouseleave", () => { tooltip.hidden = true; state.mouse = null; });

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
      if (state.search.exact !== undefined) {
        $("search").value = "";
        state.search = {text: "", key: "", regions: null};
        afterSearch();
      }
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

  window.addEventListener("resize", () => { ensureData(); scheduleDraw(); if (state.tab === "flame") drawFlameTab(); });

  /* ---- search ---- */

  function searchMatcher() {
    if (state.search.exact !== undefined) {
      const selected = state.meta.regions[state.search.exact].name;
      return (name) => name === selected;
    }
    const text = state.search.text.toLowerCase();
    return text ? (name) => name.toLowerCase().includes(text) : null;
  }

  /* What follows a change of the search or of the function selected: every view shows it. */
  function afterSearch() {
    state.highlight = null;
    state.flatRows = FLAT_PAGE;
    showSearchInfo();
    ensureData();
    scheduleDraw();
    if (state.tab === "profile") renderProfile();
    if (state.tab === "flame") drawFlameTab();
  }

  /* Selects one function (a region) everywhere: its calls highlighted on the timeline, its rows in the tables
   * and its frames in the flame graph, its callers and callees in the profile. */
  function selectRegion(region) {
    const name = state.meta.regions[region].name;
    $("search").value = name;
    state.search = {text: name, key: "region:" + region, regions: [region], exact: region};
    afterSearch();
  }

  function showSearchInfo() {
    const info = $("search-info");
    if (state.search.regions === null) { info.textContent = ""; return; }
    const n = state.search.regions.length;
    let calls = 0;
    if (state.highlight && state.highlight.key === state.search.key) {
      for (let i = 0; i < state.highlight.count; i++) {
        if (state.highlight.end[i] > state.t0 && state.highlight.start[i] < state.t1) calls += state.highlight.calls[i];
      }
    }
    info.textContent = n ? (state.search.exact !== undefined ? "selected" : n === 1 ? "1 region matches" : TT.fmtCount(n) + " regions match") + " · " + TT.count(calls, "call") + " in view"
      : "no region matches";
  }

  let searchTimer = 0;
  $("search").addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => {
      const text = $("search").value.trim();
      state.search = {text, key: text, regions: null};
      const match = searchMatcher();
      state.search.regions = match ? state.meta.regions.map((r, i) => (match(r.name) ? i : -1)).filter((i) => i >= 0).slice(0, 4000) : null;
      afterSearch();
    }, 150);
  });

  /* ---- tabs and the profile views ---- */

  function setStatus(text, problem) {
    $("status").textContent = text;
    $("status").className = problem ? "problem" : "";
  }

  function showTab(name) {
    state.tab = name;
    for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("active", b.dataset.tab === name);
    for (const t of ["timeline", "profile", "flame"]) $(t + "-tab").classList.toggle("active", t === name);
    $("scope").hidden = name === "timeline";
    tooltip.hidden = true;
    if (name === "timeline") scheduleDraw();
    else loadTree().then(() => (name === "profile" ? renderProfile() : drawFlameTab()));
  }

  for (const b of document.querySelectorAll("#tabs button")) b.addEventListener("click", () => showTab(b.dataset.tab));
  for (const r of document.querySelectorAll('input[name="scope"]')) r.addEventListener("change", () => { state.tree = null; state.focus = null; showTab(state.tab); });
  $("scope-lanes").addEventListener("change", () => { state.tree = null; state.focus = null; showTab(state.tab); });

  function scopeRange() {
    const useSelection = document.querySelector('input[name="scope"]:checked').value === "selection" && state.selection;
    return useSelection ? [Math.floor(state.selection[0]), Math.ceil(state.selection[1])] : [state.begin, state.end + 1];
  }

  function scopeKey() {
    const [t0, t1] = scopeRange();
    return t0 + "/" + t1 + "/" + $("scope-lanes").value + "/" + TTObjects.scopeKey();
  }

  /* The tree of the scope chosen now; an answer for a scope no longer chosen is dropped. */
  function loadTree() {
    const [t0, t1] = scopeRange();
    const lanes = $("scope-lanes").value;
    const key = scopeKey();
    if (state.tree && state.tree.key === key) return Promise.resolve(state.tree);
    if (state.treeLoading && state.treeLoading.key === key) return state.treeLoading.promise;
    $("scope-info").textContent = "computing…";
    const promise = TTObjects.attach(api("tree", {t0, t1, lanes}).then((r) => r.arrayBuffer()).then(TT.decodeTree), t0, t1, lanes).then((tree) => {
      if (key !== scopeKey()) return state.tree;
      tree.key = key;
      tree.open = new Set();
      /* Open the heaviest path of every root that takes a tenth of the time or more. */
      for (const root of tree.roots) {
        if (tree.inclusive[root] < tree.total / 10) continue;
        let node = root;
        for (let depth = 0; node !== undefined && depth < 16; depth++) {
          tree.open.add(node);
          node = tree.children[node].reduce((a, b) => (a === undefined || tree.inclusive[b] > tree.inclusive[a] ? b : a), undefined);
        }
      }
      state.tree = tree;
      if (!performance.getEntriesByName("tracetop-tree").length) performance.mark("tracetop-tree"); /* for the bench */
      state.treeRows = TREE_PAGE;
      state.flatRows = FLAT_PAGE;
      $("scope-info").textContent = TT.fmtDuration(t1 - t0) + " · " + TT.fmtCount(tree.count) + " call paths";
      return tree;
    }).catch((error) => { $("scope-info").textContent = error.message; }).finally(() => {
      if (state.treeLoading && state.treeLoading.promise === promise) state.treeLoading = null;
    });
    state.treeLoading = {key, promise};
    return promise;
  }

  function renderProfile() {
    const tree = state.tree;
    if (!tree) return;
    const regions = state.meta.regions;
    const match = searchMatcher();
    const rows = [];
    const byInclusive = (a, b) => tree.inclusive[b] - tree.inclusive[a];
    const stack = tree.roots.slice().sort(byInclusive).reverse().map((n) => [n, 0]);
    let more = 0;
    while (stack.length) {
      const [node, depth] = stack.pop();
      if (rows.length >= state.treeRows) {
        more++; /* counted, to say how many the next page holds */
        if (tree.open.has(node)) for (const k of tree.children[node]) stack.push([k, depth + 1]);
        continue;
      }
      const name = regions[tree.region[node]].name;
      const kids = tree.children[node];
      const open = tree.open.has(node);
      rows.push('<tr data-node="' + node + '" class="' + (match && match(name) ? "match" : "") + '"><td class="name" style="padding-left:' +
        (4 + depth * 14) + 'px"><span class="toggle">' + (kids.length ? (open ? "▾" : "▸") : "") + "</span>" + TT.nameHtml(name) + "</td><td>" + TT.fmtDuration(tree.inclusive[node]) + "</td><td>" +
        TT.percent(tree.inclusive[node], tree.total) + "</td><td>" + TT.fmtDuration(tree.exclusive[node]) + "</td><td>" + TT.fmtCount(tree.visits[node]) + "</td>" +
        TTObjects.nodeCells(tree, node) + "</tr>");
      if (open) for (const k of kids.slice().sort(byInclusive).reverse()) stack.push([k, depth + 1]);
    }
    const calltree = $("calltree");
    /* Inline padding is set through the CSSOM below: the page's policy allows no style attributes. */
    calltree.innerHTML = '<table id="calltree-table"><thead><tr><th>Call path</th><th>Incl</th><th>Incl %</th><th>Excl</th><th>Visits</th>' + TTObjects.heads(tree) + "</tr></thead><tbody>" +
      rows.join("").replace(/ style="padding-left:(\d+)px"/g, ' data-indent="$1"') + "</tbody></table>" +
      pager("tree-more", rows.length, more, TREE_PAGE, "call paths");
    for (const td of calltree.querySelectorAll("td[data-indent]")) td.style.paddingLeft = td.dataset.indent + "px";
    paintSwatches(calltree);

    const flat = TT.flatProfile(tree, regions);
    TTObjects.addRows(flat, tree);
    const key = state.flatSort.key, sign = state.flatSort.down ? -1 : 1;
    flat.sort((a, b) => (key === "name" ? a.name.localeCompare(b.name) * -sign : (a[key] - b[key]) * sign));
    const total = flat.reduce((s, r) => s + r.exclusive, 0);
    $("flat").innerHTML = profileTable(flat.slice(0, state.flatRows), total, "flat-table", tree) +
      pager("flat-more", Math.min(flat.length, state.flatRows), Math.max(0, flat.length - state.flatRows), FLAT_PAGE, "regions");
    paintSwatches($("flat"));
    const keys = ["name", "exclusive", "exclusive", "inclusive", "visits"].concat(TTObjects.sortKeys(tree), [null]);
    $("flat").querySelectorAll("th").forEach((th, i) => {
      if (!keys[i]) return;
      if (keys[i] === key) th.textContent += state.flatSort.down ? " ▼" : " ▲";
      th.addEventListener("click", () => {
        state.flatSort = {key: keys[i], down: state.flatSort.key === keys[i] ? !state.flatSort.down : keys[i] !== "name"};
        renderProfile();
      });
    });
    renderSandwich(tree);
  }

  /* The line under a table that shows part of its rows: how many there are, and a button for the next page. */
  function pager(id, shown, more, page, noun) {
    if (!more) return "";
    return '<div class="pager">' + TT.fmtCount(shown) + " of " + TT.fmtCount(shown + more) + " " + noun +
      ' shown <button id="'  + id + '">show ' + TT.fmtCount(Math.min(page, more)) + " more</button></div>";
  }

  /* The function selected: its callers above it, its callees below, with the time spent in it from each
   * caller and in each callee under it. */
  function renderSandwich(tree) {
    const box = $("sandwich");
    const region = state.search.exact;
    if (region === undefined) {
      box.className = "table empty";
      box.textContent = "Select a function (click it in a table or the flame graph, or in the details of a call) for its callers and callees.";
      return;
    }
    const regions = state.meta.regions, sw = TT.sandwich(tree, region);
    const row = (r, kind) => '<tr class="' + kind + '"' + (r.region >= 0 ? ' data-region="' + r.region + '"' : "") + ' data-ns="' + r.inclusive + '"><td class="name">' +
      (r.region >= 0 ? TT.nameHtml(regions[r.region].name) : "<i>(the start of the thread)</i>") + "</td><td>" + TT.fmtDuration(r.inclusive) + "</td><td>" +
      TT.percent(r.inclusive, sw.self.inclusive) + "</td><td>" + TT.fmtCount(r.visits) + "</td></tr>";
    box.className = "table";
    box.innerHTML = '<table id="sandwich-table"><thead><tr><th>Function</th><th>Incl</th><th>of its time</th><th>Visits</th></tr></thead><tbody>' +
      '<tr class="section"><td colspan="4">called by</td></tr>' + sw.callers.map((r) => row(r, "caller")).join("") +
      row({region, visits: sw.self.visits, inclusive: sw.self.inclusive}, "self") +
      '<tr class="section"><td colspan="4">calls</td></tr>' + sw.callees.map((r) => row(r, "callee")).join("") + "</tbody></table>";
    paintSwatches(box);
  }

  /* A row of a function in a table selects it; the pagers show more. */
  for (const id of ["flat", "sandwich", "range-body"]) {
    $(id).addEventListener("click", (e) => {
      const tr = e.target.closest("tr[data-region]");
      if (tr && !e.target.closest("th")) selectRegion(+tr.dataset.region);
    });
  }
  $("profile-tab").addEventListener("click", (e) => {
    if (e.target.id === "tree-more") state.treeRows += TREE_PAGE;
    else if (e.target.id === "flat-more") state.flatRows += FLAT_PAGE;
    else return;
    renderProfile();
  });

  $("calltree").addEventListener("click", (e) => {
    const tr = e.target.closest("tr[data-node]");
    if (!tr || !state.tree) return;
    const node = +tr.dataset.node;
    if (state.tree.open.has(node)) state.tree.open.delete(node); else state.tree.open.add(node);
    if (e.target.closest(".fn")) selectRegion(state.tree.region[node]); else renderProfile();
  });

  let flameLayout = null;
  function drawFlameTab() {
    if (!state.tree) return;
    const match = searchMatcher();
    flameLayout = TT.drawFlame($("flame"), TTObjects.flameTree(state.tree), state.meta.regions, state.focus, match);
  }

  $("flame").addEventListener("click", (e) => {
    if (!flameLayout) return;
    const box = TT.flameHit(flameLayout, e.offsetX, e.offsetY);
    state.focus = box ? box.node : null;
    if (box) selectRegion(state.tree.region[box.node]); else drawFlameTab();
  });
  $("flame-reset").addEventListener("click", () => { state.focus = null; drawFlameTab(); });
  $("flame").addEventListener("mousemove", (e) => {
    const box = flameLayout && TT.flameHit(flameLayout, e.offsetX, e.offsetY);
    const tip = $("flame-tip");
    if (!box) { tip.hidden = true; return; }
    const t = state.tree, n = box.node;
    TT.flameTip(tip, $("flame-box"), e, t, n, state.meta.regions[t.region[n]].name, TTObjects.flameTip(t, n));
  });
  $("flame").addEventListener("mouseleave", () => { $("flame-tip").hidden = true; });

  function loadMarks() {
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

  /* ---- start ---- */

  api("meta").then((r) => r.json()).then((meta) => {
    state.meta = meta;
    state.begin = meta.begin_ns;
    state.end = Math.max(meta.end_ns, meta.begin_ns + 1);
    document.title = "tracetop · " + meta.experiment;
    $("experiment").textContent = meta.experiment;
    const lanes = $("scope-lanes");
    lanes.innerHTML = '<option value="all">all threads, merged</option>' +
      meta.lanes.map((l, i) => '<option value="' + i + '">' + TT.escapeHtml(l.name) + " (pid " + l.pid + ")</option>").join("");
    const calls = meta.lanes.reduce((s, l) => s + l.calls, 0);
    if (meta.running.length) setStatus("still being measured (process " + meta.running.join(", ") + " running): what it had written when opened");
    else if (meta.problems.length) setStatus(meta.problems[0] + (meta.problems.length > 1 ? " (+" + (meta.problems.length - 1) + " more)" : ""), true);
    else setStatus(TT.count(meta.lanes.length, "thread") + " · " + TT.count(calls, "call") + " · " + TT.fmtDuration(state.end - state.begin));
    TTObjects.init({state, api, GUTTER, scroller, xOf, tOf, plotWidth, windowFor, covers, scheduleDraw, ensureData, buildLayout, button, setStatus,
      refresh: () => { state.tree = null; state.focus = null; showTab(state.tab); },
      redrawFlame: () => { if (state.tab === "flame") drawFlameTab(); }});
    initLaneViews();
    buildLayout();
    loadMarks();
    loadActivity();
    const margin = (state.end - state.begin) * 0.01;
    setView(state.begin - margin, state.end + margin);
  }).catch((error) => setStatus("cannot load the experiment: " + error.message, true));

  /* For tests and the bench: the state, and ways to find and move what is drawn. */
  window.tracetopViewer = {
    state,
    ready: () => state.spans !== null && state.firstPaint !== null,
    setView, panBy, zoomAt,
    /* Where a bar of region `name` lies on screen, wide enough to point at: {x, y} in client coordinates. */
    findBar(name, minWidth) {
      if (!state.spans) return null;
      const box = scroller.getBoundingClientRect();
      const s = state.spans;
      for (let i = 0; i < s.count; i++) {
        if (state.meta.regions[s.region[i]].name !== name || s.calls[i] !== 1) continue;
        const x0 = Math.max(GUTTER, xOf(s.start[i])), x1 = Math.min(GUTTER + plotWidth(), xOf(s.end[i]));
        if (x1 - x0 < (minWidth || 4)) continue;
        const lane = state.layout.lanes[s.lane[i]];
        if (lane.hidden || s.depth[i] >= lane.shown) continue;
        const y = lane.rows + s.depth[i] * ROW + ROW / 2 - scroller.scrollTop;
        if (y < RULER || y > box.height - 4) continue;
        return {x: box.left + (x0 + x1) / 2, y: box.top + y};
      }
      return null;
    },
    /* Zooms to a call of region `name` (one in the data drawn now): true when there is one. */
    revealBar(name) {
      const s = state.spans;
      for (let i = 0; s && i < s.count; i++) {
        if (state.meta.regions[s.region[i]].name !== name) continue;
        const length = Math.max(s.end[i] - s.start[i], 1000);
        setView(s.start[i] - length, s.end[i] + length);
        return true;
      }
      return false;
    },
    /* Where the flame graph draws a frame of region `name` at `depth` or deeper: {x, y} in client coordinates. */
    findFrame(name, depth) {
      const box = $("flame").getBoundingClientRect();
      for (const b of (flameLayout && flameLayout.boxes) || []) {
        if (b.depth >= depth && b.w > 4 && state.meta.regions[state.tree.region[b.node]].name === name) {
          return {x: box.left + b.x + b.w / 2, y: box.top + b.depth * TT.FLAME_ROW + TT.FLAME_ROW / 2};
        }
      }
      return null;
    },
    /* Where the mark named `name` is drawn: {x, y} in client coordinates. */
    findMark(name) {
      const box = scroller.getBoundingClientRect();
      for (const l of state.layout.lanes) {
        for (const [time, mark] of (!l.hidden && !l.folded && state.marks[l.index]) || []) {
          if (mark === name && time >= state.t0 && time <= state.t1) {
            return {x: box.left + xOf(time), y: box.top + l.rows - MARKS - scroller.scrollTop + MARKS / 2};
          }
        }
      }
      return null;
    },
    /* A lane's thread over its life as its activity band shows it: {cpu, gil} shares, and where the band
       is drawn in the canvas (CSS pixels), {x0, x1, y, height}; null without usage records. */
    activity(name) {
      const i = state.meta.lanes.findIndex((lane) => lane.name === name);
      const usage = i >= 0 && state.activity && state.activity[i];
      if (!usage || !usage.length) return null;
      const lane = state.meta.lanes[i], l = state.layout.lanes[i], last = usage[usage.length - 1];
      return {
        cpu: last[1] / Math.max(1, last[0] - lane.begin_ns),
        gil: last[2] ? last[3] / last[2] : 0,
        band: {x0: Math.max(GUTTER, xOf(lane.begin_ns)), x1: Math.min(GUTTER + plotWidth(), xOf(last[0])),
               y: l.rows + l.shown * ROW + 1 - scroller.scrollTop, height: BAND},
      };
    },
    /* For drawings over the lanes (comm.js): added once, drawn with every frame; tip(x, y, alone) gives the
       tooltip's HTML for a canvas point, or nothing (alone: no call or mark is there). */
    addOverlay(overlay) { overlays.push(overlay); scheduleDraw(); },
    redraw: scheduleDraw,
    xOf,
    /* Lanes top to bottom (a process's lanes together), e.g. MPI ranks in rank order. */
    setLaneOrder(order) { state.laneOrder = order; buildLayout(); scheduleDraw(); },
    /* Where lane i lies in the lanes' box, before scrolling: top, height and anchor (the middle of its overview
       band; of its process's header when the process is folded). */
    lanePlace(i) {
      const l = state.layout.lanes[i];
      if (!l.hidden) return {top: l.top, height: l.height, anchor: l.band + (l.folded ? FOLDED : OVERVIEW) / 2};
      const p = state.layout.processes.find((o) => o.pid === state.meta.lanes[i].pid);
      return {top: p.top, height: PROCESS_HEADER, anchor: p.top + PROCESS_HEADER / 2};
    },
    highlighted() {
      const h = state.highlight;
      if (!h) return 0;
      let calls = 0;
      for (let i = 0; i < h.count; i++) calls += h.calls[i];
      return calls;
    },
  };
})();

/* live_lanes.js -- the live page's lanes: which lane each thread is drawn in, the calls each lane keeps (a list
 * per level of the stack, within the window), and which levels a lane shows as rows.
 *
 * A thread has a lane of its own; but the threads of a process whose names differ only in their numbers
 * ("Thread-12 (handle)", "ThreadPoolExecutor-0_3", "request-81") share one, a group, once GROUP_ENDED of them
 * have ended within the window: short-lived threads, a thread per request or a pool that comes and goes, are
 * drawn over each other in one lane that counts them. A group stays one while the server lists any of its
 * threads. A lane lasts as long as the server lists one of its threads, and the server lists a thread that
 * ended until its last record leaves the window (live.py: LiveWatch's ended_ns): there are as many lanes as
 * threads alive and threads that ended within the window, a group counting one, however many threads a
 * program has made.
 *
 * A lane shows its first LEVELS levels of calls as rows and folds the deeper ones into a band below them, the
 * deepest call at each moment drawn on top; "+N" shows every level (up to MAX_DEPTH), "▾" folds the lane to
 * its band. A lane whose threads are done (its one thread ended, or its process did) is shown folded until
 * unfolded.
 *
 * Exports: LEVELS, MAX_DEPTH, lanes (key -> lane, owned here: live.js reads them), takeThreads, laneOf,
 * lanesOf, addSpans, prune, clear, folded, shapeOf, toggleFolded, toggleAll. */

export const LEVELS = 6, MAX_DEPTH = 40;
const GROUP_ENDED = 3;

/* key -> {key, pid, name, group (a name pattern's lane), order (where it comes among its process's lanes),
 * threads (the server's, listed now), done (its threads are), levels (per depth, the calls that returned:
 * [pid, stream, function, depth, begin, end]), spans (their count), depth, folded (null: as done says), all
 * (every level)} */
export const lanes = new Map();
const byStream = new Map(); // "pid/stream" -> its lane
const byProcess = new Map(); // pid -> its lanes in order
let made = 0;

const threadName = (th) => th.name || "thread " + th.stream;

function laneFor(key, pid, name, group) {
  let lane = lanes.get(key);
  if (!lane) {
    lane = {key, pid, name, group, order: made++, threads: [], done: false, levels: [], spans: 0, depth: 1, folded: null,
            all: false};
    lanes.set(key, lane);
  }
  return lane;
}

/* The calls of a thread's own lane go into the group it joins, each level still in the order the calls ended. */
function merge(group, key) {
  const lane = lanes.get(key);
  if (!lane) return;
  lane.levels.forEach((level, d) => {
    group.levels[d] = group.levels[d] ? [...group.levels[d], ...level].sort((a, b) => a[5] - b[5]) : level;
  });
  group.spans += lane.spans;
  group.order = Math.min(group.order, lane.order);
  lanes.delete(key);
}

/* Each process's threads as the server lists them now, into lanes; the lanes of no listed thread go. */
export function takeThreads(processes) {
  const listed = new Set();
  byStream.clear();
  byProcess.clear();
  for (const p of processes) {
    const running = p.state === "measuring" || p.state === "not measuring";
    const named = new Map(); // the name with its numbers left out -> the threads so named
    for (const th of p.threads) {
      const pattern = threadName(th).replace(/\d+/g, "#");
      if (named.has(pattern)) named.get(pattern).push(th);
      else named.set(pattern, [th]);
    }
    const own = [];
    for (const [pattern, threads] of named) {
      const groupKey = "g" + p.pid + "/" + pattern;
      if (lanes.has(groupKey) || threads.filter((th) => th.ended).length >= GROUP_ENDED) {
        const lane = laneFor(groupKey, p.pid, pattern.replace(/#/g, "*"), true);
        lane.threads = threads;
        lane.done = !running;
        for (const th of threads) {
          merge(lane, "t" + p.pid + "/" + th.stream);
          byStream.set(p.pid + "/" + th.stream, lane);
        }
        listed.add(groupKey);
        own.push(lane);
        continue;
      }
      for (const th of threads) {
        const lane = laneFor("t" + p.pid + "/" + th.stream, p.pid, threadName(th), false);
        lane.name = threadName(th); // named after it was seen
        lane.threads = [th];
        lane.done = !running || th.ended;
        byStream.set(p.pid + "/" + th.stream, lane);
        listed.add(lane.key);
        own.push(lane);
      }
    }
    byProcess.set(p.pid, own.sort((a, b) => a.order - b.order));
  }
  for (const key of lanes.keys()) if (!listed.has(key)) lanes.delete(key);
}

/* The lane of thread `stream` of process `pid`, if the server lists it. */
export function laneOf(pid, stream) {
  return byStream.get(pid + "/" + stream);
}

/* The lanes of process pid, in order. */
export function lanesOf(pid) {
  return byProcess.get(pid) || [];
}

/* The calls that returned, into their threads' lanes (those of a thread no longer listed have left the window). */
export function addSpans(spans) {
  for (const s of spans) {
    const lane = byStream.get(s[0] + "/" + s[1]);
    if (!lane || s[3] >= MAX_DEPTH) continue;
    if (lane.levels[s[3]]) lane.levels[s[3]].push(s);
    else lane.levels[s[3]] = [s];
    lane.spans++;
  }
}

/* Forgets the calls that ended before `oldest`, and the oldest beyond `most` in all; sets each lane's depth, of
 * the calls it keeps and the stacks now. Returns the calls kept. */
export function prune(oldest, most) {
  let total = 0;
  for (const lane of lanes.values()) total += lane.spans;
  const over = Math.max(0, total - most);
  let kept = 0;
  for (const lane of lanes.values()) {
    let depth = 0, spans = 0;
    lane.levels.forEach((level, d) => {
      const drop = over ? Math.ceil(over * level.length / total) : 0;
      let cut = 0;
      while (cut < level.length && (level[cut][5] < oldest || cut < drop)) cut++;
      if (cut) level.splice(0, cut);
      if (level.length) depth = d + 1;
      spans += level.length;
    });
    lane.levels.length = depth;
    for (const th of lane.threads) if (!th.ended) depth = Math.max(depth, Math.min(th.stack.length, MAX_DEPTH));
    lane.spans = spans;
    lane.depth = Math.max(1, depth);
    kept += spans;
  }
  return kept;
}

export function clear() {
  lanes.clear();
  byStream.clear();
  byProcess.clear();
}

export function folded(lane) {
  return lane.folded ?? lane.done;
}

/* How the lane is shown: `rows` levels as rows of calls, then, if `band`, the levels below them folded into a
 * band (a folded lane: its band alone). */
export function shapeOf(lane) {
  if (folded(lane)) return {rows: 0, band: true};
  const rows = lane.all ? lane.depth : Math.min(lane.depth, LEVELS);
  return {rows, band: rows < lane.depth};
}

export function toggleFolded(key) {
  const lane = lanes.get(key);
  if (lane) lane.folded = !folded(lane);
}

export function toggleAll(key) {
  const lane = lanes.get(key);
  if (lane) lane.all = !lane.all;
}

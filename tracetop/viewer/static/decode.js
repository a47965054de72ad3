/* decode.js -- the index's binary answers as typed arrays (their layouts are lod.h's): the spans and the
 * samples of a view, a call tree, the objects of a range and of a tree's call paths.
 *
 * Exports: NO_PARENT, decodeSpans, decodeSamples, decodeTree, decodeObjects, decodeTreeObjects. */

export const NO_PARENT = 0xffffffff;

/* u32 count, u32 level, f64 start[n], f64 end[n], u32 region[n], calls[n], lane[n], depth[n] */
export function decodeSpans(buffer) {
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
export function decodeSamples(buffer) {
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
export function decodeTree(buffer) {
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

/* u32 count, u32 0, then per row u32 region, u32 track, f64 created, destroyed, bytes */
export function decodeObjects(buffer) {
  const view = new DataView(buffer), n = view.getUint32(0, true), rows = [];
  for (let i = 0, p = 8; i < n; i++, p += 32) {
    rows.push({region: view.getUint32(p, true), track: view.getUint32(p + 4, true), created: view.getFloat64(p + 8, true),
      destroyed: view.getFloat64(p + 16, true), bytes: view.getFloat64(p + 24, true)});
  }
  return rows;
}

/* u32 count, u32 0, f64 unplaced[3], f64 created[n], destroyed[n], bytes[n], u32 paths[n] */
export function decodeTreeObjects(buffer) {
  const n = new Uint32Array(buffer, 0, 1)[0];
  return {
    unplaced: new Float64Array(buffer, 8, 3), created: new Float64Array(buffer, 32, n),
    destroyed: new Float64Array(buffer, 32 + 8 * n, n), bytes: new Float64Array(buffer, 32 + 16 * n, n),
    paths: new Uint32Array(buffer, 32 + 24 * n, n),
  };
}

/* calltree.js -- profiles computed from a decoded call tree (decode.js's decodeTree), as `tracetop summary`
 * counts them: a recursive call's time is counted once.
 *
 * Exports: flatProfile (a row per region), sandwich (a region's callers and callees). */
import {NO_PARENT} from "./decode.js";

/* Per region of a call tree: visits, exclusive time, and inclusive time
 * counted once per outermost activation (recursion is not counted twice),
 * as `tracetop summary` counts them. Sorted by exclusive time. */
export function flatProfile(tree, regions) {
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
export function sandwich(tree, region) {
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

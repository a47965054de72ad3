/* profile_tab.js -- the profile of the scope chosen (the whole run or the range selected, all threads or one):
 * its call tree (state.tree, fetched once per scope), the call tree's table, the flat profile and the callers
 * and callees of the function selected.
 *
 * Exports: scopeRange, loadTree, renderProfile, profileTable (also the selection's summary table). */
import {FLAT_PAGE, TREE_PAGE, on, state} from "./state.js";
import {api} from "./api.js";
import {decodeTree} from "./decode.js";
import {flatProfile, sandwich} from "./calltree.js";
import {escapeHtml, fmtCount, fmtDuration, percent} from "./format.js";
import {location, nameHtml} from "./names.js";
import {$, paintSwatches} from "./dom.js";
import {searchMatcher, selectRegion, selectsRegions} from "./search.js";
import * as objects from "./objects.js";

export function scopeRange() {
  const useSelection = document.querySelector('input[name="scope"]:checked').value === "selection" && state.selection;
  return useSelection ? [Math.floor(state.selection[0]), Math.ceil(state.selection[1])] : [state.begin, state.end + 1];
}

function scopeKey() {
  const [t0, t1] = scopeRange();
  return t0 + "/" + t1 + "/" + $("scope-lanes").value + "/" + objects.scopeKey();
}

/* The tree of the scope chosen now; an answer for a scope no longer chosen is dropped. */
export function loadTree() {
  const [t0, t1] = scopeRange();
  const lanes = $("scope-lanes").value;
  const key = scopeKey();
  if (state.tree && state.tree.key === key) return Promise.resolve(state.tree);
  if (state.treeLoading && state.treeLoading.key === key) return state.treeLoading.promise;
  $("scope-info").textContent = "computing…";
  const promise = objects.attach(api("tree", {t0, t1, lanes}).then((r) => r.arrayBuffer()).then(decodeTree), t0, t1, lanes).then((tree) => {
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
    $("scope-info").textContent = fmtDuration(t1 - t0) + " · " + fmtCount(tree.count) + " call paths";
    return tree;
  }).catch((error) => { $("scope-info").textContent = error.message; }).finally(() => {
    if (state.treeLoading && state.treeLoading.promise === promise) state.treeLoading = null;
  });
  state.treeLoading = {key, promise};
  return promise;
}

export function renderProfile() {
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
      (4 + depth * 14) + 'px"><span class="toggle">' + (kids.length ? (open ? "▾" : "▸") : "") + "</span>" + nameHtml(name) + "</td><td>" + fmtDuration(tree.inclusive[node]) + "</td><td>" +
      percent(tree.inclusive[node], tree.total) + "</td><td>" + fmtDuration(tree.exclusive[node]) + "</td><td>" + fmtCount(tree.visits[node]) + "</td>" +
      objects.nodeCells(tree, node) + "</tr>");
    if (open) for (const k of kids.slice().sort(byInclusive).reverse()) stack.push([k, depth + 1]);
  }
  const calltree = $("calltree");
  /* Inline padding is set through the CSSOM below: the page's policy allows no style attributes. */
  calltree.innerHTML = '<table id="calltree-table"><thead><tr><th>Call path</th><th>Incl</th><th>Incl %</th><th>Excl</th><th>Visits</th>' + objects.heads(tree) + "</tr></thead><tbody>" +
    rows.join("").replace(/ style="padding-left:(\d+)px"/g, ' data-indent="$1"') + "</tbody></table>" +
    pager("tree-more", rows.length, more, TREE_PAGE, "call paths");
  for (const td of calltree.querySelectorAll("td[data-indent]")) td.style.paddingLeft = td.dataset.indent + "px";
  paintSwatches(calltree);

  const flat = flatProfile(tree, regions);
  objects.addRows(flat, tree);
  const key = state.flatSort.key, sign = state.flatSort.down ? -1 : 1;
  flat.sort((a, b) => (key === "name" ? a.name.localeCompare(b.name) * -sign : (a[key] - b[key]) * sign));
  const total = flat.reduce((s, r) => s + r.exclusive, 0);
  $("flat").innerHTML = profileTable(flat.slice(0, state.flatRows), total, "flat-table", tree) +
    pager("flat-more", Math.min(flat.length, state.flatRows), Math.max(0, flat.length - state.flatRows), FLAT_PAGE, "regions");
  paintSwatches($("flat"));
  const keys = ["name", "exclusive", "exclusive", "inclusive", "visits"].concat(objects.sortKeys(tree), [null]);
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

/* A table of flat profile rows (calltree.js's flatProfile), the searched ones marked. */
export function profileTable(rows, total, id, tree) {
  const match = searchMatcher();
  return '<table id="' + id + '"><thead><tr><th>Region</th><th>Excl</th><th>Excl %</th><th>Incl</th><th>Visits</th>' + objects.heads(tree) + "<th>Location</th></tr></thead><tbody>" +
    rows.map((r) => '<tr class="' + (match && match(r.name) ? "match" : "") + '" data-region="' + r.region + '"><td class="name">' + nameHtml(r.name) +
      "</td><td>" + fmtDuration(r.exclusive) + "</td><td>" + percent(r.exclusive, total) + "</td><td>" + fmtDuration(r.inclusive) +
      "</td><td>" + fmtCount(r.visits) + "</td>" + objects.rowCells(tree, r) + "<td>" + escapeHtml(location(r)) + "</td></tr>").join("") + "</tbody></table>";
}

/* The line under a table that shows part of its rows: how many there are, and a button for the next page. */
function pager(id, shown, more, page, noun) {
  if (!more) return "";
  return '<div class="pager">' + fmtCount(shown) + " of " + fmtCount(shown + more) + " " + noun +
    ' shown <button id="'  + id + '">show ' + fmtCount(Math.min(page, more)) + " more</button></div>";
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
  const regions = state.meta.regions, sw = sandwich(tree, region);
  const row = (r, kind) => '<tr class="' + kind + '"' + (r.region >= 0 ? ' data-region="' + r.region + '"' : "") + ' data-ns="' + r.inclusive + '"><td class="name">' +
    (r.region >= 0 ? nameHtml(regions[r.region].name) : "<i>(the start of the thread)</i>") + "</td><td>" + fmtDuration(r.inclusive) + "</td><td>" +
    percent(r.inclusive, sw.self.inclusive) + "</td><td>" + fmtCount(r.visits) + "</td></tr>";
  box.className = "table";
  box.innerHTML = '<table id="sandwich-table"><thead><tr><th>Function</th><th>Incl</th><th>of its time</th><th>Visits</th></tr></thead><tbody>' +
    '<tr class="section"><td colspan="4">called by</td></tr>' + sw.callers.map((r) => row(r, "caller")).join("") +
    row({region, visits: sw.self.visits, inclusive: sw.self.inclusive}, "self") +
    '<tr class="section"><td colspan="4">calls</td></tr>' + sw.callees.map((r) => row(r, "callee")).join("") + "</tbody></table>";
  paintSwatches(box);
}

selectsRegions($("flat"));
selectsRegions($("sandwich"));
/* The pagers show more. */
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

on("search", () => { if (state.tab === "profile") renderProfile(); });

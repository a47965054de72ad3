/* search.js -- the search box and the function selected: which regions match (highlighted on the timeline,
 * marked in the tables, full in the flame graph), and the line that says how many calls are in view.
 *
 * Exports: searchMatcher, showSearchInfo, selectRegion, clearSelectedRegion, selectsRegions. */
import {FLAT_PAGE, emit, ensureData, scheduleDraw, state} from "./state.js";
import {$} from "./dom.js";
import {count, fmtCount} from "./format.js";

/* Whether a region name is searched for (or is the function selected); null when nothing is searched. */
export function searchMatcher() {
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
  emit("search");
}

/* Selects one function (a region) everywhere: its calls highlighted on the timeline, its rows in the tables
 * and its frames in the flame graph, its callers and callees in the profile. */
export function selectRegion(region) {
  const name = state.meta.regions[region].name;
  $("search").value = name;
  state.search = {text: name, key: "region:" + region, regions: [region], exact: region};
  afterSearch();
}

/* The function selected, if any, no longer is (the search box is emptied). */
export function clearSelectedRegion() {
  if (state.search.exact === undefined) return;
  $("search").value = "";
  state.search = {text: "", key: "", regions: null};
  afterSearch();
}

/* A row of a function in a table under `box` (one with data-region) selects it on a click. */
export function selectsRegions(box) {
  box.addEventListener("click", (e) => {
    const tr = e.target.closest("tr[data-region]");
    if (tr && !e.target.closest("th")) selectRegion(+tr.dataset.region);
  });
}

export function showSearchInfo() {
  const info = $("search-info");
  if (state.search.regions === null) { info.textContent = ""; return; }
  const n = state.search.regions.length;
  let calls = 0;
  if (state.highlight && state.highlight.key === state.search.key) {
    for (let i = 0; i < state.highlight.count; i++) {
      if (state.highlight.end[i] > state.t0 && state.highlight.start[i] < state.t1) calls += state.highlight.calls[i];
    }
  }
  info.textContent = n ? (state.search.exact !== undefined ? "selected" : n === 1 ? "1 region matches" : fmtCount(n) + " regions match") + " · " + count(calls, "call") + " in view"
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

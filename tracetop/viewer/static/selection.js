/* selection.js -- the time range selected on the timeline and its panel: the function summary of the range
 * (all threads), with the objects recorded in it; the profile's "selected range" scope follows it.
 *
 * Exports: setSelection, clearSelection. */
import {scheduleDraw, state} from "./state.js";
import {plotWidth} from "./geometry.js";
import {api} from "./api.js";
import {decodeTree} from "./decode.js";
import {flatProfile} from "./calltree.js";
import {escapeHtml, fmtDuration, fmtTime} from "./format.js";
import {$, paintSwatches} from "./dom.js";
import {selectsRegions} from "./search.js";
import {profileTable} from "./profile_tab.js";
import * as objects from "./objects.js";

export function setSelection(a, b) {
  if (b - a < (state.t1 - state.t0) / plotWidth()) return;
  state.selection = [a, b];
  $("scope-selection").disabled = false;
  const body = $("range-body");
  body.className = "";
  body.textContent = "Computing…";
  objects.attach(api("tree", {t0: Math.floor(a), t1: Math.ceil(b), lanes: "all"}).then((r) => r.arrayBuffer()).then(decodeTree),
    Math.floor(a), Math.ceil(b), "all", "").then((tree) => {
    if (!state.selection || state.selection[0] !== a) return;
    const rows = flatProfile(tree, state.meta.regions);
    objects.addRows(rows, tree);
    const total = rows.reduce((s, r) => s + r.exclusive, 0);
    body.innerHTML = "<div>" + escapeHtml(fmtTime(a - state.begin, b - a) + " – " + fmtTime(b - state.begin, b - a) +
      " (" + fmtDuration(b - a) + "), all threads: " + rows.length + " regions") + "</div>" + profileTable(rows.slice(0, 50), total, "range-table", tree);
    paintSwatches(body);
    objects.rangeSummary(body, a, b);
  }).catch((error) => { body.textContent = error.message; });
  if (document.querySelector('input[name="scope"]:checked').value === "selection") state.tree = null;
  scheduleDraw();
}

export function clearSelection() {
  state.selection = null;
  $("scope-selection").disabled = true;
  document.querySelector('input[name="scope"][value="run"]').checked = true;
  $("range-body").className = "empty";
  $("range-body").textContent = "Select a time range (shift+drag, or drag on the ruler) for its function summary.";
  state.tree = null;
  scheduleDraw();
}

selectsRegions($("range-body"));

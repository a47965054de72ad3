/* tabs.js -- the tabs (timeline, profile, flame graph) and the profile's scope: the whole run or the range
 * selected, all threads or one.
 *
 * Exports: showTab. */
import {on, resetScope, scheduleDraw, state} from "./state.js";
import {$} from "./dom.js";
import {loadTree, renderProfile} from "./profile_tab.js";
import {drawFlameTab} from "./flame_tab.js";

export function showTab(name) {
  state.tab = name;
  for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("active", b.dataset.tab === name);
  for (const t of ["timeline", "profile", "flame"]) $(t + "-tab").classList.toggle("active", t === name);
  $("scope").hidden = name === "timeline";
  $("tooltip").hidden = true;
  if (name === "timeline") scheduleDraw();
  else loadTree().then(() => (name === "profile" ? renderProfile() : drawFlameTab()));
}

for (const b of document.querySelectorAll("#tabs button")) b.addEventListener("click", () => showTab(b.dataset.tab));
for (const r of document.querySelectorAll('input[name="scope"]')) r.addEventListener("change", resetScope);
$("scope-lanes").addEventListener("change", resetScope);

on("scope", () => showTab(state.tab));

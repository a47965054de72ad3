/* details.js -- what the timeline says of a call: its tooltip on hover and the details panel on a click (its
 * self time and parameters asked of the server once per call), and the tooltip of anything else drawn.
 *
 * Exports: showTooltip, showTip, showMarks, hideTooltip, callKey, tooltipNow, showDetails. */
import {scheduleDraw, state} from "./state.js";
import {api} from "./api.js";
import {escapeHtml, fmtCount, fmtDuration} from "./format.js";
import {colourOf, displayName, moduleOf} from "./names.js";
import {$} from "./dom.js";
import {selectRegion} from "./search.js";
import {showTab} from "./tabs.js";

const tooltip = $("tooltip");

function callDetails(item) {
  const key = callKey(item);
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
  if (region.name.includes(":")) fields.push(["Module", moduleOf(region.name)]);
  if (item.calls > 1) {
    fields.push(["Calls", fmtCount(item.calls) + " calls at this depth, merged at this zoom (mostly this one); zoom in to see them"]);
    fields.push(["Time span", fmtDuration(item.end - item.start)]);
  } else {
    fields.push(["Duration", fmtDuration(item.end - item.start)]);
    fields.push(["Self time", call ? fmtDuration(call.self_ns) : "…"]);
  }
  fields.push(["Location", (region.file || "-") + (region.line ? ":" + region.line : "")]);
  fields.push(["Start", ((item.start - state.begin) / 1e6).toFixed(3) + " ms"]);
  fields.push(["Thread", lane.name + " (pid " + lane.pid + ", depth " + item.depth + ")"]);
  if (call && call.params.length) {
    fields.push(["Parameters", call.params.map((p) => p.name + " = " + p.value).join(", ")]);
  }
  return {name: region.name, short: displayName(region.name), fields};
}

/* The tooltip of a call: `item` as timeline.js's itemAt gives it, beside (x, y) in the timeline's box. */
export function showTooltip(item, x, y) {
  const render = (call) => {
    const d = describe(item, call);
    tooltip.innerHTML = '<div class="name">' + escapeHtml(d.short) + "</div>" +
      d.fields.map(([k, v]) => '<div><span class="sub">' + escapeHtml(k) + ":</span> " + escapeHtml(v) + "</div>").join("");
    tooltip.hidden = false;
    const box = $("timeline").getBoundingClientRect();
    const left = Math.min(x + 14, box.width - tooltip.offsetWidth - 4);
    const top = y + 18 + tooltip.offsetHeight > box.height ? y - tooltip.offsetHeight - 8 : y + 18;
    tooltip.style.left = Math.max(0, left) + "px";
    tooltip.style.top = Math.max(0, top) + "px";
  };
  render(null);
  tooltip.dataset.key = callKey(item);
  if (item.calls === 1) {
    const key = tooltip.dataset.key;
    callDetails(item).then((call) => {
      if (!tooltip.hidden && tooltip.dataset.key === key) render(call);
    }).catch(() => {});
  }
}

/* The key of a call, which the tooltip keeps to know what it shows. */
export function callKey(item) {
  return item.lane + "/" + item.depth + "/" + item.start;
}

/* What the tooltip shows now: {shown, key}, key that of a call (callKey), "" for anything else. */
export function tooltipNow() {
  return {shown: !tooltip.hidden, key: tooltip.dataset.key};
}

export function showMarks(names, x, y, title) {
  showTip('<div class="name">' + escapeHtml(title || "mark") + "</div>" + names.map((n) => "<div>" + escapeHtml(n) + "</div>").join(""), x, y);
}

export function showTip(html, x, y) {
  tooltip.innerHTML = html;
  tooltip.dataset.key = "";
  tooltip.hidden = false;
  tooltip.style.left = x + 14 + "px";
  tooltip.style.top = y + 18 + "px";
}

export function hideTooltip() {
  tooltip.hidden = true;
}

export function showDetails(item) {
  state.selected = item;
  const body = $("details-body");
  const render = (call) => {
    const d = describe(item, call);
    body.className = "";
    body.innerHTML = '<div class="name"><span class="swatch"></span><b></b></div><dl class="fields">' +
      d.fields.map(([k, v]) => "<dt>" + escapeHtml(k) + "</dt><dd>" + escapeHtml(v) + "</dd>").join("") + "</dl>";
    body.insertAdjacentHTML("beforeend", '<div class="actions"><button data-action="select">Highlight everywhere</button> ' +
      '<button data-action="sandwich">Callers and callees</button></div>');
    body.querySelector("b").textContent = d.short;
    body.querySelector("b").title = d.name;
    body.querySelector(".swatch").style.background = colourOf(d.name);
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

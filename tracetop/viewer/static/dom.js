/* dom.js -- small helpers on the page's elements, shared by the viewer's modules and the report.
 *
 * Exports: $ (an element by id), button, paintSwatches (a table's colours), setStatus (the header's status). */
import {colourOf} from "./names.js";

export const $ = (id) => document.getElementById(id);

/* A small button that does `action` on a click, and only that (the click goes no further). */
export function button(className, text, title, action) {
  const b = document.createElement("button");
  b.className = className;
  b.textContent = text;
  b.title = title;
  b.addEventListener("click", (e) => { e.stopPropagation(); action(); });
  return b;
}

/* The colour of each region name (nameHtml's swatches) under `root`, set through the CSSOM: the page's policy
 * allows no style attributes. */
export function paintSwatches(root) {
  for (const s of root.querySelectorAll(".swatch[data-name]")) s.style.background = colourOf(s.dataset.name);
}

export function setStatus(text, problem) {
  $("status").textContent = text;
  $("status").className = problem ? "problem" : "";
}

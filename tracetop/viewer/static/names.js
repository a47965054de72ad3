/* names.js -- how a region is shown by its name: its module's colour, its short name (the qualname) cut to fit a
 * canvas's width or a table cell, and where its code is.
 *
 * Exports: moduleOf, displayName, middle, fitText, nameHtml, colourOf, location. */
import {escapeHtml} from "./format.js";

/* The module of a region name: "pkg.mod:Class.method" -> "pkg.mod",
 * "str.join" -> "str", "user:load" -> "user". */
export function moduleOf(name) {
  const colon = name.indexOf(":");
  if (colon >= 0) return name.slice(0, colon);
  const dot = name.indexOf(".");
  return dot >= 0 ? name.slice(0, dot) : name;
}

/* The name a region is shown by: its qualname, "pkg.mod:Class.method" ->
 * "Class.method"; names without a module ("str.join") as they are. The
 * module is said beside it where there is room (hover, details). */
export function displayName(name) {
  const colon = name.indexOf(":");
  return colon >= 0 && colon < name.length - 1 ? name.slice(colon + 1) : name;
}

/* `text` cut in the middle to `keep` characters, "…" for what is left out. */
export function middle(text, keep) {
  if (text.length <= keep) return text;
  if (keep < 2) return "";
  const head = Math.ceil((keep - 1) / 2);
  return text.slice(0, head) + "…" + text.slice(text.length - (keep - 1 - head));
}

const textWidths = new Map();
/* `text` as it fits `width` pixels in the canvas's font: whole, or cut in
 * the middle (both ends of a name say most), or "" when nothing useful fits. */
export function fitText(g, text, width) {
  if (width < 12) return "";
  const key = g.font + "\n" + text;
  let full = textWidths.get(key);
  if (full === undefined) {
    if (textWidths.size > 20000) textWidths.clear();
    full = g.measureText(text).width;
    textWidths.set(key, full);
  }
  if (full <= width) return text;
  /* Characters are about equally wide: guess, then take off what still overflows. */
  let keep = Math.floor(width / full * text.length);
  let cut = middle(text, keep);
  while (keep > 3 && g.measureText(cut).width > width) cut = middle(text, --keep);
  return keep > 3 ? cut : "";
}

/* A table cell's content for a region name: its colour, the short name
 * (cut in the middle beyond `keep` characters), the full name on hover. */
export function nameHtml(name, keep) {
  return '<span class="swatch" data-name="' + escapeHtml(name) + '"></span><span class="fn" title="' + escapeHtml(name) + '">' +
    escapeHtml(middle(displayName(name), keep || 60)) + "</span>";
}

const colours = new Map();
/* One colour per module, the same in every view and run. */
export function colourOf(name) {
  const module = moduleOf(name);
  let colour = colours.get(module);
  if (!colour) {
    let h = 2166136261;
    for (let i = 0; i < module.length; i++) h = Math.imul(h ^ module.charCodeAt(i), 16777619);
    const hue = (h >>> 0) % 360;
    const light = 62 + ((h >>> 9) % 3) * 6;
    colour = "hsl(" + hue + ",58%," + light + "%)";
    colours.set(module, colour);
  }
  return colour;
}

/* "file.py:12" of a region (its file's last part), "" when it has none. */
export function location(region) {
  if (!region.file) return "";
  const slash = region.file.lastIndexOf("/");
  return region.file.slice(slash + 1) + (region.line ? ":" + region.line : "");
}

/* format.js -- how numbers, times and sizes are written, in the viewer, the live page and the report alike.
 *
 * Exports: fmtDuration, fmtBytes, fmtTime, fmtCount, count, percent, niceStep (a ruler's step), escapeHtml. */

/* Three significant digits, never in exponent notation (toPrecision writes 1.00e+3). */
function fmtThreeDigits(x) {
  const a = Math.abs(x);
  return x.toFixed(a >= 100 ? 0 : a >= 10 ? 1 : 2);
}

/* Rounded first, so that 999.7 µs reads "1.00 ms", not "1000 µs". */
export function fmtDuration(ns) {
  const r = Number(ns.toPrecision(3)), a = Math.abs(r);
  if (a < 1e3) return ns.toFixed(0) + " ns";
  if (a < 1e6) return fmtThreeDigits(r / 1e3) + " µs";
  if (a < 1e9) return fmtThreeDigits(r / 1e6) + " ms";
  return (ns / 1e9).toFixed(3) + " s";
}

export function fmtBytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (Math.abs(n) >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? fmtThreeDigits(n) : Math.round(n)) + " " + units[i];
}

/* A time on the experiment's axis, with a precision that suits `step`. */
export function fmtTime(ns, step) {
  let text;
  if (step >= 1e9) text = (ns / 1e9).toFixed(0) + " s";
  else if (step >= 1e6) text = (ns / 1e6).toFixed(Math.max(0, 3 - Math.round(Math.log10(step / 1e3)))) + " ms";
  else if (step >= 1e3) text = (ns / 1e3).toFixed(Math.max(0, 3 - Math.round(Math.log10(step)))) + " µs";
  else text = ns.toFixed(0) + " ns";
  return text.replace(/^-(0(\.0*)? )/, "$1"); /* a time just before the start, rounded to zero, is zero */
}

export function fmtCount(n) {
  return Math.round(n).toLocaleString("en-US");
}

/* "1 thread", "5 threads", "1,234 calls". */
export function count(n, noun) {
  return fmtCount(n) + " " + noun + (n === 1 ? "" : "s");
}

export function percent(part, whole) {
  return whole > 0 ? (100 * part / whole).toFixed(1) + "%" : "";
}

/* A step of 1, 2 or 5 times a power of ten near range / target. */
export function niceStep(range, target) {
  const raw = range / Math.max(1, target);
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5, 10]) if (m * power >= raw) return m * power;
  return 10 * power;
}

export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"})[c]);
}

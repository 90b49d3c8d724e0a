// @ts-check
// The browser's copies of Python's number rules, each held to its Python original by a test
// that runs this file in Node on the same cases (tests/test_param_grammar_js.py):
// - tw.parseNumber(text, kind): widgets_py/engine/params.py's parse_number (CLI, Markdown,
//   URL, worker), one grammar:
//     int    -?[0-9]+                                 (no '+', spaces, '_', hex, '8.0', '1e1')
//     float  -?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?    (no '.5', '5.', 'inf', other scripts' digits)
//   the number, or null when `text` is not one of `kind` ('int' or 'float');
// - tw.formatNumber(x, decimals), tw.percent(fraction, decimals): engine/fmt.py's number and
//   percent (Catalan: 1.234,5 and 77 %), with Python's rounding;
// - tw.readAnswer(text): a number as a reader types it in a quiz (quiz.js): what fmt.number
//   writes (1.234.567,5, −3) and the plain forms (1234567.5, 1,2e6, 68 719 476 736); NaN else;
// - tw.nearestIndex(positions | grid, value): a slider's position nearest `value`, the first on
//   a tie, as build_hooks/pages/widget_html.py places a control (Param.nearest_index).
(() => {
  "use strict";
  const scope = typeof self !== "undefined" ? self : globalThis;
  const tw = (scope.tw ||= /** @type {TW} */ ({}));
  const INT = /^-?[0-9]+$/;
  const FLOAT = /^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$/;
  tw.parseNumber = (text, kind) => {
    if (typeof text !== "string") return null;
    if (kind === "int") return INT.test(text) ? Number(text) : null;
    return kind === "float" && FLOAT.test(text) ? Number(text) : null;
  };

  /** |x| to `d` decimals as Python's format() rounds: the double's exact value, a tie to the
   *  even digit (toFixed rounds a tie away from zero: 2.5 -> "3", Python "2"). */
  const fixed = (/** @type {number} */ x, /** @type {number} */ d) => {
    const ax = Math.abs(x);
    if (ax >= 1e21) return BigInt(ax).toString() + (d ? "." + "0".repeat(d) : ""); // toFixed: exponent form
    const exact = ax.toFixed(100); // the double's decimal expansion: a tie ends within d + 1 places
    const cut = exact.indexOf(".") + 1 + d; // the first digit dropped
    const tie = exact[cut] === "5" && /^0*$/.test(exact.slice(cut + 1));
    const kept = exact[d ? cut - 1 : cut - 2]; // the last digit kept
    if (tie && Number(kept) % 2 === 0) return exact.slice(0, d ? cut : cut - 1);
    return ax.toFixed(d);
  };

  tw.formatNumber = (/** @type {number} */ x, decimals = 0) => {
    if (x == null || !Number.isFinite(x)) return "—";
    const s = fixed(x, decimals);
    const [whole, frac] = s.split(".");
    const text = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ".") + (frac ? "," + frac : "");
    return (x < 0 && Number(s) !== 0 ? "\u2212" : "") + text;
  };

  tw.percent = (/** @type {number} */ fraction, decimals = 0) => {
    const text = tw.formatNumber(100 * fraction, decimals);
    return text === "—" ? text : `${text} %`;
  };

  tw.readAnswer = (/** @type {string} */ text) => {
    let t = String(text).trim().replace(/[\s\u00a0\u202f]/g, "").replace(/^\u2212/, "-");
    if (/^[-+]?\d{1,3}(\.\d{3})+(,\d+)?$/.test(t)) t = t.replace(/\./g, "");
    t = t.replace(",", ".");
    return /^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(t) ? Number(t) : NaN;
  };

  /** @param {number[] | {grid: number[]}} positions the slider's values, or its grid [min, step, count] */
  tw.nearestIndex = (positions, /** @type {number} */ value) => {
    if ("grid" in positions) {
      const [min, step, count] = positions.grid;
      return Math.min(count - 1, Math.max(0, Math.ceil((value - min) / step - 0.5))); // a tie: the lower
    }
    let best = 0;
    positions.forEach((p, i) => Math.abs(p - value) < Math.abs(positions[best] - value) && (best = i));
    return best;
  };
})();

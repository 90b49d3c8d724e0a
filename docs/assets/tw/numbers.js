// The browser's copy of the number grammar in widgets_py/params.py (one set of rules:
// CLI, Markdown, URL, worker). tests/test_param_grammar_js.py runs this file in Node and
// checks it against the Python `parse_number` on the same cases, so the two cannot drift.
//   int    -?[0-9]+                                 (no '+', spaces, '_', hex, '8.0', '1e1')
//   float  -?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?    (no '.5', '5.', 'inf', other scripts' digits)
// Returns the number, or null when `text` is not one of `kind` ('int' or 'float').
(() => {
  "use strict";
  const scope = typeof self !== "undefined" ? self : globalThis;
  const tw = (scope.tw = scope.tw || {});
  const INT = /^-?[0-9]+$/;
  const FLOAT = /^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$/;
  tw.parseNumber = (text, kind) => {
    if (typeof text !== "string") return null;
    if (kind === "int") return INT.test(text) ? Number(text) : null;
    return kind === "float" && FLOAT.test(text) ? Number(text) : null;
  };
})();

// @ts-check
// A widget's controls as parameters: read them (the one reader: the host and the tests use
// it), put a shared link's values into them (?INSTANCE=k:v,k:v, validated against the
// page's own controls before any of them is used), and copy a link to the current state.
(() => {
  "use strict";
  const tw = (window.tw ||= /** @type {TW} */ ({}));
  if (tw.readParams) return;
  const { CLASS, DATA } = tw.protocol.DOM; // what the build's HTML carries (widgets_py/engine/dom.py)
  const TEXT = {
    copy: "Copia l'enllaç",
    copied: "Enllaç copiat",
    copyShown: "Copia aquest enllaç:",
    urlNote: (notes) => `Paràmetres de l'enllaç: ${notes.join("; ")}.`,
    clamped: (name, from, to) => `${name} ${from} → ${to} (fora del rang permès)`,
    snapped: (name, from, to) => `${name} ${from} → ${to} (el valor més proper que ofereix el control)`,
    dropped: (name) => `${name} descartat (no és vàlid aquí)`,
    repeated: (name) => `${name} repetit: es manté el primer valor`,
    unnamed: (n) => `${n === 1 ? "1 entrada descartada" : `${grouped(n)} entrades descartades`} (no comencen amb un nom de paràmetre)`,
    more: (n) => `i ${grouped(n)} ${n === 1 ? "avís" : "avisos"} més`,
  };
  // A link is anyone's text: its note names parameters and their values, never more. A name
  // is one of the parameters' grammar (Python identifiers, widgets_py/engine/params.py), a
  // value is cut short, and past a few notes the rest are counted: a link of 1 MB, or of
  // prose written to pass for the page's own, gives a short note.
  const NAME = /^[A-Za-z_][A-Za-z0-9_]{0,39}$/;
  const MAX_NOTES = 6;
  const MAX_VALUE = 24; // characters of a value shown in a note (a number that was clamped)
  const short = (/** @type {string} */ text) => (text.length > MAX_VALUE ? `${text.slice(0, MAX_VALUE - 1)}…` : text);

  const controlsOf = (w) => [...w.querySelectorAll(`.${CLASS.CONTROLS} [name]`)];

  /** fmt.number(n) for an integer (numbers.js): Catalan grouping by dots (1.234), a true minus sign. */
  const grouped = (/** @type {number} */ n) => tw.formatNumber(n, 0);

  /** A slider's positions: listed (data-positions, data-labels), or for a long run of
   *  integers (widget_html.is_grid) the grid [min, step, count] they are computed from. */
  const slider = {
    grid: (el) => (el.dataset[DATA.GRID] ? JSON.parse(el.dataset[DATA.GRID]) : null),
    count(el) {
      const g = slider.grid(el);
      return g ? g[2] : JSON.parse(el.dataset[DATA.POSITIONS]).length;
    },
    value(el, i) {
      const g = slider.grid(el);
      return g ? g[0] + i * g[1] : JSON.parse(el.dataset[DATA.POSITIONS])[i];
    },
    label(el, i) {
      return slider.grid(el) ? grouped(slider.value(el, i)) : JSON.parse(el.dataset[DATA.LABELS])[i];
    },
    nearest(el, number) {
      const g = slider.grid(el);
      return tw.nearestIndex(g ? { grid: g } : JSON.parse(el.dataset[DATA.POSITIONS]), number); // numbers.js
    },
  };

  /** The parameters the widget's controls show now: what Python is called with. */
  function readParams(w) {
    const params = {};
    controlsOf(w).forEach((el) => {
      if (el.type === "checkbox") params[el.name] = el.checked;
      else if (el.type === "hidden") params[el.name] = JSON.parse(el.dataset[DATA.JSON]); // fixed by the page
      else if (el.type === "range") params[el.name] = slider.value(el, Number(el.value));
      else params[el.name] = el.value;
    });
    return params;
  }

  function showSlider(el) {
    const label = slider.label(el, Number(el.value));
    const out = el.closest(`.${CLASS.CONTROL}`).querySelector("output");
    if (out) out.textContent = label;
    el.setAttribute("aria-valuetext", label);
  }

  /** The printed line of parameters (widget_html.params_line: controls are not printed),
   *  rewritten from the controls as the reader moves them. */
  function showParams(w) {
    const line = w.querySelector(`.${CLASS.PARAMS}`);
    if (!line) return;
    const parts = controlsOf(w).filter((el) => el.type !== "hidden").map((el) => {
      const label = el.closest(`.${CLASS.CONTROL}`).querySelector("label").cloneNode(true);
      label.querySelectorAll("output, input").forEach((part) => part.remove()); // the name alone
      const name = label.textContent.trim();
      if (el.type === "checkbox") return `${name}: ${el.checked ? "sí" : "no"}`;
      if (el.tagName === "SELECT") return `${name}: ${el.selectedOptions[0].textContent}`;
      return `${name}: ${slider.label(el, Number(el.value))}`;
    });
    line.textContent = `Paràmetres: ${parts.join("; ")}.`;
  }

  function linkFor(w) {
    const params = readParams(w);
    const fixed = new Set(controlsOf(w).filter((el) => el.type === "hidden").map((el) => el.name));
    const pairs = Object.entries(params).filter(([k]) => !fixed.has(k)).map(([k, v]) => `${k}:${encodeURIComponent(v)}`);
    const url = new URL(location.href);
    url.search = `?${encodeURIComponent(w.dataset[DATA.INSTANCE])}=${pairs.join(",")}`; // readable: ?roofline=batch:8,…
    if (tw.track) url.search += `&${encodeURIComponent(tw.track.param)}=${encodeURIComponent(tw.track.name)}`; // a single file's track: the link opens it
    url.hash = w.id;
    return url.href;
  }

  /** Put one value of the URL into its control; a note when it is dropped or clamped. */
  function setControl(w, name, value) {
    const el = controlsOf(w).find((c) => c.name === name && c.type !== "hidden");
    if (!el) return TEXT.dropped(name);
    if (el.tagName === "SELECT") {
      if (![...el.options].some((o) => o.value === value)) return TEXT.dropped(name);
      el.value = value;
    } else if (el.type === "checkbox") {
      if (value !== "true" && value !== "false") return TEXT.dropped(name);
      el.checked = value === "true";
    } else {
      // the number grammar of the CLI and the directives (numbers.js): no hex, spaces, '1e2' for an int
      const number = tw.parseNumber(value, el.dataset[DATA.KIND] || "float");
      if (number === null || !Number.isFinite(number)) return TEXT.dropped(name);
      const best = slider.nearest(el, number);
      el.value = String(best);
      showSlider(el);
      const label = slider.label(el, best);
      if (number < slider.value(el, 0) || number > slider.value(el, slider.count(el) - 1)) return TEXT.clamped(name, short(value), label);
      if (slider.value(el, best) !== number) return TEXT.snapped(name, short(value), label);
    }
    return null;
  }

  /** Put the URL's values for this widget into its controls; null when the URL has none. */
  function applyUrlState(w) {
    const raw = new URLSearchParams(location.search).get(w.dataset[DATA.INSTANCE]);
    if (raw === null) return null;
    const notes = [];
    const seen = new Set();
    const repeated = new Set(); // a name said once, however often it comes again
    let unnamed = 0;
    for (const pair of raw.split(",").filter(Boolean)) {
      const cut = pair.indexOf(":");
      const name = cut > 0 ? pair.slice(0, cut) : pair;
      if (!NAME.test(name)) {
        unnamed += 1; // not a parameter's name: counted, not shown
        continue;
      }
      if (seen.has(name)) {
        if (!repeated.has(name)) notes.push(TEXT.repeated(name));
        repeated.add(name);
        continue;
      }
      seen.add(name);
      let value;
      try {
        value = decodeURIComponent(cut > 0 ? pair.slice(cut + 1) : "");
      } catch {
        value = "";
      }
      const note = setControl(w, name, value);
      if (note) notes.push(note);
    }
    if (notes.length > MAX_NOTES) notes.splice(MAX_NOTES, Infinity, TEXT.more(notes.length - MAX_NOTES));
    if (unnamed) notes.push(TEXT.unnamed(unnamed));
    if (notes.length) {
      const note = document.createElement("p");
      note.className = "tw-urlnote";
      note.setAttribute("role", "note");
      note.textContent = TEXT.urlNote(notes);
      w.querySelector(`.${CLASS.HEAD}`).after(note);
    }
    return notes;
  }

  function addCopyButton(w) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "tw-copy";
    button.textContent = TEXT.copy;
    button.disabled = true;
    button.addEventListener("click", async () => {
      const url = linkFor(w);
      w.dataset.link = url;
      try {
        await navigator.clipboard.writeText(url);
        button.textContent = TEXT.copied;
        setTimeout(() => (button.textContent = TEXT.copy), 2000);
      } catch {
        window.prompt(TEXT.copyShown, url); // no clipboard (insecure origin): show it to copy by hand
      }
    });
    w.querySelector(`.${CLASS.CONTROLS}`).append(button);
  }

  Object.assign(tw, { readParams, controlsOf, showSlider, showParams, applyUrlState, addCopyButton, linkFor, slider, grouped });
})();

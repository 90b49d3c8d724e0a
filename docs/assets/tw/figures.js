// @ts-check
// A widget's figure, drawn for the width it is shown at. The page holds one drawing per layout
// (widgets_py/engine/svg.py: "wide", and "compact" for a phone's column), each in a slot
// `.tw-figure > [data-layout]`, and tw.css shows the one the figure's box fits (a container
// query): the page is right at any width before Python arrives. Python then redraws only the
// layout shown (the call's `layout`, protocol.js); the other slot keeps an older drawing and
// is marked `data-stale`, so that a box that changes layout (a phone turned sideways) asks for
// a fresh one, and print shows the fresh one whatever the paper's width (tw.css @media print).
(() => {
  "use strict";
  const tw = (window.tw ||= /** @type {TW} */ ({}));
  if (tw.figures) return;
  const { CLASS, DATA } = tw.protocol.DOM; // what the build's HTML carries (widgets_py/engine/dom.py)

  const slots = (w) => [...w.querySelectorAll(`.${CLASS.FIGURE} > [data-${DATA.LAYOUT}]`)];

  /** The layout the page shows now (the slot tw.css displays), or the protocol's default. */
  function shown(w) {
    const slot = slots(w).find((s) => getComputedStyle(s).display !== "none");
    return slot ? slot.dataset[DATA.LAYOUT] : tw.protocol.LAYOUT;
  }

  /** Put a drawing (a reply or a step: {figure, layout}) in its slot; the others are stale. */
  function show(w, data) {
    const all = slots(w);
    const slot = all.find((s) => s.dataset[DATA.LAYOUT] === data.layout) || all[0];
    // cleaned: the drawing may come from a reader's edit (markup.js)
    if (!slot) return void tw.markup.fill(w.querySelector(`.${CLASS.FIGURE}`), data.figure);
    tw.markup.fill(slot, data.figure);
    all.forEach((s) => (s === slot ? delete s.dataset.stale : (s.dataset.stale = "true")));
  }

  /** Call `redraw()` when the figure's box changes layout and the one it shows is stale. */
  function watch(w, redraw) {
    const figure = w.querySelector(`.${CLASS.FIGURE}`);
    if (!figure || typeof ResizeObserver === "undefined") return;
    let last = shown(w);
    new ResizeObserver(() => {
      const now = shown(w);
      if (now === last) return;
      last = now;
      const slot = slots(w).find((s) => s.dataset[DATA.LAYOUT] === now);
      if (slot && slot.dataset.stale) redraw();
    }).observe(figure);
  }

  tw.figures = { shown, show, watch };
})();

// @ts-check
// The single-file export's tracks (build_hooks/export/single_file.py writes it into the file, after
// the index's body and the <template> of each other page of the chapter and before the scripts every page ends with). It
// puts in the body the page that `?pista=NAME` in the file's URL names (the chapter's index
// when none or an unknown one is named), and its title, so that the scripts after it (Material's,
// the kernel, the widgets) find the page they expect. The index's own body is in the file as it is
// (it reads without JavaScript); another track replaces it. The file's links between its pages are
// ?pista=NAME links to the file itself: a track is switched by loading the file again; a widget's
// copied link keeps the track (tw.track, read by url-state.js).
(() => {
  "use strict";
  const TRACKS = __TRACKS__;
  const named = new URLSearchParams(location.search).get(TRACKS.param);
  const templates = /** @type {HTMLTemplateElement[]} */ ([...document.querySelectorAll(`template[${TRACKS.attr}]`)]);
  const chosen = templates.find((t) => t.getAttribute(TRACKS.attr) === named); // none: the index, already in place
  const here = /** @type {HTMLScriptElement} */ (document.currentScript);
  if (chosen) {
    // the index's body comes first, as it reads without JavaScript: every node before the templates
    const body = /** @type {HTMLElement} */ (here.parentElement);
    while (body.firstChild && body.firstChild !== templates[0]) body.firstChild.remove();
    here.before(document.importNode(chosen.content, true));
    document.title = chosen.dataset.title || document.title;
  }
  const tw = (window.tw ||= /** @type {TW} */ ({}));
  tw.track = { param: TRACKS.param, name: chosen ? named : TRACKS.default }; // url-state.js keeps it in a copied link
  templates.forEach((t) => t.remove()); // the other tracks: not in the document a reader reads
})();

// @ts-check
// The one way a widget's output enters the page. Figures and tables come from Python in the
// worker: the shipped modules, or a reader's edit in the «Codi» panel, which can return any
// text. Each is parsed and cleaned by DOMPurify (assets/tw/purify.min.js, the pinned npm
// release, byte for byte: tests/test_sandbox.py checks it) with the allow-list of
// widgets_py/engine/markup.py, which the site config carries: SVG shapes and text, tables,
// the drawing classes; no script, style, link, meta, foreignObject, event handler or URL,
// and no class of the theme's or of the page's own. The build holds prerendered figures to
// the same list, so a shipped figure loses nothing here. Without DOMPurify, or for a reply
// too large to show, nothing is inserted: the widget keeps the figure it has.
(() => {
  "use strict";
  const tw = (window.tw ||= /** @type {TW} */ ({}));
  let allowed = null; // [config text, DOMPurify options, classes] of the page's config
  // The largest figure or table the shipped widgets draw is about 65 000 characters
  // (batching at 400 requests, both layouts alike); a reply eight times that is refused
  // unread: parsing grows with its length (an edit's 2,9 MB of <rect> held the page 3,3 s)
  const MAX_CHARS = 512 * 1024;

  function options() {
    const { DATA, ID } = tw.protocol.DOM;
    const el = document.getElementById(ID.CONFIG);
    const text = el ? el.dataset[DATA.CONFIG] : "{}";
    if (!allowed || allowed[0] !== text) {
      const list = JSON.parse(text).markup || { tags: [], attributes: [], classes: [] };
      allowed = [text, {
        ALLOWED_TAGS: list.tags,
        ALLOWED_ATTR: list.attributes,
        ALLOW_DATA_ATTR: false,
        ALLOW_ARIA_ATTR: false, // only the aria-* attributes the list names
        // DOMPurify checks every attribute that is not "URI-safe" against ALLOWED_URI_REGEXP:
        // the list's are geometry, text and table attributes, none of which a browser reads as
        // a URL, so they are declared safe (without this, /^$/ dropped every non-empty x, d
        // or viewBox, and every figure drawn in the page came out blank); anything else
        // matching nothing holds no URL (a backstop: tests/test_sandbox.py keeps URL-bearing
        // attributes off the list)
        ADD_URI_SAFE_ATTR: list.attributes,
        ALLOWED_URI_REGEXP: /^$/,
        RETURN_DOM_FRAGMENT: true, // no second parse of the cleaned text
      }, new Set(list.classes)];
    }
    return allowed;
  }

  /** Each `class` keeps only the list's classes (a theme's class could place the element
   *  anywhere: Material's overlays are position: fixed), and goes when none is left. */
  function keepClasses(fragment, classes) {
    fragment.querySelectorAll("[class]").forEach((el) => {
      const kept = el.getAttribute("class").split(/\s+/).filter((c) => classes.has(c));
      if (kept.length) el.setAttribute("class", kept.join(" "));
      else el.removeAttribute("class");
    });
    return fragment;
  }

  const tooLarge = (/** @type {number} */ n) =>
    `la sortida és massa gran per mostrar-la (${tw.formatNumber(n / 1024)} kB; com a màxim ${tw.formatNumber(MAX_CHARS / 1024)} kB)`;

  /** An Error naming the size if `html` is too large to show (nothing is parsed). */
  function tooLargeError(html) {
    const n = String(html).length;
    return n > MAX_CHARS ? Object.assign(new Error(tooLarge(n)), { shown: true }) : null;
  }

  tw.markup = {
    /** Throws, before any part of a reply is shown, if one of `parts` is too large. */
    check(...parts) {
      for (const part of parts) {
        const error = tooLargeError(part);
        if (error) throw error;
      }
    },
    /** `el`'s children become the cleaned `html`; an Error if the page has no sanitiser or
     *  `html` is too large (then `el` is left as it was). */
    fill(el, html) {
      if (!window.DOMPurify || !window.DOMPurify.isSupported) throw new Error("sense netejador d'HTML (DOMPurify)");
      const text = String(html);
      const error = tooLargeError(text);
      if (error) throw error;
      const [, settings, classes] = options();
      el.replaceChildren(keepClasses(window.DOMPurify.sanitize(text, settings), classes));
    },
  };
})();

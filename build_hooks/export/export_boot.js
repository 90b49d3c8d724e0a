// @ts-check
// The single-file export's page side (build_hooks/export/single_file.py writes it into the file, before
// kernel.js). It tells the kernel how to make its worker when the page has no folder to load
// it from: `tw.embedded.worker()` starts one from a Blob URL (export_worker.js, then the
// site's worker.js) and, once the document is parsed, posts the worker the compressed
// payloads that the file carries in <script type="application/x-tw-payload"> elements
// (gzip, in base 85: export_decode.js, which the file runs just before this script).
//
// From file:// the page's origin and its worker's are opaque, and engines disagree on whose
// blob: URLs the worker may load: Chromium (and Firefox) load those the worker made and
// refuse the page's ("failed to load"); WebKit (Safari's engine; WebKitGTK 2.50 here) loads
// the page's and refuses the worker's ("NetworkError: Load failed", for importScripts and
// fetch alike). So the page also makes a blob: URL for every script the worker may import:
// the sources' when it starts the worker, and, unpacked here, the payloads that are scripts
// (pyodide.js, pyodide.asm.js) in a second message (SCRIPTS); the worker uses whichever
// kind it can load (export_worker.js).
(() => {
  "use strict";
  const tw = (window.tw ||= /** @type {TW} */ ({}));
  const EXPORT = __EXPORT__; // {sources: {name: text}, decoder, prelude, entry, payloadType, FILES, SCRIPTS}

  /** @returns {HTMLScriptElement[]} */
  const elements = () => [...document.querySelectorAll(`script[type="${EXPORT.payloadType}"]`)].map((el) => /** @type {HTMLScriptElement} */ (el));

  const forWorker = () => elements().filter((el) => !el.dataset.urlInto);
  const isScript = (name) => name.endsWith(".js");
  const scriptURL = (data) => URL.createObjectURL(new Blob([data], { type: "text/javascript" }));

  /** The worker's files, as they are in the file (the worker unpacks them). */
  function payloads() {
    return forWorker().map((el) => ({ name: el.dataset.name, text: el.textContent }));
  }

  /** The payloads that are scripts, unpacked here: {name: blob: URL}. */
  async function payloadScripts() {
    const scripts = forWorker().filter((el) => isScript(el.dataset.name));
    const urls = await Promise.all(scripts.map(async (el) => scriptURL(await unpack(el.textContent))));
    return Object.fromEntries(scripts.map((el, i) => [el.dataset.name, urls[i]]));
  }

  async function unpack(text) {
    return new Response(new Response(twDecode85(text)).body.pipeThrough(new DecompressionStream("gzip"))).blob();
  }

  /** A page-side script loaded on demand (the code panel's editor): data-url-into="ID:KEY"
   *  gives element ID's data-KEY the payload's blob: URL, where the page expects a path. */
  function pageScripts() {
    elements().filter((el) => el.dataset.urlInto).forEach(async (el) => {
      const [id, key] = el.dataset.urlInto.split(":");
      const blob = await unpack(el.textContent);
      const target = document.getElementById(id);
      if (target) target.dataset[key] = URL.createObjectURL(new Blob([blob], { type: "text/javascript" }));
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", pageScripts, { once: true });
  else pageScripts();

  function worker() {
    const scripts = Object.fromEntries(Object.keys(EXPORT.sources).filter(isScript).map((name) => [name, scriptURL(EXPORT.sources[name])]));
    const setup = `self.twExport = ${JSON.stringify({ sources: EXPORT.sources, scripts, FILES: EXPORT.FILES,
                                                      SCRIPTS: EXPORT.SCRIPTS, ERROR: tw.protocol.ERROR })};\n`;
    const code = [setup, EXPORT.sources[EXPORT.decoder], EXPORT.sources[EXPORT.prelude], EXPORT.sources[EXPORT.entry]].join("\n");
    const w = new Worker(scriptURL(code));
    const send = () => {
      w.postMessage({ type: EXPORT.FILES, files: payloads() });
      payloadScripts().then(
        (urls) => w.postMessage({ type: EXPORT.SCRIPTS, scripts: urls }),
        (error) => w.postMessage({ type: EXPORT.SCRIPTS, error: `${error.name}: ${error.message}` }),
      );
    };
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", send, { once: true });
    else send();
    return w;
  }

  tw.embedded = { worker };
})();

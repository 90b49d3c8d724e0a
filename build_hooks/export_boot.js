// The single-file export's page side (build_hooks/export.py writes it into the file, before
// kernel.js). It tells the kernel how to make its worker when the page has no folder to load
// it from: `tw.embedded.worker()` starts one from a Blob URL (export_worker.js, then the
// site's worker.js), `tw.embedded.helper()` the kernel's helper (helper.js), and, once the
// document is parsed, posts the worker the compressed payloads that the file carries in
// <script type="application/x-tw-payload"> elements (base64 of gzip).
(() => {
  "use strict";
  const tw = (window.tw = window.tw || {});
  const EXPORT = __EXPORT__; // {sources: {name: text}, prelude, entry, payloadType, FILES}

  const elements = () => [...document.querySelectorAll(`script[type="${EXPORT.payloadType}"]`)];

  /** The worker's files: every payload but those the page itself uses. */
  function payloads() {
    return elements().filter((el) => !el.dataset.urlInto).map((el) => ({ name: el.dataset.name, base64: el.textContent }));
  }

  async function unpack(base64) {
    const packed = Uint8Array.fromBase64 ? Uint8Array.fromBase64(base64) : Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
    return new Response(new Blob([packed]).stream().pipeThrough(new DecompressionStream("gzip"))).blob();
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
    const setup = `self.twExport = ${JSON.stringify({ sources: EXPORT.sources, FILES: EXPORT.FILES })};\n`;
    const code = [setup, EXPORT.sources[EXPORT.prelude], EXPORT.sources[EXPORT.entry]].join("\n");
    const w = new Worker(URL.createObjectURL(new Blob([code], { type: "text/javascript" })));
    const send = () => w.postMessage({ type: EXPORT.FILES, files: payloads() });
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", send, { once: true });
    else send();
    return w;
  }

  /** The kernel's helper (helper.js: the WebAssembly kernel alone, no files to load). */
  function helper() {
    return new Worker(URL.createObjectURL(new Blob([EXPORT.sources["helper.js"]], { type: "text/javascript" })));
  }

  tw.embedded = { worker, helper };
})();

// The single-file export's page side (build_hooks/export.py writes it into the file, before
// kernel.js). It tells the kernel how to make its worker when the page has no folder to load
// it from: `tw.embedded.worker()` starts one from a Blob URL (export_worker.js, then the
// site's worker.js) and, once the document is parsed, posts it the compressed payloads that
// the file carries in <script type="application/x-tw-payload"> elements (base64 of gzip).
(() => {
  "use strict";
  const tw = (window.tw = window.tw || {});
  const EXPORT = __EXPORT__; // {sources: {name: text}, prelude, entry, payloadType, FILES}

  function payloads() {
    return [...document.querySelectorAll(`script[type="${EXPORT.payloadType}"]`)]
      .map((el) => ({ name: el.dataset.name, base64: el.textContent }));
  }

  function worker() {
    const setup = `self.twExport = ${JSON.stringify({ sources: EXPORT.sources, FILES: EXPORT.FILES })};\n`;
    const code = [setup, EXPORT.sources[EXPORT.prelude], EXPORT.sources[EXPORT.entry]].join("\n");
    const w = new Worker(URL.createObjectURL(new Blob([code], { type: "text/javascript" })));
    const send = () => w.postMessage({ type: EXPORT.FILES, files: payloads() });
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", send, { once: true });
    else send();
    return w;
  }

  tw.embedded = { worker };
})();

// Starts the Pyodide worker from <head>, while the long page is still being parsed, so
// that Python boots in parallel with the page; host.js adopts the worker and replays the
// messages it sent meanwhile. Only on pages with widgets, never from file://.
(() => {
  "use strict";
  if (location.protocol === "file:" || typeof Worker === "undefined" || typeof WebAssembly === "undefined") return;
  const script = document.currentScript;
  const config = JSON.parse(script.dataset.config);
  const root = new URL("../../", script.src); // this file is assets/tw/boot.js
  const worker = new Worker(new URL("assets/tw/worker.js", root));
  const boot = { worker, config, buffer: [] };
  worker.onmessage = (event) => boot.buffer.push(event);
  worker.onerror = (event) => {
    event.preventDefault();
    boot.buffer.push({ data: { type: "event:error", message: event.message || "el worker no arrenca" } });
  };
  worker.postMessage({ type: "init", root: root.href, pyodide: config.pyodide, bundle: config.bundle });
  window.__twBoot = boot;
})();

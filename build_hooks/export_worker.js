// The single-file export's worker prelude (build_hooks/export.py): it runs before the site's
// own worker.js, which is unchanged, inside a worker made from a Blob URL (export_boot.js).
// Everything the worker would load comes from memory instead:
// - importScripts(any URL) and fetch(any URL) are answered by file name (the last path
//   segment, query dropped) from the files the page sent: worker.js and its scripts as text,
//   Pyodide's runtime, numpy, the widgets wheel and the lock as gzip payloads, unpacked here
//   with the browser's DecompressionStream. A name the file does not hold is an error, never
//   a request: nothing here can reach the network or the disk.
// - Messages that arrive before the payloads (the kernel's init) wait for them, in order.
"use strict";
(() => {
  const { sources, FILES } = self.twExport; // name -> text; the files message's type
  const files = new Map(); // name -> Uint8Array, once unpacked
  const scripts = new Map(); // name -> blob: URL, for importScripts
  const send = self.postMessage.bind(self); // worker.js's lock-down takes self.postMessage away
  const nameOf = (url) => decodeURIComponent(String(url).split(/[?#]/)[0].split("/").pop());

  function bytesOf(name) {
    if (Object.hasOwn(sources, name)) return new TextEncoder().encode(sources[name]);
    if (files.has(name)) return files.get(name);
    throw new TypeError(`${name}: aquest fitxer no el conté`);
  }

  const importOriginal = self.importScripts.bind(self);
  self.importScripts = (...urls) =>
    importOriginal(...urls.map((url) => {
      const name = nameOf(url);
      if (!scripts.has(name)) scripts.set(name, URL.createObjectURL(new Blob([bytesOf(name)], { type: "text/javascript" })));
      return scripts.get(name);
    }));
  self.fetch = async (input) => {
    const name = nameOf(input && typeof input === "object" && "url" in input ? input.url : input);
    const type = name.endsWith(".wasm") ? "application/wasm" : name.endsWith(".json") ? "application/json" : "application/octet-stream";
    return new Response(bytesOf(name), { status: 200, headers: { "Content-Type": type } });
  };
  self.importScripts("protocol.js");
  const P = self.tw.protocol;

  async function unpack({ name, base64 }) {
    const packed = Uint8Array.fromBase64 ? Uint8Array.fromBase64(base64) : Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
    const stream = new Blob([packed]).stream().pipeThrough(new DecompressionStream("gzip"));
    files.set(name, new Uint8Array(await new Response(stream).arrayBuffer()));
  }

  // worker.js sets self.onmessage: keep its handler and call it once the payloads are in
  let handler = null;
  Object.defineProperty(self, "onmessage", { configurable: true, get: () => handler, set: (fn) => (handler = fn) });
  let arrived;
  const unpacked = new Promise((resolve) => (arrived = resolve));
  let failed = false;
  let queue = Promise.resolve();
  self.addEventListener("message", (event) => {
    if (event.data && event.data.type === FILES) {
      send({ type: P.PROGRESS, message: "Desempaquetant Python del fitxer…", fraction: 0.02 });
      arrived(Promise.all(event.data.files.map(unpack)));
      return;
    }
    queue = queue.then(() => unpacked).then(
      () => handler && void handler(event),
      (error) => failed || ((failed = true), send({ type: P.ERROR, message: `desempaquetant: ${error.message}` })),
    );
  });
})();

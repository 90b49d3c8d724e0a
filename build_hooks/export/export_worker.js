// @ts-check
// The single-file export's worker prelude (build_hooks/export/single_file.py): it runs before the site's
// own worker.js, which is unchanged, inside a worker made from a Blob URL (export_boot.js).
// Everything the worker would load comes from memory instead:
// - importScripts(any URL) and fetch(any URL) are answered by file name (the last path
//   segment, query dropped) from the files the page sent: worker.js and its scripts as text,
//   Pyodide's runtime, numpy, the widgets wheel and the lock as gzip payloads in base 85
//   (twDecode85: export_decode.js, which the page puts before this prelude), unpacked here
//   with the browser's DecompressionStream (from the bytes: WebKit cannot read a Blob here
//   either). A name the file does not hold is an error, never a request: nothing here can
//   reach the network or the disk.
// - A script is imported from a blob: URL this worker makes where the engine allows it
//   (Chromium, Firefox), else from the one the page made for it (WebKit: export_boot.js
//   says why); which one is found once, with an empty script.
// - Messages that arrive before the payloads (the kernel's init) wait for them, in order.
// - A failure says what failed: an uncaught error in a script loaded from a blob: URL reaches
//   the page as "Script error." in some engines (WebKit), so errors are posted as messages.
"use strict";
(() => {
  const { sources, scripts: startScripts, FILES, SCRIPTS, ERROR } = self.twExport;
  const files = new Map(); // name -> Uint8Array, once unpacked
  const pageScripts = new Map(Object.entries(startScripts)); // name -> blob: URL the page made
  const ownScripts = new Map(); // name -> blob: URL made here
  const send = self.postMessage.bind(self); // worker.js's lock-down takes self.postMessage away
  const nameOf = (url) => decodeURIComponent(String(url).split(/[?#]/)[0].split("/").pop());
  const describe = (error) => (error && error.name && error.message ? `${error.name}: ${error.message}` : String(error));
  let failed = false;
  const fail = (message) => failed || ((failed = true), send({ type: ERROR, message }));

  function bytesOf(name) {
    if (Object.hasOwn(sources, name)) return new TextEncoder().encode(sources[name]);
    if (files.has(name)) return files.get(name);
    throw new TypeError(`${name}: aquest fitxer no el conté`);
  }

  const importOriginal = self.importScripts.bind(self);
  const scriptURL = (bytes) => URL.createObjectURL(new Blob([bytes], { type: "text/javascript" }));
  const ownBlobsLoad = (() => {
    try {
      importOriginal(scriptURL(""));
      return true;
    } catch {
      return false;
    }
  })();
  function urlOf(name) {
    if (!ownBlobsLoad) {
      if (!pageScripts.has(name)) throw new TypeError(`${name}: aquest fitxer no el conté`);
      return pageScripts.get(name);
    }
    if (!ownScripts.has(name)) ownScripts.set(name, scriptURL(bytesOf(name)));
    return ownScripts.get(name);
  }
  self.importScripts = (...urls) => {
    const names = urls.map(nameOf);
    const resolved = names.map(urlOf);
    try {
      return importOriginal(...resolved);
    } catch (error) {
      // the error of a script that failed to load or threw as it ran, with the file's name
      throw new Error(`${names.join(", ")} no s'ha pogut executar al worker (${describe(error)})`);
    }
  };
  self.fetch = async (input) => {
    const name = nameOf(input && typeof input === "object" && "url" in input ? input.url : input);
    const type = name.endsWith(".wasm") ? "application/wasm" : name.endsWith(".json") ? "application/json" : "application/octet-stream";
    return new Response(bytesOf(name), { status: 200, headers: { "Content-Type": type } });
  };
  try {
    self.importScripts("protocol.js");
  } catch (error) {
    fail(error.message);
    throw error;
  }

  async function unpack({ name, text }) {
    // from the bytes, not through a Blob: WebKit cannot read a Blob in this worker either
    const stream = new Response(twDecode85(text)).body.pipeThrough(new DecompressionStream("gzip"));
    files.set(name, new Uint8Array(await new Response(stream).arrayBuffer()));
  }

  // worker.js sets self.onmessage: keep its handler and call it once the payloads are in
  let handler = null;
  Object.defineProperty(self, "onmessage", { configurable: true, get: () => handler, set: (fn) => (handler = fn) });
  const arrival = () => {
    /** @type {{resolve: (value?: any) => void, reject: (error: any) => void}} */
    let settle;
    const promise = new Promise((resolve, reject) => (settle = { resolve, reject }));
    return { promise, ...settle };
  };
  const filesIn = arrival();
  const scriptsIn = arrival();
  scriptsIn.promise.catch(() => {}); // not waited for where this worker's own blob: URLs load
  const unpacked = Promise.all([filesIn.promise, ownBlobsLoad || scriptsIn.promise]);
  let queue = Promise.resolve();
  // the first listener (worker.js's lock-down: no later one hears the page, none dispatched here counts)
  const stopHere = Event.prototype.stopImmediatePropagation;
  const { apply } = Reflect;
  self.addEventListener("message", (/** @type {MessageEvent} */ event) => {
    if (!event.isTrusted) return;
    apply(stopHere, event, []);
    const data = event.data;
    if (data && data.type === FILES) {
      send({ type: self.tw.protocol.PROGRESS, message: "Desempaquetant Python del fitxer…", fraction: 0.02 });
      filesIn.resolve(Promise.all(data.files.map(unpack)));
      return;
    }
    if (data && data.type === SCRIPTS) {
      if (data.error) scriptsIn.reject(new Error(data.error));
      else scriptsIn.resolve(Object.entries(data.scripts).forEach(([name, url]) => pageScripts.set(name, url)));
      return;
    }
    queue = queue.then(() => unpacked).then(
      () => handler && void handler(event),
      (error) => fail(`desempaquetant: ${describe(error)}`),
    );
  });
})();

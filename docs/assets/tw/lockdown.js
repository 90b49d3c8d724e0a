// Restrictions the Pyodide worker applies to itself (issue 15 §6), loaded by worker.js with
// importScripts once the runtime and numpy are in, before the widgets' code is installed.
// The page's CSP is a <meta> tag, which does not reach a worker; a host that sends headers
// gives the worker its own policy (_headers, nginx-headers.conf), but GitHub Pages cannot.
// So the worker narrows what its code can reach: network only to this site's origin (fetch,
// XMLHttpRequest, importScripts), no WebSocket, EventSource or nested workers, and no eval.
// WebAssembly compilation stays: Pyodide needs it. Each replacement is non-writable.
"use strict";

self.twLockDown = (origin) => {
  const sameOrigin = (url) => {
    try {
      return new URL(String(url), self.location.href).origin === origin;
    } catch {
      return false;
    }
  };
  const refuse = (what) => new TypeError(`${what}: només es permet l'origen del lloc (${origin})`);
  const fix = (target, name, value) =>
    Object.defineProperty(target, name, { value, writable: false, configurable: false, enumerable: false });

  const fetchOriginal = self.fetch.bind(self);
  fix(self, "fetch", (input, init) => {
    const url = input && typeof input === "object" && "url" in input ? input.url : input;
    return sameOrigin(url) ? fetchOriginal(input, init) : Promise.reject(refuse(String(url)));
  });
  const open = XMLHttpRequest.prototype.open;
  fix(XMLHttpRequest.prototype, "open", function (method, url, ...rest) {
    if (!sameOrigin(url)) throw refuse(String(url));
    return open.call(this, method, url, ...rest);
  });
  const importOriginal = self.importScripts.bind(self);
  fix(self, "importScripts", (...urls) => {
    const bad = urls.find((u) => !sameOrigin(u));
    if (bad !== undefined) throw refuse(String(bad));
    return importOriginal(...urls);
  });
  for (const name of ["WebSocket", "EventSource", "Worker", "SharedWorker", "WebTransport"]) {
    if (name in self) fix(self, name, undefined);
  }
  fix(self, "eval", () => {
    throw new EvalError("eval no està permès en aquest worker");
  });
};

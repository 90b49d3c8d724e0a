// @ts-check
// Restrictions the Pyodide worker applies to itself, loaded by worker.js with importScripts
// once the runtime and numpy are in, before the widgets' code is installed. From then on
// Python (the shipped widgets and a reader's edit in the «Codi» panel alike) reaches the
// browser only through this worker's global scope, so what is taken away here is gone for
// any Python code, whatever it imports:
// - network: fetch, XMLHttpRequest and importScripts only to this site's origin over http(s)
//   (no blob: or data: scripts); no WebSocket, EventSource, WebTransport or nested workers;
// - storage: no CacheStorage (the service worker's caches: an edit could plant a page there),
//   IndexedDB, StorageManager (origin-private files) or BroadcastChannel (other tabs);
// - code from strings: no eval, no Function constructors (plain, async, generator), no
//   setTimeout/setInterval with a string. WebAssembly compilation stays: Pyodide needs it;
// - the page: postMessage and close are taken away (worker.js keeps its own postMessage,
//   captured before any Python ran), so Python cannot forge the worker's messages or end it.
// The page's CSP is a <meta> tag, which does not reach a worker; a host that sends headers
// gives the worker its own policy too (_headers, nginx-headers.conf), but GitHub Pages cannot.
// A browser puts these properties on the global object or on its prototypes (Chromium keeps
// fetch and caches on WorkerGlobalScope.prototype): each is removed from every object of the
// chain, so no `Prototype.fetch.call(self, …)` reaches the original, and replaced on the
// global object by a non-writable, non-configurable value.
"use strict";

self.twLockDown = (origin) => {
  const allowed = (url) => {
    try {
      const u = new URL(String(url), self.location.href);
      return u.origin === origin && (u.protocol === "http:" || u.protocol === "https:");
    } catch {
      return false;
    }
  };
  const refuse = (what) => new TypeError(`${what}: només es permet l'origen del lloc (${origin})`);
  const noCode = (what) => () => {
    throw new EvalError(`${what} no està permès en aquest worker`);
  };

  const fix = (target, name, value) =>
    Object.defineProperty(target, name, { value, writable: false, configurable: false, enumerable: false });
  /** The global's (or navigator's) `name` is `value` and nothing else: removed from every
   *  prototype of the chain it lives on (not Object.prototype: nothing of ours lives there). */
  const fixGlobal = (target, name, value) => {
    for (let o = target; o && o !== Object.prototype; o = Object.getPrototypeOf(o)) {
      if (Object.prototype.hasOwnProperty.call(o, name) && !delete o[name]) throw new TypeError(`lockdown: ${name}`);
    }
    fix(target, name, value);
  };
  const remove = (target, name) => name in target && fixGlobal(target, name, undefined);

  const fetchOriginal = self.fetch.bind(self);
  fixGlobal(self, "fetch", (input, init) => {
    const url = input && typeof input === "object" && "url" in input ? input.url : input;
    return allowed(url) ? fetchOriginal(input, init) : Promise.reject(refuse(String(url)));
  });
  const open = XMLHttpRequest.prototype.open;
  fix(XMLHttpRequest.prototype, "open", function (method, url, ...rest) {
    if (!allowed(url)) throw refuse(String(url));
    return open.call(this, method, url, ...rest);
  });
  const importOriginal = self.importScripts.bind(self);
  fixGlobal(self, "importScripts", (...urls) => {
    const bad = urls.find((u) => !allowed(u));
    if (bad !== undefined) throw refuse(String(bad));
    return importOriginal(...urls);
  });
  for (const name of ["WebSocket", "EventSource", "Worker", "SharedWorker", "WebTransport",
    "caches", "indexedDB", "BroadcastChannel", "postMessage", "close"]) remove(self, name);
  for (const name of ["storage", "serviceWorker"]) remove(self.navigator, name);

  fixGlobal(self, "eval", noCode("eval"));
  // the constructors of every kind of function, also reachable as `(() => {}).constructor`;
  // each stand-in keeps its prototype, so `f instanceof Function` still holds
  const kinds = [function () {}, async function () {}, function* () {}, async function* () {}];
  for (const kind of kinds) {
    const proto = Object.getPrototypeOf(kind);
    const stub = noCode("Function");
    Object.defineProperty(stub, "prototype", { value: proto });
    fix(proto, "constructor", stub);
    if (proto === Function.prototype) fixGlobal(self, "Function", stub);
  }
  for (const name of ["setTimeout", "setInterval"]) {
    const timer = self[name].bind(self);
    fixGlobal(self, name, (handler, ...rest) => {
      if (typeof handler !== "function") throw new EvalError(`${name} amb text: no està permès en aquest worker`);
      return timer(handler, ...rest);
    });
  }
};

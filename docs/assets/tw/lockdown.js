// @ts-check
// The second wall around Python in the browser. The first is the browser's: kernel.js starts
// the Pyodide worker from a blob: URL, so the worker inherits the page's
// Content-Security-Policy (its <meta> tag, and the header where a host sends one):
// scripts and connections to this origin only, no code from text. This file is what the
// worker applies to itself once Pyodide and numpy are in, before any widget's code or a
// reader's edit (the «Codi» panel) runs; from then on Python reaches the browser only
// through this worker's global scope, and:
// - the global scope is an allow-list (KEEP): every other name the engine or a script put
//   there (storage of every kind, fonts, locks, devices, nested workers, channels to other
//   tabs, postMessage and close, Pyodide's own loaders) is removed from the global object
//   and from every prototype of its chain, and pinned as undefined, so no
//   `Prototype.name.call(self, …)` reaches the original either; the same for navigator;
// - fetch, XMLHttpRequest and importScripts reach this site's origin over http(s) only:
//   each URL is converted to text once, checked, and the checked text is what the browser
//   gets (an object that answers differently to a second conversion gains nothing); a
//   refusal is a SecurityError, not a TypeError, on which Pyodide's script loader would
//   fall back to import();
// - no code from text: no eval, no Function constructors (plain, async, generator), no
//   timers with a string, no new blob: URLs. WebAssembly compilation stays: Pyodide needs it.
// What this file relies on (URL's getters, Reflect.apply, Object.defineProperty) is taken
// before any Python runs: Python may replace the intrinsics later, not what was taken.
"use strict";

self.twLockDown = (origin, base = self.location.href) => {
  /** JavaScript's own globals, and the web platform's that Pyodide, numpy's loader, the
   *  widgets (accel/kernel.py, engine/on_miss.py) and worker.js use. */
  const KEEP = new Set([
    // ECMAScript
    "globalThis", "Infinity", "NaN", "undefined", "eval", "isFinite", "isNaN", "parseFloat", "parseInt",
    "decodeURI", "decodeURIComponent", "encodeURI", "encodeURIComponent", "escape", "unescape",
    "AggregateError", "Array", "ArrayBuffer", "Atomics", "BigInt", "BigInt64Array", "BigUint64Array", "Boolean",
    "DataView", "Date", "Error", "EvalError", "FinalizationRegistry", "Float16Array", "Float32Array", "Float64Array",
    "Function", "Int8Array", "Int16Array", "Int32Array", "Intl", "Iterator", "JSON", "Map", "Math", "Number",
    "Object", "Promise", "Proxy", "RangeError", "ReferenceError", "Reflect", "RegExp", "Set", "SharedArrayBuffer",
    "String", "Symbol", "SyntaxError", "TypeError", "Uint8Array", "Uint8ClampedArray", "Uint16Array", "Uint32Array",
    "URIError", "WeakMap", "WeakRef", "WeakSet", "SuppressedError", "DisposableStack", "AsyncDisposableStack",
    "WebAssembly", "console",
    // the worker's own scope
    "self", "location", "navigator", "origin", "isSecureContext", "crossOriginIsolated", "name", "constructor",
    "addEventListener", "removeEventListener", "dispatchEvent", "performance", "crypto",
    "setTimeout", "clearTimeout", "setInterval", "clearInterval", "queueMicrotask", "structuredClone",
    "atob", "btoa", "reportError", "importScripts", "fetch",
    // the interfaces of what it keeps
    "DedicatedWorkerGlobalScope", "WorkerGlobalScope", "EventTarget", "WorkerLocation", "WorkerNavigator",
    "Performance", "PerformanceEntry", "PerformanceMark", "PerformanceMeasure", "Crypto", "SubtleCrypto", "CryptoKey",
    "Event", "MessageEvent", "ErrorEvent", "PromiseRejectionEvent", "ProgressEvent", "CustomEvent", "DOMException",
    "MessageChannel", "MessagePort", "XMLHttpRequest", "XMLHttpRequestEventTarget", "XMLHttpRequestUpload",
    "Request", "Response", "Headers", "AbortController", "AbortSignal", "Blob", "File", "URL", "URLSearchParams",
    "TextEncoder", "TextDecoder", "TextEncoderStream", "TextDecoderStream", "CompressionStream", "DecompressionStream",
    "ReadableStream", "ReadableStreamDefaultReader", "ReadableStreamBYOBReader", "ReadableStreamDefaultController",
    "ReadableByteStreamController", "ReadableStreamBYOBRequest", "WritableStream", "WritableStreamDefaultWriter",
    "WritableStreamDefaultController", "TransformStream", "TransformStreamDefaultController",
    "ByteLengthQueuingStrategy", "CountQueuingStrategy",
  ]);
  /** What a script may read of navigator (Pyodide asks which engine it runs in). */
  const NAVIGATOR = new Set(["userAgent", "platform", "vendor", "language", "languages", "hardwareConcurrency",
    "onLine", "appName", "appVersion", "appCodeName", "product", "constructor"]);

  const { apply, getPrototypeOf, ownKeys } = Reflect;
  const { defineProperty, getOwnPropertyDescriptor, create, assign } = Object;
  /** A property descriptor with no prototype: a `get` Python put on Object.prototype is not read as one. */
  const field = (/** @type {PropertyDescriptor} */ fields) => /** @type {PropertyDescriptor} */ (assign(create(null), fields));
  const getter = (proto, name) => /** @type {PropertyDescriptor} */ (getOwnPropertyDescriptor(proto, name)).get;
  const hrefOf = getter(URL.prototype, "href");
  const originOf = getter(URL.prototype, "origin");
  const protocolOf = getter(URL.prototype, "protocol");
  const requestURL = getter(Request.prototype, "url");
  const ParsedURL = URL;
  const Refusal = DOMException;
  const text = String;

  /** `url` as text, once; that text if it names this origin over http(s), else a refusal. */
  const check = (url) => {
    const s = text(url);
    let u;
    try {
      u = new ParsedURL(s, base);
    } catch {
      throw new Refusal(`${s}: no és una adreça`, "SecurityError");
    }
    const protocol = apply(protocolOf, u, []);
    if (apply(originOf, u, []) !== origin || (protocol !== "http:" && protocol !== "https:")) {
      throw new Refusal(`${s}: només es permet l'origen del lloc (${origin})`, "SecurityError");
    }
    return apply(hrefOf, u, []);
  };
  const noCode = (what) => () => {
    throw new EvalError(`${what} no està permès en aquest worker`);
  };

  /** `target.name` is `value` and nothing else, for good (a non-configurable property keeps
   *  whether it is enumerable: a script's `var`, Pyodide's, cannot change that). */
  const pin = (target, name, value) => {
    const own = getOwnPropertyDescriptor(target, name);
    const enumerable = own !== undefined && !own.configurable && own.enumerable === true;
    defineProperty(target, name, field({ value, writable: false, configurable: false, enumerable }));
  };
  /** `name` gone from `target` and every prototype of its chain, then pinned on `target`. */
  const replace = (target, name, value) => {
    for (let o = target; o && o !== Object.prototype; o = getPrototypeOf(o)) {
      const own = getOwnPropertyDescriptor(o, name);
      if (!own) continue;
      if (own.configurable) delete o[name];
      else if (!own.writable && "value" in own && Object(own.value) !== own.value) return; // a constant (Chromium's TEMPORARY)
      else if (o !== target || !own.writable) throw new Refusal(`lockdown: ${text(name)}`, "SecurityError");
    }
    pin(target, name, value); // a writable, non-configurable var (Pyodide's) may still be pinned
  };
  /** Every string-named property of `target`'s chain not in `keep`, removed. */
  const allowOnly = (target, keep) => {
    const names = new Set();
    for (let o = target; o && o !== Object.prototype; o = getPrototypeOf(o)) {
      for (const name of ownKeys(o)) if (typeof name === "string" && !keep.has(name)) names.add(name);
    }
    for (const name of names) replace(target, name, undefined);
  };

  const fetchOriginal = self.fetch.bind(self);
  const open = XMLHttpRequest.prototype.open;
  const importOriginal = self.importScripts.bind(self);
  const timers = { setTimeout: self.setTimeout.bind(self), setInterval: self.setInterval.bind(self) };

  allowOnly(self, KEEP);
  allowOnly(self.navigator, NAVIGATOR);

  replace(self, "fetch", (input, init) => {
    let own = null; // a real Request's URL, read by the getter taken above (a fake one throws)
    try {
      own = apply(requestURL, input, []);
    } catch {}
    try {
      if (own !== null) return check(own), fetchOriginal(input, init);
      return fetchOriginal(check(input), init);
    } catch (refusal) {
      return Promise.reject(refusal);
    }
  });
  pin(XMLHttpRequest.prototype, "open", function (method, url, async, user, password) {
    const args = arguments.length > 2 ? [method, check(url), async, user, password] : [method, check(url)];
    return apply(open, this, args);
  });
  replace(self, "importScripts", (...urls) => {
    const checked = [];
    for (let i = 0; i < urls.length; i++) {
      defineProperty(checked, i, field({ value: check(urls[i]), writable: true, enumerable: true, configurable: true }));
    }
    return apply(importOriginal, self, checked);
  });
  pin(URL, "createObjectURL", undefined);

  replace(self, "eval", noCode("eval"));
  // the constructors of every kind of function, also reachable as `(() => {}).constructor`;
  // each stand-in keeps its prototype, so `f instanceof Function` still holds
  const kinds = [function () {}, async function () {}, function* () {}, async function* () {}];
  for (const kind of kinds) {
    const proto = getPrototypeOf(kind);
    const stub = noCode("Function");
    defineProperty(stub, "prototype", field({ value: proto }));
    pin(proto, "constructor", stub);
    if (proto === Function.prototype) replace(self, "Function", stub);
  }
  for (const name of ["setTimeout", "setInterval"]) {
    const timer = timers[name];
    replace(self, name, (handler, ...rest) => {
      if (typeof handler !== "function") throw new EvalError(`${name} amb text: no està permès en aquest worker`);
      return timer(handler, ...rest);
    });
  }
};

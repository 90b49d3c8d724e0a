// @ts-check
// The kernel: the one owner of the Pyodide worker, shared by every page of a visit.
// It knows the worker's URL, sends the init message (from the site config the build wrote,
// see build_hooks/runtime/bundle.py), turns each call into a promise, and reports the boot as
// events and one `ready` promise, so a page that subscribes late misses nothing.
//
// Loaded twice on widget pages (from <head>, where it starts Python while the page still
// parses, and with the site's scripts, for pages reached by instant navigation): the
// second copy does nothing. From <head> it also holds Material's search worker back until
// Python is ready or the reader opens search (deferSearch).
(() => {
  "use strict";
  const tw = (window.tw ||= /** @type {TW} */ ({}));
  if (tw.kernel) return;
  const P = tw.protocol;
  const HERE = /** @type {HTMLScriptElement} */ (document.currentScript).src || location.href; // assets/tw/kernel.js (inlined: no src)
  const ROOT = new URL("../../", HERE);
  // A boot this long is slow (a busy phone, a slow link: issue 44), not failed: a "slow" event
  // lets the page say so, and the widgets go live whenever Python arrives (only an error fails it)
  const SLOW_BOOT_MS = 30000;
  // Once booted, the worker answers a ping between any two of its tasks (a staged run and a
  // training run take turns; no stage lasts a second): one not answered in HANG_MS means
  // Python is stuck (a reader's edit that never ends) or gone, and the page says so
  const BEAT_MS = 1000;
  const HANG_MS = 10000;

  class BootError extends Error {
    constructor(kind, message) {
      super(message);
      this.kind = kind; // "boot" (Python could not load) | "stopped" (restart())
    }
  }

  class Kernel {
    /** @param {TWSiteConfig} config */
    constructor(config) {
      this.sha256 = identity(config);
      this.failure = null; // a BootError once booting failed
      this.loaded = false;
      this.slow = false; // the boot has taken SLOW_BOOT_MS and goes on
      this.warm = null; // once the worker's warm-up is over: {failed: [what did not load]}
      this.models = null; // once the model data is in, or could not be: {failed: null | why}
      this.modelsAsked = false; // LOAD_MODELS sent (loadModels)
      this.own = config.widgets || {}; // a calculator with a package of its own -> it (build_hooks/runtime/placement.py)
      this.widgetsIn = new Set(); // the calculators whose own package is in (WIDGETS)
      this.widgetsAsked = new Set(); // those asked for (loadWidgets; the first of the page comes with the boot)
      this.progress = { message: "", fraction: 0 }; // the latest boot progress
      this.listeners = new Set(); // (event: {type, ...}) => void
      this.pending = new Map(); // id -> {resolve, reject, onStep}
      this.nextId = 0;
      this.ready = new Promise((resolve, reject) => (this.settle = { resolve, reject }));
      this.ready.catch(() => {}); // callers that never wait are not an unhandled rejection
      this.tainted = false; // it has run a reader's edit, which may have changed any module's state
      this.hung = false; // a ping has gone unanswered for HANG_MS
      this.versions = config.versions || {}; // site path -> hash of its bytes (build_hooks/hosting/offline.py)
      // a single-file export (build_hooks/export/single_file.py) makes its worker from the bytes it carries
      this.blob = null; // the blob: URL its worker started from, revoked when it ends
      this.worker = tw.embedded ? tw.embedded.worker()
        : this.spawn(new URL(config.worker, ROOT));
      // offline.js: on a first visit, hold the messages (and so Pyodide's downloads) until the
      // service worker controls this page and the worker, so each file is fetched once
      const gate = (tw.offline && tw.offline.controlled) || null;
      if (gate) {
        const post = this.worker.postMessage.bind(this.worker);
        let queue = gate;
        this.worker.postMessage = (msg, transfer = []) => (queue = queue.then(() => post(msg, transfer)));
      }
      this.worker.onmessage = (event) => this.receive(event.data);
      this.worker.onerror = (event) => {
        event.preventDefault();
        // An uncaught error of a script from another origin (a blob: URL of a file:// page, in
        // WebKit) reaches the page as "Script error.", its cause hidden: the worker then posts
        // the cause itself (export_worker.js), so that message is waited for a moment first.
        const hidden = !event.message || /^(Uncaught )?Script error\.?$/.test(event.message);
        const failure = new BootError("boot", hidden ? "el worker s'ha aturat; el navegador no en diu la causa" : event.message);
        if (hidden) setTimeout(() => this.fail(failure), 1000);
        else this.fail(failure);
      };
      this.timer = setTimeout(() => {
        if (this.loaded || this.failure) return;
        this.slow = true;
        this.emit({ type: "slow" });
      }, SLOW_BOOT_MS);
      const runtime = new URL(config.runtime, ROOT);
      // the lock changes with every build: its query names this build's, past any HTTP cache
      const lock = new URL(config.lock, runtime);
      lock.searchParams.set("v", this.versions[config.runtime + config.lock] || config.sha256.slice(0, 16));
      this.toWorker({ type: P.INIT, indexURL: runtime.href, lockFileURL: lock.href,
                      package: config.package, entry: config.entry, models: config.models ? config.models.package : null,
                      needsModels: config.models ? config.models.needs : [], sources: config.sources || null,
                      widgets: this.own, page: config.page || [] });
    }

    /** Ask the worker for the model data now (once): a model widget is near the viewport, or
     *  the page is idle (host.js). An event "model-data" says when it is in. */
    loadModels() {
      if (this.modelsAsked) return;
      this.modelsAsked = true;
      this.toWorker({ type: P.LOAD_MODELS });
    }

    /** Whether widget `name` answers now that Python is in: its own package, if it has one, is in too. */
    answers(/** @type {string} */ name) {
      return !Object.hasOwn(this.own, name) || this.widgetsIn.has(name);
    }

    /** Ask the worker for these calculators' own packages (the page's others, once its first
     *  is live; a page reached by instant navigation). An event "widgets" says when they are
     *  in, or why not. Sent even for none: the worker's warm-up waits for the page's word. */
    loadWidgets(/** @type {string[]} */ names) {
      const wanted = names.filter((name) => !this.widgetsAsked.has(name) && !this.answers(name));
      wanted.forEach((name) => this.widgetsAsked.add(name));
      this.toWorker({ type: P.LOAD_WIDGETS, widgets: wanted });
    }

    /** A worker that runs `script`, started from a blob: URL: such a worker inherits this
     *  page's Content-Security-Policy (the <meta> tag csp.py writes, and the header of a host
     *  that sends one), so wherever the site is hosted the browser itself holds the worker to
     *  this origin, with no code from text (lockdown.js). A worker started from its script's
     *  own URL would get only the policy its response's headers carry: on a host that sends
     *  none (GitHub Pages, `python3 -m http.server`), none. The worker keeps the script's
     *  address, as `self.twScript`, to find its neighbours. */
    spawn(/** @type {URL} */ script) {
      const code = `self.twScript = ${JSON.stringify(script.href)};\nimportScripts(${JSON.stringify(script.href)});\n`;
      this.blob = URL.createObjectURL(new Blob([code], { type: "text/javascript" }));
      return new Worker(this.blob);
    }

    /** After the boot: a ping per BEAT_MS, and "hung" / "alive" events as the worker stops or
     *  resumes answering. */
    beat() {
      let sent = null; // when the unanswered ping went out
      this.pong = () => {
        sent = null;
        if (this.hung) {
          this.hung = false;
          this.emit({ type: "alive" });
        }
      };
      this.beating = setInterval(() => {
        if (sent === null) {
          sent = performance.now();
          this.toWorker({ type: P.PING });
        } else if (!this.hung && performance.now() - sent > HANG_MS) {
          this.hung = true;
          this.emit({ type: "hung" });
        }
      }, BEAT_MS);
    }

    /** Boot events: {type: "progress", message, fraction} | {type: "slow"} (still booting after
     *  SLOW_BOOT_MS) | {type: "loaded"} | {type: "error", error}
     *  | {type: "warm", failed} (the worker's warm-up is over: a first change pays nothing
     *  more) | {type: "model-data", failed} (the model data is in: failed null; or why not)
     *  | {type: "widgets", widgets, failed} (these calculators' own packages are in, or why not)
     *  | {type: "hung"} | {type: "alive"}
     *  (the worker stopped, then resumed, answering pings). */
    on(listener) {
      this.listeners.add(listener);
      return () => this.listeners.delete(listener);
    }

    emit(event) {
      this.listeners.forEach((listener) => listener(event));
    }

    /** A message to the worker (protocol.py: TWToWorker). */
    toWorker(/** @type {TWToWorker} */ msg, /** @type {Transferable[]} */ transfer = []) {
      this.worker.postMessage(msg, transfer);
    }

    /** One call to Python: a promise of its reply; `onStep` sees a long call's progress.
     *  @template {keyof TWCalls} K
     *  @param {K} type
     *  @param {TWCalls[K]["payload"]} payload
     *  @param {((data: TWCalls[K]["partial"]) => void) | null} [onStep]
     *  @returns {Promise<TWCalls[K]["data"]> & {cancel?: () => void}} */
    call(type, payload, onStep = null) {
      const id = ++this.nextId;
      /** @type {Promise<any> & {cancel?: () => void}} */
      const promise = new Promise((resolve, reject) => {
        if (this.failure) return reject(this.failure);
        this.pending.set(id, { resolve, reject, onStep });
        this.toWorker({ type, id, payload });
      });
      promise.cancel = () => this.pending.has(id) && this.toWorker({ type: P.CANCEL, id });
      return promise;
    }

    receive(/** @type {TWFromWorker} */ msg) {
      if (msg.type === P.PROGRESS) {
        this.progress = { message: msg.message, fraction: msg.fraction };
        this.emit({ type: "progress", ...this.progress });
      } else if (msg.type === P.LOADED) {
        this.loaded = true;
        clearTimeout(this.timer);
        this.settle.resolve(this);
        this.beat();
        this.emit({ type: "loaded" });
      } else if (msg.type === P.WARM) {
        this.warm = { failed: msg.failed };
        this.emit({ type: "warm", ...this.warm });
      } else if (msg.type === P.MODELS) {
        this.models = { failed: msg.failed };
        this.emit({ type: "model-data", ...this.models });
      } else if (msg.type === P.WIDGETS) {
        msg.widgets.forEach((name) => (msg.failed ? this.widgetsAsked.delete(name) : this.widgetsIn.add(name)));
        this.emit({ type: "widgets", widgets: msg.widgets, failed: msg.failed });
      } else if (msg.type === P.ERROR) {
        this.fail(new BootError("boot", msg.message));
      } else if (msg.type === P.PONG) {
        if (this.pong) this.pong();
      } else if (msg.type === P.STEP) {
        const call = this.pending.get(msg.id);
        if (call && call.onStep) call.onStep(msg.data);
      } else if (msg.type === P.REPLY) {
        const call = this.pending.get(msg.id);
        if (!call) return;
        this.pending.delete(msg.id);
        if (msg.ok === true) call.resolve(msg.data);
        else call.reject(new Error(msg.error));
      }
    }

    fail(error) {
      if (this.failure) return;
      this.failure = error;
      clearTimeout(this.timer);
      clearInterval(this.beating);
      this.worker.terminate();
      if (this.blob) URL.revokeObjectURL(this.blob);
      this.pending.forEach((call) => call.reject(error));
      this.pending.clear();
      this.settle.reject(error);
      this.emit({ type: "error", error });
    }

    terminate() {
      this.fail(new BootError("boot", "replaced"));
    }
  }

  let current = null;

  /** What tells one build's kernel from another's: its wheels' sha256. */
  const identity = (/** @type {TWSiteConfig} */ config) => config.sha256 + (config.models ? config.models.sha256 : "");

  /** The visit's kernel for this site config: the running one if it serves the same bundle. */
  /** @param {TWSiteConfig} config */
  function get(config) {
    if (current && current.sha256 === identity(config) && !current.failure) return current;
    if (current) current.terminate();
    current = new Kernel(config);
    return current;
  }

  /** Stop whatever Python is doing (a long-running edit): a fresh worker for the same bundle. */
  /** @param {TWSiteConfig} config */
  function restart(config) {
    const stopped = current;
    current = null;
    const fresh = get(config);
    if (stopped) stopped.fail(new BootError("stopped", "aturat"));
    return fresh;
  }

  /** A worker that ran a reader's edit, ended (the reader left its page for one without widgets). */
  function retireTainted() {
    if (!current || !current.tainted) return;
    current.terminate();
    current = null;
  }

  const supported = () => (location.protocol !== "file:" || Boolean(tw.embedded)) && typeof Worker !== "undefined" && typeof WebAssembly !== "undefined";
  tw.kernel = { get, restart, retireTainted, supported, BootError };

  /** A worker started only once `until` settles: until then its messages wait, in order.
   *  Material's search worker builds its index as the page loads (about 0.6 s of CPU); on a
   *  widget page that is a core taken from Python's boot (two cores here), for a search box
   *  the reader has not opened yet. */
  class DeferredWorker extends EventTarget {
    constructor(start, until) {
      super();
      this.onmessage = this.onerror = null;
      this.queue = [];
      until.then(() => {
        if (!this.queue) return; // terminated meanwhile
        this.worker = start();
        for (const type of ["message", "messageerror", "error"]) {
          this.worker.addEventListener(type, (event) => {
            const copy = type === "error" ? new Event("error") : new MessageEvent(type, { data: event.data });
            this.dispatchEvent(copy);
            if (type !== "messageerror" && this[`on${type}`]) this[`on${type}`](copy);
          });
        }
        this.queue.forEach((args) => this.worker.postMessage(...args));
        this.queue = [];
      });
    }

    postMessage(...args) {
      if (this.worker) this.worker.postMessage(...args);
      else if (this.queue) this.queue.push(args);
    }

    terminate() {
      if (this.worker) this.worker.terminate();
      this.queue = null;
    }
  }

  /** Material's search waits for Python (ready or failed), or for the reader to open search:
   *  its worker, and the download of its index (search_index.json, ~90 KB on the wire, which
   *  Material asks for with an XMLHttpRequest as the page loads, sharing a phone's link with
   *  Python's boot: issue 44). A request held is sent as it was made, once `until` settles. */
  function deferSearch(ready) {
    const Prior = window.Worker;
    const opened = new Promise((resolve) =>
      document.addEventListener("focusin", (e) => e.target instanceof Element && e.target.closest(".md-search") && resolve(), true));
    const until = Promise.race([ready.catch(() => {}), opened]);
    window.Worker = new Proxy(Prior, {
      construct(target, /** @type {[string | URL, WorkerOptions?]} */ args, newTarget) {
        if (/\/workers\/search\.[^/]*\.js/.test(String(args[0]))) return new DeferredWorker(() => new Prior(...args), until);
        return Reflect.construct(target, args, newTarget === window.Worker ? target : newTarget);
      },
    });
    const XHR = XMLHttpRequest.prototype;
    const { open, send, abort } = XHR;
    const { apply } = Reflect;
    const held = new WeakMap(); // a request for the index -> "opened" | "aborted"
    let released = false;
    until.then(() => (released = true));
    XHR.open = /** @type {typeof open} */ (function (/** @type {string} */ method, /** @type {string | URL} */ url, ...rest) {
      if (/\/search\/search_index\.json$/.test(new URL(String(url), location.href).pathname)) held.set(this, "opened");
      else held.delete(this);
      return apply(open, this, [method, url, ...rest]);
    });
    XHR.send = function (...args) {
      if (released || held.get(this) !== "opened") return apply(send, this, args);
      until.then(() => held.get(this) === "opened" && apply(send, this, args));
    };
    XHR.abort = function () {
      if (held.has(this)) held.set(this, "aborted");
      return apply(abort, this, []);
    };
  }

  // From <head> on a widget page (the build adds data-config): boot now, while the page parses.
  const config = document.currentScript.dataset[P.DOM.DATA.CONFIG];
  if (config && supported()) deferSearch(get(JSON.parse(config)).ready);
})();

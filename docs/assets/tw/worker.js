// @ts-check
// Web Worker: boots Pyodide with the site's widgets_py code package (Pyodide's own package
// loader fetches it and numpy, its dependency, while Pyodide boots, and checks both against
// the sha256 of the site's pyodide-lock.json), and answers calls. The model data (the
// mini-GPTs' weights, the corpus, the WebAssembly kernel, and the code only its widgets run: a
// package apart, bundle.py) comes later, the same way: when the page asks (LOAD_MODELS) or a
// call that needs it comes first (`needsModels`), which waits for it. Each calculator's own
// package (what it alone imports: build_hooks/runtime/placement.py) comes with the boot for
// the page's first, when the page asks for the others (LOAD_WIDGETS: once its first is live),
// or before a call that names one; the page hears when (WIDGETS). The source of the
// modules shipped as bytecode, with the code that reads or checks a reader's code, comes later
// too, before the first call that needs it (a module's source for the «Codi» panel, an edit,
// an exercise): no widget reads it to answer. The protocol is protocol.js.
//
// It runs in a worker that kernel.js starts from a blob: URL (so the page's policy holds it:
// lockdown.js says why), which imports this file by its address, `self.twScript`; the single
// file (export_worker.js) runs it from memory instead. Everything here is in one closure:
// nothing a script of the worker's global scope could reach, once Python runs, of `send` or
// of the calls.
"use strict";
(() => {
// the scripts it imports, at the versions its URL names (kernel.js: the same build's)
const HERE = self.twScript || self.location.href;
const VERSIONS = new URL(HERE).searchParams;
const script = (name) => {
  const file = VERSIONS.has(name) ? `${name}.js?v=${VERSIONS.get(name)}` : `${name}.js`;
  return self.twScript ? new URL(file, HERE).href : file; // the single file finds scripts by name
};
importScripts(script("protocol"));

const P = self.tw.protocol;
const { STEPS_PER_TURN, PARTIAL_MS, SHOW_MS } = P; // how often it shows and yields (protocol.py SCHEDULE)
/** @type {(message: TWFromWorker) => void} */
const send = self.postMessage.bind(self); // lockdown.js takes self.postMessage from Python: this is ours
// what this file calls on each message, taken before Python runs (Python may replace the
// intrinsics: it could then see the calls' parameters, or keep other listeners from being cut off)
const { parse, stringify } = JSON;
const { apply } = Reflect;
const stopHere = Event.prototype.stopImmediatePropagation;
const progress = (message, fraction) => send({ type: P.PROGRESS, message, fraction });
const cancelled = new Set(); // ids of long calls asked to stop
let entry = null; // the package's browser entry module (Run, fixed, source, render_edited, Trainer, exercise, check_exercise)
let load = null; // (package name) => a promise that it is installed, checked against the lock
let modelsPackage = null; // the model data's package, as the lock names it (null: the site has none)
/** @type {Set<string>} */
let needsModels = new Set(); // the widgets and exercises whose calls wait for it
/** @type {Map<string, string>} */
let ownPackages = new Map(); // a calculator (or an exercise that drives one) -> its own package
/** @type {Map<string, Promise<void>>} */
const installing = new Map(); // a calculator's own package -> a promise that it is installed
let models = null; // once asked for: a promise that the model data is installed (loadModels)
let sourcesPackage = null; // the compiled modules' source, as the lock names it (null: in the code's wheel)
let sources = null; // once asked for: a promise that it is installed (loadSources)
let warming = null; // the warm-up so far: a promise of what failed in it
/** @type {() => void} */
let othersIn = () => {}; // the page's other calculators are in, or could not be: the warm-up may begin
const others = new Promise((resolve) => (othersIn = () => resolve(undefined)));

async function boot({ indexURL, lockFileURL, package: name, entry: module, models: data, needsModels: needing, sources: source,
                      widgets, page }) {
  progress("Carregant l'intèrpret de Python…", 0.05);
  importScripts(indexURL + "pyodide.js");
  // `packages`: Pyodide fetches the code's package, numpy and the page's first calculator's own
  // while it boots, not after; a failure there is silent (it goes to stderr), so `load` and
  // `install` below ask again and report it
  ownPackages = new Map(Object.entries(widgets || {}));
  const calculators = (page || []).filter((widget) => ownPackages.has(widget)); // those with a package of their own
  const first = calculators.slice(0, 1).map((widget) => /** @type {string} */ (ownPackages.get(widget)));
  const booting = self.loadPyodide({ indexURL, lockFileURL, packages: [name, ...first], stdout: () => {}, stderr: () => {} });
  booting.catch(() => {}); // awaited below: no "unhandled" report while lockdown.js loads
  // lockdown.js comes while Pyodide downloads, not after: a task later, every fetch Pyodide's
  // boot makes is under way (importScripts holds this thread until the script is in)
  await turn();
  importScripts(script("lockdown"));
  const lockDown = self.twLockDown;
  const py = await booting;
  load = async (/** @type {string | string[]} */ what) => {
    const failures = [];
    await py.loadPackage(what, { messageCallback: () => {}, errorCallback: (m) => failures.push(m) });
    const why = failures.filter((m) => !m.trim().endsWith(":")); // drop Pyodide's "…while loading X:" headers
    if (failures.length) throw new Error(`${what}: ${why.join("; ")}${await cause(lockFileURL)}`);
  };
  modelsPackage = data || null;
  needsModels = new Set(needing || []);
  sourcesPackage = source || null;
  progress("Carregant numpy i els widgets…", 0.6);
  await load(name);
  // the single file answers every fetch from memory, from an origin (file:, "null") that the
  // lock-down refuses: the model data and the sources it carries are installed now, before it
  // (no download; it ships no bytecode: its code is the sources)
  const carried = !self.twScript && modelsPackage !== null;
  if (carried) await load(modelsPackage);
  if (!self.twScript) await install([...ownPackages.keys()]);
  if (!self.twScript) await loadSources();
  const ready = self.twScript ? calculators.slice(0, 1) : calculators; // their own packages are in (or were asked for)
  lockDown(self.location.origin, HERE); // from here on: this origin only, no eval, no storage (lockdown.js
  // says why); relative URLs: from this file's address
  entry = py.pyimport(module);
  entry.prepare(indexURL); // numpy: "ready" means a change is answered without waiting for it; an
  // import the trimmed runtime left out is fetched from indexURL when first needed (on_miss.py)
  // the first calculator's own package came with the boot: confirmed (no download), and the
  // page told before it hears Python is in, so that widget goes live with it
  await prepareWidgets(ready).catch(() => {});
  progress("A punt.", 1);
  send({ type: P.LOADED });
  // not awaited: calls are answered from now on. The page asks for its other calculators'
  // packages once its first is live (LOAD_WIDGETS, sent for none too: their downloads do not
  // delay it); the warm-up waits for them, and the page hears when it is over (WARM), unless
  // the model data was asked for meanwhile: then after that data's own warm-up (loadModels)
  if (calculators.length === ready.length) othersIn();
  warming = others.then(() => warmUp(false));
  warming.then((failed) => models || send({ type: P.WARM, failed }));
  if (carried) loadModels(true);
}

/** The model data, fetched and installed once (LOAD_MODELS, or the first call that needs it;
 *  `installed`: it is in already); the page hears when it is in (MODELS), and the warm-up of
 *  what reads it follows. */
function loadModels(installed = false) {
  if (models) return models;
  models = modelsPackage && !installed ? load(modelsPackage).then(() => entry.installed()) : Promise.resolve();
  models.then(() => send({ type: P.MODELS, failed: null }), (error) => send({ type: P.MODELS, failed: lastLine(error) }));
  const before = warming;
  warming = Promise.all([before, models]).then(
    async ([failed]) => [...failed, ...(await warmUp(true))],
    async (error) => [...(await before), lastLine(error)], // it names the package
  );
  warming.then((failed) => send({ type: P.WARM, failed }));
  return models;
}

/** The own packages of `names` (calculators, or exercises that drive one: `ownPackages`),
 *  installed once, in one loadPackage (its downloads go in parallel); a failure is that of the
 *  calls that wait for it, and the next asks again. */
function install(/** @type {string[]} */ names) {
  const keys = [...new Set(names.filter((n) => ownPackages.has(n)).map((n) => /** @type {string} */ (ownPackages.get(n))))];
  const fresh = keys.filter((key) => !installing.has(key));
  if (fresh.length) {
    const done = load(fresh).then(() => entry && entry.installed());
    fresh.forEach((key) => installing.set(key, done));
    done.catch(() => fresh.forEach((key) => installing.delete(key)));
  }
  return Promise.all(keys.map((key) => installing.get(key))).then(() => {});
}

/** install(), and the page told which widgets answer now, or why they cannot (WIDGETS). */
function prepareWidgets(/** @type {string[]} */ names) {
  if (!names.length) return Promise.resolve();
  const done = install(names);
  done.then(() => send({ type: P.WIDGETS, widgets: names, failed: null }),
            (error) => send({ type: P.WIDGETS, widgets: names, failed: lastLine(error) }));
  return done;
}

/** The source of the modules shipped as bytecode, fetched and installed beside it once
 *  (the first call that reads it waits for it); a failure is that call's, and the next tries again. */
function loadSources() {
  if (!sources) sources = sourcesPackage ? load(sourcesPackage).then(() => entry && entry.installed()) : Promise.resolve();
  sources.catch(() => (sources = null));
  return sources;
}

/** What Python does while the reader reads (browser.WarmUp says what, in which order), a
 *  task per turn: calls go in between. `withModels`: the part that reads the model data (it
 *  is in), else the rest. What failed: nothing, unless something is broken. */
async function warmUp(withModels) {
  const warm = entry.WarmUp(withModels);
  try {
    for (;;) {
      await turn();
      const task = /** @type {TWWarmTask | TWWarmDone} */ (parse(warm.advance()));
      if (task.done === true) return task.failed;
    }
  } finally {
    warm.destroy();
  }
}

// the calls of a widget or an exercise that may need the model data's package: it is loaded
// first if that one does (`needsModels`: a model widget, an exercise that drives one)
/** @type {Set<string>} */
const NEEDS_MODELS = new Set([P.CALLS.RUN, P.CALLS.FIXED, P.CALLS.TRAIN, P.CALLS.EDITED, P.CALLS.SOURCE, P.CALLS.CHECK]);
// the calls that need the sources' package: the shipped modules' source (the code panel's,
// and a check: an exercise that drives a widget answers with that widget's module, the
// reader's function in it), and the code of edits and exercises (bundle.py)
/** @type {Set<string>} */
const NEEDS_SOURCES = new Set([P.CALLS.SOURCE, P.CALLS.EDITED, P.CALLS.EXERCISE, P.CALLS.CHECK]);

/** Why the packages did not load: the network, or their bytes (Pyodide checks each against
 *  the sha256 of the site's lock, and says only "failed" either way). A HEAD request, which
 *  the service worker leaves to the network, tells which. */
async function cause(lockFileURL) {
  if (!self.twScript) return ""; // the single file reads its own bytes: no network
  try {
    await fetch(new URL(".", lockFileURL), { method: "HEAD", cache: "no-store" });
  } catch {
    return "; el servidor del lloc no respon: comprova la connexió i recarrega la pàgina";
  }
  return "; Pyodide hi exigeix el sha256 que fixa el lock del lloc";
}

function lastLine(error) {
  const lines = String(error && error.message ? error.message : error).trim().split("\n");
  return lines[lines.length - 1];
}

// Let the messages already queued (calls, cancels) in before going on. A message to ourselves,
// not setTimeout(0): chained timeouts are clamped to 4 ms from the fifth on, and a training
// run or a staged compute takes a turn every step.
const turns = new MessageChannel();
const waiting = [];
turns.port1.onmessage = () => waiting.shift()();
const turn = () => new Promise((resolve) => {
  waiting.push(resolve);
  turns.port2.postMessage(null);
});

/** @type {{[call: string]: (payload: any, id: number) => any}} each typed as protocol.py's TWCalls */
const CALLS = {
  // a stage at a time: partials go out as steps (at most one per PARTIAL_MS: each re-renders
  // the widget on the page, whose main thread competes with this worker for the machine's
  // cores); between stages other calls run, and a run the page has cancelled (a newer change
  // of the same widget) stops
  [P.CALLS.RUN]: async (/** @type {TWRunPayload} */ { widget, params, layout = P.LAYOUT }, /** @type {number} */ id) => {
    const run = entry.Run(widget, stringify(params), layout);
    let shown = -Infinity;
    try {
      for (;;) {
        const data = parse(run.advance());
        if (!data.partial) return data;
        if (performance.now() - shown >= PARTIAL_MS) {
          send({ type: P.STEP, id, data });
          shown = performance.now();
        }
        await turn(); // let other calls and cancels in
        if (cancelled.has(id)) return { cancelled: true };
      }
    } finally {
      cancelled.delete(id);
      run.destroy();
    }
  },
  [P.CALLS.FIXED]: (/** @type {TWFixedPayload} */ { widget, params }) => parse(entry.fixed(widget, stringify(params))),
  [P.CALLS.SOURCE]: (/** @type {TWSourcePayload} */ { widget }) => parse(entry.source(widget)),
  [P.CALLS.EDITED]: (/** @type {TWEditedPayload} */ { widget, key, code, params, layout = P.LAYOUT }) =>
    parse(entry.render_edited(widget, key, code, stringify(params), layout)),
  // an exercise's hints (and solution, once tried); a check of the reader's answer, whose own
  // lines stop after a time limit (exercise.py); a loop inside one C call may never end: the page
  // restarts the worker then (exercise.js), this cannot stop it
  [P.CALLS.EXERCISE]: (/** @type {TWExercisePayload} */ { exercise, attempted }) => parse(entry.exercise(exercise, attempted)),
  [P.CALLS.CHECK]: (/** @type {TWCheckPayload} */ { exercise, code }, /** @type {number} */ id) => {
    send({ type: P.STEP, id, data: { started: true } }); // the page's time limit starts now
    return parse(entry.check_exercise(exercise, code));
  },
  // a few steps per turn, so that cancels and widget runs wait little; the curve is drawn
  // and shown at most every SHOW_MS: each update re-renders the figure on the page, whose
  // main thread then competes with this worker for the machine's cores (benchmarks/training.py
  // times the whole run)
  [P.CALLS.TRAIN]: async (/** @type {TWRunPayload} */ { widget, params, layout = P.LAYOUT }, /** @type {number} */ id) => {
    const trainer = entry.Trainer(widget, stringify(params), layout);
    let shown = -Infinity;
    try {
      for (;;) {
        const draw = performance.now() - shown >= SHOW_MS;
        const data = parse(trainer.advance(STEPS_PER_TURN, draw));
        if (data.done) return data;
        if (draw) {
          send({ type: P.STEP, id, data });
          shown = performance.now();
        }
        await turn(); // let cancels and widget runs in
        if (cancelled.has(id)) return { cancelled: true };
      }
    } finally {
      cancelled.delete(id);
      trainer.destroy();
    }
  },
};

let booted = null;

// The first listener of the worker's messages (the page's): no listener added later (Python's,
// say) hears them, and none a script dispatches itself is taken for the page's.
self.onmessage = async (/** @type {MessageEvent<TWToWorker>} */ event) => {
  if (!event.isTrusted) return;
  apply(stopHere, event, []);
  const { data: msg } = event;
  if (msg.type === P.PING) {
    send({ type: P.PONG });
  } else if (msg.type === P.INIT) {
    booted = boot(msg).then(
      () => true,
      (error) => {
        send({ type: P.ERROR, message: lastLine(error) });
        return false;
      },
    );
  } else if (msg.type === P.CANCEL) {
    cancelled.add(msg.id);
  } else if (msg.type === P.LOAD_MODELS) {
    if (await booted) loadModels().catch(() => {}); // the page hears how it went (MODELS)
  } else if (msg.type === P.LOAD_WIDGETS) {
    if (await booted) prepareWidgets(msg.widgets).then(othersIn, othersIn); // the page hears how it went (WIDGETS)
  } else if (msg.type in CALLS && "payload" in msg) {
    if (!(await booted)) return; // the failure was already reported as an error event
    try {
      const { widget, exercise } = /** @type {{widget?: string, exercise?: string}} */ (msg.payload);
      const name = widget ?? exercise ?? "";
      if (ownPackages.has(name)) await install([name]);
      if (NEEDS_MODELS.has(msg.type) && needsModels.has(name)) await loadModels();
      if (NEEDS_SOURCES.has(msg.type)) await loadSources();
      send({ type: P.REPLY, id: msg.id, ok: true, data: await CALLS[msg.type](msg.payload, msg.id) });
    } catch (error) {
      send({ type: P.REPLY, id: msg.id, ok: false, error: lastLine(error) });
    }
  }
};
})();

// Thin host for the page's widgets: reads controls, posts runs to one Pyodide worker,
// swaps figure, values and live numbers into the DOM, shows progress and errors.
// No figure logic lives here: every number and SVG comes from widgets_py.
//
// One worker serves every page of a visit: with Material's instant navigation the page
// is swapped without reloading scripts, `start` runs again for the new widgets, and
// Python stays warm. A widget's parameters can travel in the URL (?INSTANCE=k:v,k:v),
// validated here against the page's own controls before any of them is used.
(() => {
  "use strict";

  const ROOT = new URL("../../", document.currentScript.src); // this file is assets/tw/host.js
  const BOOT_TIMEOUT_MS = 120000;
  const TEXT = {
    loading: "Carregant Python al navegador…",
    ready: "Interactiu: cada canvi es calcula amb Python al teu navegador.",
    bootFailed: (why) => `No s'ha pogut carregar Python (${why}). La figura és la calculada en construir la pàgina.`,
    timeout: "Python triga massa a carregar. La figura és la calculada en construir la pàgina.",
    runFailed: (why) => `Error de Python: ${why}. Es manté la figura anterior.`,
    file: "Pàgina oberta des del disc: la figura és la precalculada. Per fer-la interactiva, serveix la carpeta del lloc (vegeu el README).",
    unsupported: "Aquest navegador no pot executar Python (cal WebAssembly i Web Workers). La figura és la precalculada.",
    trainDone: (status) => `Entrenat al navegador: ${status}. Els widgets ja fan servir els pesos nous.`,
    trainCancelled: "Entrenament aturat; es mantenen els pesos d'abans.",
    trainFailed: (why) => `L'entrenament ha fallat: ${why}.`,
    copy: "Copia l'enllaç",
    copied: "Enllaç copiat",
    copyShown: "Copia aquest enllaç:",
    urlNote: (notes) => `Paràmetres de l'enllaç: ${notes.join("; ")}.`,
    clamped: (name, from, to) => `${name} ${from} → ${to} (fora del rang permès)`,
    dropped: (name) => `${name} descartat (no és vàlid aquí)`,
  };

  const part = (w, sel) => w.querySelector(sel);
  const controlsOf = (w) => [...w.querySelectorAll(".tw-controls [name]")];

  function setState(w, state, message, enabled = state === "ready") {
    w.dataset.state = state;
    part(w, ".tw-status").textContent = message;
    part(w, ".tw-progress").hidden = state !== "loading";
    controlsOf(w).forEach((el) => (el.disabled = !enabled));
    const copy = part(w, ".tw-copy");
    if (copy) copy.disabled = !enabled;
  }

  function readParams(w) {
    const params = {};
    controlsOf(w).forEach((el) => {
      if (el.type === "checkbox") params[el.name] = el.checked;
      else if (el.type === "hidden") params[el.name] = JSON.parse(el.dataset.json); // fixed by the page
      else if (el.type === "range") params[el.name] = JSON.parse(el.dataset.positions)[Number(el.value)];
      else params[el.name] = el.value;
    });
    return params;
  }

  function showSlider(el) {
    const label = JSON.parse(el.dataset.labels)[Number(el.value)];
    const out = el.closest(".tw-control").querySelector("output");
    if (out) out.textContent = label;
    el.setAttribute("aria-valuetext", label);
  }

  function apply(w, data) {
    w.dataset.values = JSON.stringify(data.values); // raw numbers, for tests and the curious
    part(w, ".tw-figure").innerHTML = data.figure;
    w.querySelectorAll(".tw-values [data-value]").forEach((row) => {
      row.querySelector("dd").textContent = data.text[row.dataset.value];
    });
    const tables = part(w, ".tw-tables");
    if (tables) tables.innerHTML = data.tables;
    const prefix = w.dataset.instance + ".";
    document.querySelectorAll(".tw-live").forEach((span) => {
      if (span.dataset.live.startsWith(prefix)) span.textContent = data.text[span.dataset.live.slice(prefix.length)];
    });
  }

  // ---- shareable state -----------------------------------------------------------------

  function linkFor(w) {
    const params = readParams(w);
    const fixed = new Set(controlsOf(w).filter((el) => el.type === "hidden").map((el) => el.name));
    const pairs = Object.entries(params).filter(([k]) => !fixed.has(k)).map(([k, v]) => `${k}:${encodeURIComponent(v)}`);
    const url = new URL(location.href);
    url.search = `?${encodeURIComponent(w.dataset.instance)}=${pairs.join(",")}`; // readable: ?roofline=batch:8,…
    url.hash = w.id;
    return url.href;
  }

  /** Put the URL's values for this widget into its controls; returns notes on what changed. */
  function applyUrlState(w) {
    const raw = new URLSearchParams(location.search).get(w.dataset.instance);
    if (raw === null) return null;
    const notes = [];
    for (const pair of raw.split(",").filter(Boolean)) {
      const cut = pair.indexOf(":");
      const name = cut > 0 ? pair.slice(0, cut) : pair;
      let value;
      try {
        value = decodeURIComponent(cut > 0 ? pair.slice(cut + 1) : "");
      } catch {
        value = "";
      }
      const el = controlsOf(w).find((c) => c.name === name && c.type !== "hidden");
      if (!el) {
        notes.push(TEXT.dropped(name));
      } else if (el.tagName === "SELECT") {
        if ([...el.options].some((o) => o.value === value)) el.value = value;
        else notes.push(TEXT.dropped(name));
      } else if (el.type === "checkbox") {
        if (value === "true" || value === "false") el.checked = value === "true";
        else notes.push(TEXT.dropped(name));
      } else {
        const number = Number(value);
        if (value === "" || !Number.isFinite(number)) {
          notes.push(TEXT.dropped(name));
          continue;
        }
        const positions = JSON.parse(el.dataset.positions);
        let best = 0;
        positions.forEach((p, i) => Math.abs(p - number) < Math.abs(positions[best] - number) && (best = i));
        el.value = String(best);
        showSlider(el);
        if (positions[best] !== number) notes.push(TEXT.clamped(name, value, JSON.parse(el.dataset.labels)[best]));
      }
    }
    if (notes.length) {
      const note = document.createElement("p");
      note.className = "tw-urlnote";
      note.setAttribute("role", "note");
      note.textContent = TEXT.urlNote(notes);
      part(w, ".tw-head").after(note);
    }
    return notes;
  }

  function addCopyButton(w) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "tw-copy";
    button.textContent = TEXT.copy;
    button.disabled = true;
    button.addEventListener("click", async () => {
      const url = linkFor(w);
      w.dataset.link = url;
      try {
        await navigator.clipboard.writeText(url);
        button.textContent = TEXT.copied;
        setTimeout(() => (button.textContent = TEXT.copy), 2000);
      } catch {
        window.prompt(TEXT.copyShown, url); // no clipboard (insecure origin): show it to copy by hand
      }
    });
    part(w, ".tw-controls").append(button);
  }

  // ---- the worker, shared by every page of the visit ------------------------------------

  let runtime = null; // {worker, bundle, loaded, failure, pending: Map(id -> widget), nextId}
  let page = null; // {widgets, lane: Map(widget -> {busy, next}), trainer}

  function send(w, params) {
    const id = ++runtime.nextId;
    runtime.pending.set(id, w);
    page.lane.get(w).busy = true;
    w.dataset.busy = "true";
    runtime.worker.postMessage({ type: "run", id, widget: w.dataset.widget, params });
  }

  function request(w) {
    const params = readParams(w);
    const lane = page.lane.get(w);
    if (lane.busy) lane.next = params; // latest change wins; older queued params are dropped
    else send(w, params);
  }

  function markReady() {
    page.widgets.forEach((w) => setState(w, "ready", TEXT.ready));
    document.dispatchEvent(new Event("tw:idle")); // offline.js may now precache the site
    if (page.trainer) page.trainer.parts.start.disabled = false;
    page.widgets.filter((w) => w.dataset.autorun || w.dataset.fromUrl).forEach((w) => request(w));
  }

  function fail(message) {
    runtime.failure = message;
    runtime.worker.terminate();
    if (page) page.widgets.forEach((w) => setState(w, "error", message));
    document.dispatchEvent(new Event("tw:idle"));
  }

  function onMessage({ data: msg }) {
    if (msg.type === "event:progress") {
      page?.widgets.forEach((w) => {
        if (w.dataset.state !== "loading") return;
        part(w, ".tw-status").textContent = `${TEXT.loading} ${msg.message}`;
        part(w, ".tw-progress").value = msg.fraction;
      });
    } else if (msg.type === "event:loaded") {
      runtime.loaded = true;
      clearTimeout(runtime.timer);
      if (page) markReady();
    } else if (msg.type === "event:error") {
      clearTimeout(runtime.timer);
      fail(TEXT.bootFailed(msg.message));
    } else if (msg.type.startsWith("train:")) {
      onTraining(msg);
    } else if (msg.type === "result") {
      const w = runtime.pending.get(msg.id);
      runtime.pending.delete(msg.id);
      if (!page || !page.lane.has(w)) return; // the page it belonged to is gone
      const lane = page.lane.get(w);
      lane.busy = false;
      if (lane.next) {
        const params = lane.next;
        lane.next = null;
        send(w, params); // a newer change is waiting: this result is already stale
        return;
      }
      delete w.dataset.busy;
      if (msg.ok) {
        apply(w, msg.data);
        setState(w, "ready", TEXT.ready);
      } else {
        setState(w, "error", TEXT.runFailed(msg.error), true); // the controls can undo it
      }
    }
  }

  function getRuntime(config) {
    if (runtime && runtime.bundle === config.bundle.sha256 && !runtime.failure) return runtime;
    if (runtime) runtime.worker.terminate();
    const boot = window.__twBoot; // started by boot.js from <head>, if this page had it
    window.__twBoot = null;
    const adopt = boot && boot.config.bundle.sha256 === config.bundle.sha256;
    if (boot && !adopt) boot.worker.terminate();
    const worker = adopt ? boot.worker : new Worker(new URL("assets/tw/worker.js", ROOT));
    runtime = { worker, bundle: config.bundle.sha256, loaded: false, failure: null, pending: new Map(), nextId: 0 };
    worker.onmessage = onMessage;
    worker.onerror = (event) => {
      event.preventDefault();
      clearTimeout(runtime.timer);
      fail(TEXT.bootFailed(event.message || "el worker no arrenca"));
    };
    runtime.timer = setTimeout(() => runtime.loaded || fail(TEXT.timeout), BOOT_TIMEOUT_MS);
    if (adopt) queueMicrotask(() => boot.buffer.forEach(onMessage)); // after `page` is set
    else worker.postMessage({ type: "init", root: ROOT.href, pyodide: config.pyodide, bundle: config.bundle });
    return runtime;
  }

  // ---- training (the widget that has a .tw-train block) ---------------------------------

  function showTraining(parts, on) {
    parts.start.disabled = on;
    parts.cancel.hidden = !on;
    parts.bar.hidden = !on;
  }

  function onTraining(msg) {
    const t = page?.trainer;
    if (!t) return;
    const { widget: w, parts } = t;
    if (msg.type === "train:progress" || msg.type === "train:done") {
      part(w, ".tw-figure").innerHTML = msg.data.figure;
      parts.bar.value = msg.data.step / msg.data.steps;
      parts.status.textContent = msg.data.status;
      w.dataset.trainStep = msg.data.step;
    }
    if (msg.type === "train:done") {
      showTraining(parts, false);
      parts.status.textContent = TEXT.trainDone(msg.data.status);
      w.dataset.trainElapsed = msg.data.elapsed_s;
      page.widgets.forEach((x) => request(x)); // every widget recomputes with the new weights
    } else if (msg.type === "train:cancelled" || msg.type === "train:error") {
      showTraining(parts, false);
      parts.status.textContent = msg.type === "train:error" ? TEXT.trainFailed(msg.error) : TEXT.trainCancelled;
      request(w);
    }
  }

  function setupTrainer(w) {
    const parts = {
      start: part(w, ".tw-train-start"),
      cancel: part(w, ".tw-train-cancel"),
      bar: part(w, ".tw-train-progress"),
      status: part(w, ".tw-train-status"),
    };
    parts.start.addEventListener("click", () => {
      showTraining(parts, true);
      runtime.worker.postMessage({ type: "train", id: ++runtime.nextId, params: readParams(w) });
    });
    parts.cancel.addEventListener("click", () => runtime.worker.postMessage({ type: "train:cancel" }));
    return { widget: w, parts };
  }

  // ---- one page ------------------------------------------------------------------------

  function start() {
    const widgets = [...document.querySelectorAll(".tw-widget")];
    const configEl = document.getElementById("tw-config");
    if (widgets.length && widgets.every((w) => w.dataset.hosted)) return; // this page is set up already
    page = null;
    if (!widgets.length || !configEl) return;
    widgets.forEach((w) => (w.dataset.hosted = "true"));
    if (location.protocol === "file:") {
      widgets.forEach((w) => setState(w, "static", TEXT.file));
      return;
    }
    if (typeof Worker === "undefined" || typeof WebAssembly === "undefined") {
      widgets.forEach((w) => setState(w, "error", TEXT.unsupported));
      return;
    }
    const config = JSON.parse(configEl.dataset.config);
    page = { widgets, lane: new Map(), trainer: null };
    const rt = getRuntime(config);
    widgets.forEach((w) => {
      page.lane.set(w, { busy: false, next: null });
      addCopyButton(w);
      if (applyUrlState(w) !== null) w.dataset.fromUrl = "true";
      if (part(w, ".tw-train")) page.trainer = setupTrainer(w);
      const form = part(w, ".tw-controls");
      form.addEventListener("submit", (e) => e.preventDefault());
      form.addEventListener("input", (e) => {
        if (e.target.type === "range") showSlider(e.target);
        request(w);
      });
    });
    if (rt.failure) widgets.forEach((w) => setState(w, "error", rt.failure));
    else if (rt.loaded) markReady();
    else
      widgets.forEach((w) => {
        setState(w, "loading", TEXT.loading);
        part(w, ".tw-progress").value = 0;
      });
  }

  // Material's document$ reports instant-navigation page swaps (and, over http, the first
  // page); from file:// it does not replay the first page, hence the DOMContentLoaded path.
  if (window.document$ && typeof window.document$.subscribe === "function") window.document$.subscribe(() => start());
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();

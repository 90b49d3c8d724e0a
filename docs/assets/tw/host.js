// Thin host for the page's widgets: reads controls, posts runs to one Pyodide worker,
// swaps figure, values and live numbers into the DOM, shows progress and errors.
// No figure logic lives here: every number and SVG comes from widgets_py.
(() => {
  "use strict";

  const ROOT = new URL("../../", document.currentScript.src); // this file is assets/tw/host.js
  const BOOT_TIMEOUT_MS = 120000;
  const TEXT = {
    loading: "Carregant Python al navegador…",
    ready: "Interactiu: cada canvi es calcula amb Python al teu navegador.",
    busy: "Calculant…",
    bootFailed: (why) => `No s'ha pogut carregar Python (${why}). La figura és la calculada en construir la pàgina.`,
    timeout: "Python triga massa a carregar. La figura és la calculada en construir la pàgina.",
    runFailed: (why) => `Error de Python: ${why}. Es manté la figura anterior.`,
    trainDone: (status) => `Entrenat al navegador: ${status}. Els widgets ja fan servir els pesos nous.`,
    trainCancelled: "Entrenament aturat; es mantenen els pesos d'abans.",
    trainFailed: (why) => `L'entrenament ha fallat: ${why}.`,
    file: "Pàgina oberta des del disc: la figura és la precalculada. Per fer-la interactiva, serveix la carpeta del lloc (vegeu el README).",
    unsupported: "Aquest navegador no pot executar Python (cal WebAssembly i Web Workers). La figura és la precalculada.",
  };

  const part = (w, sel) => w.querySelector(sel);

  function setState(w, state, message, enabled = state === "ready") {
    w.dataset.state = state;
    part(w, ".tw-status").textContent = message;
    const bar = part(w, ".tw-progress");
    bar.hidden = state !== "loading";
    w.querySelectorAll(".tw-controls [name]").forEach((el) => {
      el.disabled = !enabled;
    });
  }

  function readParams(w) {
    const params = {};
    w.querySelectorAll(".tw-controls [name]").forEach((el) => {
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

  function start() {
    const widgets = [...document.querySelectorAll(".tw-widget")];
    const configEl = document.getElementById("tw-config");
    if (!widgets.length || !configEl) return;
    if (location.protocol === "file:") {
      widgets.forEach((w) => setState(w, "static", TEXT.file));
      return;
    }
    if (typeof Worker === "undefined" || typeof WebAssembly === "undefined") {
      widgets.forEach((w) => setState(w, "error", TEXT.unsupported));
      return;
    }
    const config = JSON.parse(configEl.textContent);
    const worker = new Worker(new URL("assets/tw/worker.js", ROOT));
    const pending = new Map(); // request id -> widget element
    const lane = new Map(); // widget element -> {busy, next}: at most one run in flight, the latest queued
    let nextId = 0;
    let loaded = false;

    const send = (w, params) => {
      const id = ++nextId;
      pending.set(id, w);
      lane.get(w).busy = true;
      w.dataset.busy = "true";
      worker.postMessage({ type: "run", id, widget: w.dataset.widget, params });
    };
    const request = (w) => {
      const params = readParams(w);
      const l = lane.get(w);
      if (l.busy) l.next = params; // latest change wins; older queued params are dropped
      else send(w, params);
    };
    const fail = (message) => {
      worker.terminate();
      widgets.forEach((w) => setState(w, "error", message));
    };
    const timer = setTimeout(() => loaded || fail(TEXT.timeout), BOOT_TIMEOUT_MS);

    worker.onmessage = ({ data: msg }) => {
      if (msg.type === "event:progress") {
        widgets.forEach((w) => {
          if (w.dataset.state !== "loading") return;
          part(w, ".tw-status").textContent = `${TEXT.loading} ${msg.message}`;
          part(w, ".tw-progress").value = msg.fraction;
        });
      } else if (msg.type === "event:loaded") {
        loaded = true;
        clearTimeout(timer);
        widgets.forEach((w) => setState(w, "ready", TEXT.ready));
        if (trainParts) trainParts.start.disabled = false;
        widgets.filter((w) => w.dataset.autorun).forEach((w) => request(w)); // measurements run here
      } else if (msg.type === "event:error") {
        clearTimeout(timer);
        fail(TEXT.bootFailed(msg.message));
      } else if (msg.type.startsWith("train:")) {
        onTraining(msg);
      } else if (msg.type === "result") {
        const w = pending.get(msg.id);
        pending.delete(msg.id);
        const l = lane.get(w);
        l.busy = false;
        if (l.next) {
          const params = l.next;
          l.next = null;
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
    };
    worker.onerror = (event) => {
      event.preventDefault();
      clearTimeout(timer);
      fail(TEXT.bootFailed(event.message || "el worker no arrenca"));
    };

    const trainer = widgets.find((w) => part(w, ".tw-train"));
    const trainParts = trainer && {
      start: part(trainer, ".tw-train-start"),
      cancel: part(trainer, ".tw-train-cancel"),
      bar: part(trainer, ".tw-train-progress"),
      status: part(trainer, ".tw-train-status"),
    };
    const trainingUi = (running) => {
      trainParts.start.disabled = running;
      trainParts.cancel.hidden = !running;
      trainParts.bar.hidden = !running;
      trainer.dataset.training = running ? "true" : "";
    };
    function onTraining(msg) {
      if (!trainParts) return;
      if (msg.type === "train:progress" || msg.type === "train:done") {
        part(trainer, ".tw-figure").innerHTML = msg.data.figure;
        trainParts.bar.value = msg.data.step / msg.data.steps;
        trainParts.status.textContent = msg.data.status;
        trainer.dataset.trainStep = msg.data.step;
      }
      if (msg.type === "train:done") {
        trainingUi(false);
        trainParts.status.textContent = TEXT.trainDone(msg.data.status);
        trainer.dataset.trainElapsed = msg.data.elapsed_s;
        widgets.forEach((w) => request(w)); // every widget recomputes with the new weights
      } else if (msg.type === "train:cancelled" || msg.type === "train:error") {
        trainingUi(false);
        trainParts.status.textContent = msg.type === "train:error" ? TEXT.trainFailed(msg.error) : TEXT.trainCancelled;
        request(trainer);
      }
    }
    if (trainParts) {
      trainParts.start.addEventListener("click", () => {
        trainingUi(true);
        worker.postMessage({ type: "train", id: ++nextId, params: readParams(trainer) });
      });
      trainParts.cancel.addEventListener("click", () => worker.postMessage({ type: "train:cancel" }));
    }

    widgets.forEach((w) => {
      lane.set(w, { busy: false, next: null });
      setState(w, "loading", TEXT.loading);
      part(w, ".tw-progress").value = 0;
      const form = part(w, ".tw-controls");
      form.addEventListener("submit", (e) => e.preventDefault());
      form.addEventListener("input", (e) => {
        if (e.target.type === "range") showSlider(e.target);
        request(w);
      });
    });
    worker.postMessage({ type: "init", root: ROOT.href, pyodide: config.pyodide, bundle: config.bundle });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();

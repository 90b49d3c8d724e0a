// @ts-check
// The page's side of the service worker that build_hooks/hosting/offline.py writes (only in built
// sites, never under mkdocs serve). Loaded first in <head>, so the worker takes this page,
// and Pyodide's worker, before Python's big files are fetched: each file is downloaded once
// (`tw.offline.controlled`, the gate kernel.js waits for before it starts Python).
// - Precache: once the page's widgets are interactive (host.js says "tw:idle"), or at the
//   load event on pages without widgets, ask the worker to fetch what is still missing.
// - Updates: a new build waits until the reader accepts; this page offers the reload. If
//   another tab let a new build take over, this page's scripts are the old build's: it says
//   so, and its links load whole pages (no instant swap that would pair old scripts with new
//   HTML). <html data-tw-offline> says "ready" once the whole site is stored.
(() => {
  "use strict";
  const tw = (window.tw ||= /** @type {TW} */ ({}));
  if (tw.offline || !("serviceWorker" in navigator) || !location.protocol.startsWith("http")) return;
  const sw = navigator.serviceWorker;
  const TEXT = {
    waiting: "Hi ha una versió nova d'aquest llibre.",
    taken: "S'ha activat una versió nova d'aquest llibre en una altra pestanya.",
    reload: "Recarrega",
    save: "Desa per llegir sense connexió",
    saveNote: "El navegador diu que estalvies dades: la resta del lloc (Python, numpy i totes les pàgines) es baixa només si ho demanes.",
    saving: "Desant el lloc…",
    saved: "Desat: el lloc es pot llegir sense connexió.",
    saveFailed: "No s'ha pogut desar el lloc sencer; torna-ho a provar amb connexió.",
  };
  const registration = sw.register(new URL("../../sw.js", /** @type {HTMLScriptElement} */ (document.currentScript).src)).catch(() => null);
  let controller = sw.controller;
  let accepted = false; // this page asked the new build to take over
  let stale = false; // a newer build controls this page: whole-page navigations only

  function banner(message, onReload) {
    if (!document.body) return document.addEventListener("DOMContentLoaded", () => banner(message, onReload), { once: true });
    /** @type {HTMLElement | null} */
    let box = document.querySelector(".tw-update");
    if (!box) {
      box = document.createElement("div");
      box.className = "tw-update";
      box.setAttribute("role", "status");
      box.style.cssText = "position:fixed;z-index:10;inset:auto 1rem 1rem auto;max-width:24rem;padding:.6rem .8rem;" +
        "background:var(--md-default-bg-color,#fff);color:var(--md-default-fg-color,#000);border:1px solid;border-radius:.3rem";
      const button = document.createElement("button");
      button.type = "button";
      button.style.cssText = "margin-left:.6rem;text-decoration:underline;font:inherit";
      box.append(document.createElement("span"), button);
      document.body.append(box);
    }
    box.firstChild.textContent = message + " ";
    const button = /** @type {HTMLButtonElement} */ (box.lastChild);
    button.textContent = TEXT.reload;
    button.onclick = onReload;
  }

  function offer(reg) {
    banner(TEXT.waiting, () => {
      if (!reg.waiting) return location.reload();
      accepted = true;
      reg.waiting.postMessage({ type: "skip-waiting" }); // controllerchange reloads
    });
  }

  sw.addEventListener("controllerchange", () => {
    const first = controller === null; // the first install took this page: same build
    controller = sw.controller;
    if (accepted) location.reload();
    else if (!first) {
      stale = true;
      banner(TEXT.taken, () => location.reload());
    }
  });
  // Before Material's instant navigation sees them (this script runs first): whole pages.
  window.addEventListener("click", (event) => {
    const link = stale && event.target instanceof Element && /** @type {HTMLAnchorElement | null} */ (event.target.closest("a[href]"));
    if (!link || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
    const url = new URL(link.href, location.href);
    if (url.origin !== location.origin || link.target || (url.pathname === location.pathname && url.hash)) return;
    event.preventDefault();
    event.stopImmediatePropagation();
    location.assign(url.href);
  }, true);
  window.addEventListener("popstate", (event) => {
    if (!stale) return;
    event.stopImmediatePropagation();
    location.reload();
  }, true);

  registration.then((reg) => {
    if (!reg) return;
    if (reg.waiting && sw.controller) offer(reg);
    reg.addEventListener("updatefound", () => {
      const next = reg.installing;
      next.addEventListener("statechange", () => next.state === "installed" && sw.controller && offer(reg));
    });
  });

  sw.addEventListener("message", (event) => {
    if (event.data && event.data.type === "precached") document.documentElement.dataset.twOffline = event.data.ok ? "ready" : "failed";
  });
  let asked = false;
  function precache() {
    if (asked) return;
    asked = true;
    registration.then((reg) => reg && sw.ready.then((ready) => ready.active.postMessage({ type: "precache" })));
  }
  // A reader who saves data (the browser's Save-Data) is asked before the rest of the site is
  // downloaded; what this page loads is kept for offline reading all the same.
  const savingData = Boolean(navigator.connection && navigator.connection.saveData);
  function offerToSave() {
    if (!document.body) return document.addEventListener("DOMContentLoaded", offerToSave, { once: true });
    if (document.querySelector(".tw-save")) return;
    const box = document.createElement("p");
    box.className = "tw-save";
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = TEXT.save;
    const note = document.createElement("span");
    note.textContent = TEXT.saveNote;
    button.addEventListener("click", () => {
      button.disabled = true;
      note.textContent = TEXT.saving;
      precache();
    });
    sw.addEventListener("message", (event) => {
      if (event.data && event.data.type === "precached") note.textContent = event.data.ok ? TEXT.saved : TEXT.saveFailed;
    });
    box.append(button, " ", note);
    const article = document.querySelector("article") || document.body;
    article.append(box);
  }
  const idle = savingData ? offerToSave : precache;
  document.addEventListener("tw:idle", idle, { once: true });
  window.addEventListener("load", () => {
    if (!document.querySelector(`.${tw.protocol.DOM.CLASS.WIDGET}`)) idle();
    else setTimeout(idle, 60000); // a page whose widgets never boot still gets its offline copy
  }, { once: true });
  // The kernel holds Pyodide's downloads until the service worker controls this page and its
  // workers (first visit only): then they go through the offline cache, once. The activation
  // takes the page, but a worker the page started before it (Pyodide's, from <head>) is taken
  // only once its script runs (until then the service worker does not see it): so the page
  // notes the workers it starts until then, and asks the service worker to claim them.
  // No waiting without a registration, after a failed install, or on a page the active worker
  // will not take (a forced reload); 20 s at most in any case.
  const started = []; // URLs of the workers this page started before it was taken
  const NativeWorker = window.Worker;
  const noting = NativeWorker && !sw.controller && new Proxy(NativeWorker, {
    construct(target, args, newTarget) {
      const worker = Reflect.construct(target, args, newTarget === noting ? target : newTarget);
      started.push(new URL(args[0], location.href).href);
      return worker;
    },
  });
  const stopNoting = () => window.Worker === noting && (window.Worker = NativeWorker);
  if (noting) window.Worker = noting;
  const controlled = sw.controller
    ? Promise.resolve()
    : new Promise((resolve) => {
        const done = () => resolve(stopNoting());
        sw.addEventListener("controllerchange", () => {
          stopNoting(); // a worker started from now on is taken at birth
          const channel = new MessageChannel(); // answered even before the page has parsed
          channel.port1.onmessage = done;
          sw.controller.postMessage({ type: "claim-workers", workers: started }, [channel.port2]);
        }, { once: true });
        registration.then((reg) => {
          const first = reg && !reg.active && reg.installing; // a first install takes this page
          if (!first) return sw.controller || done();
          first.addEventListener("statechange", () => first.state === "redundant" && done());
        });
        setTimeout(done, 20000);
      });
  tw.offline = {
    registration,
    controlled,
    /** A newer build controls this page: a fresh Python worker would be that build's, so the
     *  page reloads instead of starting one (host.js restart). */
    get stale() {
      return stale;
    },
  };
})();

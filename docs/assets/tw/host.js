// @ts-check
// The widget controller: each widget of the page reads its controls, calls Python through
// the kernel (kernel.js), and swaps figure, values and live numbers into the DOM, with
// progress and errors shown. No figure logic lives here: every number and SVG comes from
// widgets_py.
//
// One kernel serves every page of a visit: with Material's instant navigation the page is
// swapped without reloading scripts, `start` runs again for the new widgets, and Python
// stays warm.
(() => {
  "use strict";
  const tw = window.tw;
  const TEXT = {
    loading: "Carregant Python al navegador…",
    models: "Carregant el model… La figura és la calculada en construir la pàgina.",
    code: "Carregant el codi d'aquest widget… La figura és la calculada en construir la pàgina.",
    modelsFailed: (why) => `No s'ha pogut carregar el model (${why}). La figura és la calculada en construir la pàgina.`,
    codeFailed: (why) => `No s'ha pogut carregar el codi d'aquest widget (${why}). La figura és la calculada en construir la pàgina.`,
    ready: "Interactiu: cada canvi es calcula amb Python al teu navegador.",
    bootFailed: (why) => `No s'ha pogut carregar Python (${why}). La figura és la calculada en construir la pàgina.`,
    slowBoot: "Python triga més del normal a carregar (l'ordinador està ocupat o la connexió és lenta). "
      + "Mentrestant, la figura és la calculada en construir la pàgina; es farà interactiva quan arribi.",
    runFailed: (why) => `Error de Python: ${why}. Es manté la figura anterior.`,
    notShown: (why) => `No es mostra: ${why}. Es manté la figura anterior.`,
    file: "Pàgina oberta des del disc: la figura és la precalculada. Per fer-la interactiva, serveix la carpeta del lloc (vegeu el README).",
    unsupported: "Aquest navegador no pot executar Python (cal WebAssembly i Web Workers). La figura és la precalculada.",
    restarting: "Càlcul aturat: Python es torna a carregar…",
    partial: (what) => `Calculant${what ? `: ${what}` : ""}… Els valors pendents es marquen.`,
    slow: "Calculant…", // a run with no stage to show yet: nothing is marked pending
    hung: "Python no respon (potser hi ha codi editat que no acaba).",
    restartPython: "Reinicia Python",
    stale: "Aquesta pàgina és d'una versió anterior del llibre: es recarrega.",
  };
  const { RUN, FIXED } = tw.protocol.CALLS;
  const { CLASS, DATA, ID } = tw.protocol.DOM; // what the build's HTML carries (widgets_py/engine/dom.py)
  // a run still going after this long shows "Calculant…": within the 0.1 s a change feels
  // immediate, the reader sees it was taken (the worker may be busy with another widget, or
  // still importing the modules after the boot)
  const SLOW_MS = 80;
  // The model data (kernel.js loadModels) is asked for when a widget that reads it comes within
  // a screen of the viewport, or once the page's main thread is idle (at most this long after
  // the calculators are interactive): never before, so it does not share the link with the boot.
  // "Near" is also when an exercise's editor is made (exercise.js)
  const NEAR = "100% 0px 100% 0px";
  const IDLE_MS = 2000;

  const part = (w, cls) => w.querySelector(`.${cls}`);
  /** @type {{kernel: TWKernel, widgets: HTMLElement[], lane: Map<HTMLElement, any>, trainers: Map<HTMLElement, any>, unsubscribe: () => void, rerun?: boolean, near?: IntersectionObserver} | null} */
  let page = null; // {kernel, widgets, lane: Map(widget -> {busy, next}), trainers: Map(widget -> its training block)}

  function setState(w, state, message, enabled = state === "ready") {
    w.dataset[DATA.STATE] = state;
    part(w, CLASS.STATUS).textContent = message;
    part(w, CLASS.PROGRESS).hidden = state !== "loading";
    tw.controlsOf(w).forEach((el) => (el.disabled = !enabled));
    const copy = w.querySelector(".tw-copy");
    if (copy) copy.disabled = !enabled;
  }

  /** A reply, or a long run's partial (its values may lack outputs still to come: pending). */
  function apply(w, data) {
    tw.markup.check(data.figure, data.tables); // a reply too large to show changes nothing
    const tables = part(w, CLASS.TABLES);
    if (tables) tw.markup.fill(tables, data.tables);
    if (!data.partial) w.dataset.values = JSON.stringify(data.values); // raw numbers, for tests and the curious
    tw.figures.show(w, data); // into the slot of the layout it was drawn for (figures.js)
    w.querySelectorAll(`.${CLASS.VALUES} [data-${DATA.VALUE}]`).forEach((row) => {
      const known = row.dataset[DATA.VALUE] in data.text;
      row.classList.toggle("tw-pending", !known);
      if (known) row.querySelector("dd").textContent = data.text[row.dataset[DATA.VALUE]];
    });
    const prefix = w.dataset[DATA.INSTANCE] + ".";
    document.querySelectorAll(`.${CLASS.LIVE}`).forEach((/** @type {HTMLElement} */ span) => {
      if (!span.dataset[DATA.LIVE].startsWith(prefix)) return;
      const key = span.dataset[DATA.LIVE].slice(prefix.length);
      span.classList.toggle("tw-pending", !(key in data.text));
      if (!(key in data.text)) return;
      span.textContent = data.text[key];
      span.classList.toggle("tw-edited", w.dataset.edited === "true"); // codepanel.js: from the reader's code
      if (w.dataset.edited === "true") span.title = tw.codepanel.liveTitle;
      else span.removeAttribute("title");
    });
  }

  /** A long run's stage: what it has so far, and what it is computing now. */
  function showPartial(w, data) {
    try {
      apply(w, data);
    } catch (error) {
      return setState(w, "error", (error.shown ? TEXT.notShown : TEXT.runFailed)(error.message), true);
    }
    part(w, CLASS.STATUS).textContent = TEXT.partial(data.message);
    const bar = part(w, CLASS.PROGRESS);
    bar.hidden = false;
    bar.value = data.done;
  }

  /** "Calculant…" after SLOW_MS, if the page is the same and `still()` holds then. */
  const sayIfSlow = (here, w, still) =>
    setTimeout(() => page === here && still() && (part(w, CLASS.STATUS).textContent = TEXT.slow), SLOW_MS);

  /** One run at a time per widget; the latest change wins: a newer change cancels the run
   *  in flight (a long run stops at its next stage) and older queued params are dropped. */
  async function request(w) {
    const here = page;
    const lane = here && here.lane.get(w);
    if (!lane) return; // a widget of a page that is gone
    const params = tw.readParams(w);
    if (lane.busy) {
      lane.next = params;
      if (lane.call && lane.call.cancel) lane.call.cancel();
      // the run in flight is stale now (its stages are no longer shown); if it does not stop
      // at once (a long stage, such as one of the clock's timings), say the change was taken
      clearTimeout(lane.queued);
      lane.queued = sayIfSlow(here, w, () => lane.next);
      return;
    }
    lane.busy = true;
    w.dataset.busy = "true";
    // a run that takes long says so (a long compute's partials say more, and replace this)
    lane.partial = false;
    const slow = sayIfSlow(here, w, () => lane.busy && !lane.partial);
    let outcome;
    try {
      const edited = tw.codepanel && tw.codepanel.edited(w) !== null; // the reader's code (codepanel.js)
      const onStep = (data) => {
        if (page !== here || lane.next) return; // a stale run's stage: the newer one will show
        lane.partial = true;
        showPartial(w, data);
      };
      lane.call = edited ? tw.codepanel.run(w, here.kernel, params)
        : here.kernel.call(RUN, { widget: w.dataset[DATA.WIDGET], params, layout: tw.figures.shown(w) }, onStep);
      outcome = { ok: true, data: await lane.call };
    } catch (error) {
      outcome = { ok: false, error };
    }
    lane.call = null;
    clearTimeout(slow);
    if (page !== here) return; // the page it belonged to is gone
    lane.busy = false;
    if (lane.next) {
      lane.next = null;
      request(w); // a newer change is waiting: this result is already stale
      return;
    }
    delete w.dataset.busy;
    if (outcome.ok && outcome.data.cancelled) {
      request(w); // cancelled without a newer change waiting (a page swap, say): compute it again
    } else if (outcome.ok) {
      try {
        apply(w, outcome.data);
        setState(w, "ready", TEXT.ready);
      } catch (error) {
        setState(w, "error", (error.shown ? TEXT.notShown : TEXT.runFailed)(error.message), true); // the figure shown stays
      }
    } else if (outcome.error.kind === "stopped") {
      setState(w, "loading", TEXT.restarting); // restart(): the fresh worker recomputes it
    } else if (!here.kernel.failure) {
      setState(w, "error", TEXT.runFailed(outcome.error.message), true); // the controls can undo it
    }
  }

  /** Numbers in prose at fixed parameters, recomputed when the weights changed. */
  function refreshFixed() {
    const here = page;
    document.querySelectorAll(`.${CLASS.FIXED}`).forEach(async (/** @type {HTMLElement} */ span) => {
      const [widget, key] = span.dataset[DATA.FIXED].split(".");
      let data;
      try {
        data = await here.kernel.call(FIXED, { widget, params: JSON.parse(span.dataset[DATA.PARAMS]) });
      } catch {
        // the worker was stopped (restart(): the fresh one refreshes them again) or failed
        // (the widgets say so): the number shown stays
        return;
      }
      if (page === here) span.textContent = data.text[key];
    });
  }

  function afterTraining() {
    if (!page) return; // trained to the end while the reader was on a page without widgets
    page.widgets.forEach(request); // every widget recomputes with the new weights
    refreshFixed();
  }

  /** Python is in: each widget goes live as soon as what it needs is there: a calculator now,
   *  or once its own package is in (kernel.answers: the page's first comes with Python, its
   *  others next), a widget that reads the model data (data-models) once that is in. */
  function markReady() {
    const here = page;
    const waiting = here.widgets.filter((w) => w.dataset[DATA.MODELS] && !here.kernel.models);
    const own = here.widgets.filter((w) => !waiting.includes(w) && !here.kernel.answers(w.dataset[DATA.WIDGET]));
    goLive(here, here.widgets.filter((w) => !waiting.includes(w) && !own.includes(w)));
    if (here.rerun) refreshFixed(); // a fresh worker has the shipped weights again (a retrain is gone)
    const calculators = awaitOwn(here, own);
    here.kernel.loadWidgets(own.map((w) => w.dataset[DATA.WIDGET])); // none: the worker's warm-up need not wait
    // offline.js may now precache the site
    if (!waiting.length) return calculators.then(() => page === here && document.dispatchEvent(new Event("tw:idle")));
    waiting.forEach((w) => {
      setState(w, "loading", TEXT.models);
      part(w, CLASS.PROGRESS).hidden = true; // the worker reports no fraction of it: the status says it
    });
    const stop = here.kernel.on((event) => {
      if (event.type !== "model-data") return;
      stop();
      if (here.near) here.near.disconnect();
      if (page === here) goLive(here, waiting);
      document.dispatchEvent(new Event("tw:idle"));
    });
    const prior = here.unsubscribe;
    here.unsubscribe = () => {
      prior();
      stop();
      if (here.near) here.near.disconnect();
    };
    const ask = () => page === here && here.kernel.loadModels();
    if (typeof IntersectionObserver !== "undefined") {
      here.near = new IntersectionObserver((entries) => entries.some((e) => e.isIntersecting) && ask(), { rootMargin: NEAR });
      waiting.forEach((w) => here.near.observe(w));
    }
    if (typeof requestIdleCallback === "function") requestIdleCallback(ask, { timeout: IDLE_MS });
    else setTimeout(ask, IDLE_MS);
  }

  /** These calculators go live as their own packages come in (the worker's WIDGETS event), or
   *  say why they cannot (markReady asks for them once the widgets that answer already are
   *  live, so that their downloads do not delay the first). A promise that all have. */
  function awaitOwn(here, own) {
    if (!own.length) return Promise.resolve();
    own.forEach((w) => {
      setState(w, "loading", TEXT.code);
      part(w, CLASS.PROGRESS).hidden = true; // the worker reports no fraction of it: the status says it
    });
    const left = new Set(own);
    return new Promise((resolve) => {
      const stop = here.kernel.on((event) => {
        if (event.type !== "widgets" || page !== here) return;
        const now = [...left].filter((w) => event.widgets.includes(w.dataset[DATA.WIDGET]));
        now.forEach((w) => left.delete(w));
        if (event.failed) now.forEach((w) => setState(w, "error", TEXT.codeFailed(event.failed)));
        else goLive(here, now);
        if (!left.size) {
          stop();
          resolve();
        }
      });
      const prior = here.unsubscribe;
      here.unsubscribe = () => {
        prior();
        stop();
      };
    });
  }

  /** These widgets are interactive: each answers its controls (a model widget whose data
   *  could not load says why, and shows its prerendered figure); those whose figure should be
   *  recomputed (timed, from the URL, edited, after a restart) are. */
  function goLive(here, widgets) {
    const failed = here.kernel.models && here.kernel.models.failed;
    widgets.forEach((w) => {
      if (failed && w.dataset[DATA.MODELS]) return setState(w, "error", TEXT.modelsFailed(failed));
      setState(w, "ready", TEXT.ready);
      if (here.trainers.has(w)) here.trainers.get(w).enable();
      if (here.rerun || w.dataset[DATA.AUTORUN] || w.dataset.fromUrl || w.dataset.edited) request(w);
    });
  }

  function fail(error) {
    const message = TEXT.bootFailed(error.message);
    page.widgets.forEach((w) => setState(w, "error", message));
    document.dispatchEvent(new Event("tw:idle"));
  }

  function showProgress({ message, fraction }) {
    page.widgets.forEach((w) => {
      if (w.dataset[DATA.STATE] !== "loading") return;
      part(w, CLASS.STATUS).textContent = page.kernel.slow ? `${TEXT.slowBoot} ${message}`.trim() : `${TEXT.loading} ${message}`;
      part(w, CLASS.PROGRESS).value = fraction;
    });
  }

  /** The page is gone (instant navigation): its runs in flight stop at their next stage. */
  function leave(gone) {
    gone.unsubscribe();
    gone.lane.forEach((lane) => lane.call && lane.call.cancel && lane.call.cancel());
    gone.trainers.forEach((t) => t.leave && t.leave());
  }

  function start() {
    const widgets = [...document.querySelectorAll(`.${CLASS.WIDGET}`)].map((w) => /** @type {HTMLElement} */ (w));
    const configEl = document.getElementById(ID.CONFIG);
    if (widgets.length && widgets.every((w) => w.dataset.hosted)) return; // this page is set up already
    if (page) leave(page);
    page = null;
    // a worker that ran a reader's edit does not outlive its page: on a page with no widget
    // nothing would say it is there, and it may be busy (a page with widgets replaces it: adopt)
    if (!widgets.length || !configEl) return tw.kernel && tw.kernel.retireTainted();
    widgets.forEach((w) => (w.dataset.hosted = "true"));
    if (location.protocol === "file:" && !tw.embedded) return widgets.forEach((w) => setState(w, "static", TEXT.file));
    if (!tw.kernel.supported()) return widgets.forEach((w) => setState(w, "error", TEXT.unsupported));

    const kernel = tw.kernel.get(JSON.parse(configEl.dataset[DATA.CONFIG]));
    const here = (page = { kernel, widgets, lane: new Map(), trainers: new Map(), unsubscribe: () => {} });
    widgets.forEach((w) => {
      here.lane.set(w, { busy: false, next: null, call: null });
      tw.addCopyButton(w);
      if (tw.codepanel) tw.codepanel.setup(w, { kernel: () => here.kernel, recompute: () => request(w), restart });
      if (tw.applyUrlState(w) !== null) {
        w.dataset.fromUrl = "true";
        tw.showParams(w);
      }
      const trainer = tw.trainer.setup(w, { kernel: () => here.kernel, onTrained: afterTraining, onStopped: request });
      if (trainer) here.trainers.set(w, trainer);
      const form = part(w, CLASS.CONTROLS);
      form.addEventListener("submit", (e) => e.preventDefault());
      form.addEventListener("input", (e) => {
        if (e.target.type === "range") tw.showSlider(e.target);
        tw.showParams(w); // the printed line of parameters (url-state.js)
        request(w);
      });
      tw.figures.watch(w, () => w.dataset[DATA.STATE] === "ready" && request(w)); // a stale layout comes into view
    });
    adopt(here);
  }

  /** Every widget of the page says the worker stopped answering (a reader's edit that never
   *  ends, say: kernel.js's heartbeat), with a button that starts a fresh one; or no longer. */
  function showHung(here, hung) {
    here.widgets.forEach((w) => {
      let note = w.querySelector(".tw-hung");
      if (!hung) return note && note.remove();
      if (note) return;
      note = document.createElement("p");
      note.className = "tw-hung";
      note.setAttribute("role", "alert");
      const again = document.createElement("button");
      again.type = "button";
      again.textContent = TEXT.restartPython;
      again.addEventListener("click", () => {
        // an applied edit may be what hangs: the fresh worker must not run it again, so
        // every one waits in its editor as a draft (what «Atura» does for its own widget)
        if (tw.codepanel) tw.codepanel.shelve();
        restart();
      });
      note.append(`${TEXT.hung} `, again);
      part(w, CLASS.STATUS).after(note);
    });
  }

  /** The page waits for its kernel (booting, or warm from the previous page), then goes live. */
  function adopt(here) {
    const kernel = here.kernel;
    if (kernel.failure) return fail(kernel.failure);
    // a worker that ran a reader's edit may have had any module changed by it; no edit is
    // applied on a page that starts (a stored one is a draft, codepanel.js): a fresh worker
    if (kernel.tainted) return restart();
    here.unsubscribe = kernel.on((event) => {
      if (page !== here) return;
      if (event.type === "hung" || event.type === "alive") showHung(here, event.type === "hung");
    });
    if (kernel.hung) showHung(here, true);
    if (kernel.loaded) return markReady();
    here.widgets.forEach((w) => setState(w, "loading", TEXT.loading));
    showProgress(kernel.progress);
    const unsubscribe = here.unsubscribe;
    const booting = kernel.on((event) => {
      if (page !== here) return;
      if (event.type === "progress" || event.type === "slow") showProgress(kernel.progress);
      else if (event.type === "error" && kernel.loaded) fail(event.error); // the worker died after booting
    });
    here.unsubscribe = () => {
      unsubscribe();
      booting();
    };
    kernel.ready.then(() => page === here && markReady(), (error) => page === here && fail(error));
  }

  /** A fresh worker, when a reader's code runs too long (codepanel.js "Atura", exercise.js's
   *  time limit); then every widget that does not show the prerendered figure recomputes in
   *  it. False on a page without widgets (the caller restarts the kernel itself). */
  function restart() {
    const here = page;
    if (!here) return false;
    if (tw.offline && tw.offline.stale) {
      // a newer build controls this page: a new worker would be that build's, under this
      // build's page (offline.js); the page itself is reloaded instead
      here.widgets.forEach((w) => setState(w, "loading", TEXT.stale));
      location.reload();
      return true;
    }
    here.unsubscribe();
    showHung(here, false);
    here.kernel = tw.kernel.restart(JSON.parse(document.getElementById(ID.CONFIG).dataset[DATA.CONFIG]));
    here.rerun = true; // its figures came from the stopped worker (a retrained model, say)
    if (tw.codepanel) tw.codepanel.renew(); // what an open panel shows is the old worker's answer
    adopt(here);
    return true;
  }

  tw.host = { restart, NEAR };

  // Material's document$ reports instant-navigation page swaps (and, over http, the first
  // page); from file:// it does not replay the first page, hence the DOMContentLoaded path.
  if (window.document$ && typeof window.document$.subscribe === "function") window.document$.subscribe(() => start());
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();

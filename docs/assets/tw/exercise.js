// @ts-check
// The chapter's exercises in the page (issue 41). The build writes each one's title, statement
// and starter code (build_hooks/pages/exercises.py); this script makes the starter an editor
// (the «Codi» panel's CodeMirror, codepanel.js; a textarea where it cannot load) with three
// buttons: «Comprova» sends the reader's code to the page's Python worker, which grades it
// against the chapter's own function (widgets_py/engine/exercise.py) under the lock-down of a
// reader's edit (lockdown.js); «Pista» shows the next hint; «Solució», after an attempt, the
// reference answer. The hints and the solution come from the worker, never from the HTML
// (so never from the search index).
//
// A loop of the reader's own lines stops itself in Python (exercise.py TIME_LIMIT_S: verdict
// `timeout`, naming the line; the worker is kept). A check that still does not answer in LIMIT_MS
// from the moment the worker starts it (a loop inside one C call) is stopped: the worker is
// restarted (host.js, whose widgets recompute in the fresh one, or the kernel itself on a page
// without widgets), and the verdict is `timeout` too. After each check the result line carries
// data-verdict (pass | fail | error | timeout) and is announced (aria-live); a pass sets
// data-solved="true" on the exercise.
// The verdict's words are plain text (text nodes; its `code` spans as <code>): nothing of the
// reader's reaches the page as markup.
//
// A pass of an exercise that drives a widget (exercise.Drives: top-p in the sampling figure, KV
// bytes in the cache's) carries that widget's module with the reader's function behind its
// seam; «Aplica a la figura» applies it as the widget's «Codi» edit (codepanel.js), so the
// figure redraws with the reader's function and says so until its «Restaura».
//
// The page's list of exercises (md:exercicis, build_hooks/pages/exercises.py) marks the solved
// ones and counts them; its «Esborra el progrés» (asked twice) starts every exercise again.
//
// Each editor is made when its exercise nears the viewport, or once the page's widgets are all
// interactive (whenNear): until then the built <pre> shows the starter, and a check sends the
// code kept.
//
// Progress (the code, solved or not, hints shown, tried) is kept in localStorage per page and
// exercise, over http(s) only: from disk (file://) every file shares that storage, as for the
// code panel's edits. Code kept is shown, never run by itself.
(() => {
  "use strict";
  const tw = (window.tw ||= /** @type {TW} */ ({}));
  if (tw.exercise) return;
  const { EXERCISE, CHECK } = tw.protocol.CALLS;
  const { CLASS, DATA, ID } = tw.protocol.DOM; // what the build's HTML carries (widgets_py/engine/dom.py)
  const LIMIT_MS = 12000; // a check longer than this is stopped (issue 41); longer than exercise.py's TIME_LIMIT_S
  const TEXT = {
    check: "Comprova",
    hint: "Pista",
    solution: "Solució",
    reset: "Torna a començar",
    drive: "Aplica a la figura",
    driven: (title) => `La figura «${title}» fa servir ara la teva funció; el seu botó «Restaura» hi torna el codi del llibre.`,
    drivenPanel: (title) => `La figura fa servir la teva funció de l'exercici «${title}». «Restaura» torna al codi original.`,
    label: (name) => `La teva resposta: ${name}`,
    hintTitle: (n) => `Pista ${n}`,
    noMoreHints: "No hi ha més pistes.",
    solutionLocked: "La solució es mostra després d'haver comprovat almenys una resposta.",
    solutionTitle: "Una solució:",
    waiting: "Esperant Python…",
    checking: "Comprovant…",
    timeout: `El codi no ha acabat en ${LIMIT_MS / 1000} s i s'ha aturat (Python s'ha reiniciat; les figures de la pàgina tornen a respondre). Hi ha algun bucle que no acaba?`,
    failed: (why) => `No s'ha pogut comprovar: ${why}`,
    file: "Pàgina oberta des del disc: per comprovar la resposta, serveix la carpeta del lloc (vegeu el README) o baixa el capítol en un sol fitxer.",
    unsupported: "Aquest navegador no pot executar Python (cal WebAssembly i Web Workers): pots escriure la resposta, però no comprovar-la.",
    restored: "S'ha recuperat el codi d'una visita anterior (no s'ha executat).",
    plain: "(editor simple: no s'ha pogut carregar l'editor de codi)",
    solvedCount: (n, total) => `Has resolt ${n} dels ${total} exercicis d'aquesta pàgina.`,
    solvedMark: "resolt",
    clear: "Esborra el progrés",
    clearConfirm: "Segur? Esborra-ho tot (codi i estat)",
    cleared: (total) => `S'ha esborrat el progrés dels ${total} exercicis d'aquesta pàgina.`,
  };
  const keeps = location.protocol !== "file:"; // from disk every file shares one localStorage
  // one key per page, however its URL was spelt (/cap15/ and /cap15/index.html are one page)
  const storageKey = (name) => `tw-exercici:${location.pathname.replace(/\/index\.html$/, "/")}#${name}`;

  /** {code, solved, tried, hints} kept for exercise `name`, or null. */
  function stored(name) {
    if (!keeps) return null;
    try {
      const data = JSON.parse(localStorage.getItem(storageKey(name)));
      return data && typeof data.code === "string" ? data : null;
    } catch {
      return null;
    }
  }

  function store(name, data) {
    if (!keeps) return;
    try {
      if (data) localStorage.setItem(storageKey(name), JSON.stringify(data));
      else localStorage.removeItem(storageKey(name));
    } catch {
      // private mode or full: the progress lasts this page only
    }
  }

  function config() {
    const el = document.getElementById(ID.CONFIG);
    return el ? JSON.parse(el.dataset[DATA.CONFIG]) : null;
  }

  /** The visit's kernel (kernel.js: the one host.js uses, or a fresh one after a restart). */
  const kernel = () => tw.kernel.get(config());

  const button = (cls, label) => {
    const b = document.createElement("button");
    b.type = "button";
    b.className = cls;
    b.textContent = label;
    return b;
  };

  /** A hint's inline Markdown (`code`, **bold**) as DOM nodes: text, never markup. */
  function inline(parent, text) {
    for (const [i, part] of text.split(/(`[^`]*`|\*\*[^*]+\*\*)/).entries()) {
      if (i % 2 === 0) parent.append(part);
      else {
        const el = document.createElement(part.startsWith("`") ? "code" : "strong");
        el.textContent = part.startsWith("`") ? part.slice(1, -1) : part.slice(2, -2);
        parent.append(el);
      }
    }
    return parent;
  }

  class Exercise {
    constructor(/** @type {HTMLElement} */ el) {
      this.el = el;
      this.name = el.dataset[DATA.EXERCISE];
      const starterEl = /** @type {HTMLElement} */ (el.querySelector(`.${CLASS.EXERCISE_STARTER}`));
      this.starter = starterEl ? starterEl.textContent : ""; // exercise.py's, as the build wrote it
      const saved = stored(this.name);
      this.state = { code: saved ? saved.code : this.starter, solved: Boolean(saved && saved.solved),
        tried: Boolean(saved && saved.tried), hints: saved ? Math.max(0, Number(saved.hints) || 0) : 0 };
      this.info = null; // the worker's ExerciseReply: hints (and the solution once tried)
      this.running = null; // the check in flight
      this.editor = null;

      this.view = document.createElement("div");
      this.view.className = "tw-code-view tw-exercise-editor"; // the code panel's look (tw.css)
      const actions = document.createElement("div");
      actions.className = "tw-exercise-actions";
      this.buttons = {
        check: button("tw-exercise-check", TEXT.check),
        hint: button("tw-exercise-hint", TEXT.hint),
        solution: button("tw-exercise-solution-button", TEXT.solution),
        reset: button("tw-exercise-reset", TEXT.reset),
        drive: button("tw-exercise-drive", TEXT.drive),
      };
      this.buttons.drive.hidden = true; // after a pass, where the exercise drives a widget of the page
      this.figure = null; // {widget, code}: that widget's module with the reader's function (protocol.DrivenFigure)
      actions.append(...Object.values(this.buttons));
      this.hints = document.createElement("div");
      this.hints.className = "tw-exercise-hints";
      this.solution = document.createElement("div");
      this.solution.className = "tw-exercise-solution";
      this.solution.hidden = true;
      this.result = document.createElement("p");
      this.result.className = "tw-exercise-result";
      this.result.setAttribute("role", "status");
      this.result.setAttribute("aria-live", "polite");
      this.view.hidden = true; // until the editor is mounted, the built <pre> shows the starter
      this.starterEl = starterEl;
      if (starterEl) starterEl.after(this.view, actions, this.hints, this.solution, this.result);
      else el.append(this.view, actions, this.hints, this.solution, this.result);
      el.dataset.enhanced = "true";

      this.buttons.check.addEventListener("click", () => this.check());
      this.buttons.hint.addEventListener("click", () => this.hint());
      this.buttons.solution.addEventListener("click", () => this.reveal());
      this.buttons.reset.addEventListener("click", () => this.reset());
      this.buttons.drive.addEventListener("click", () => this.drive());
      this.refresh();
      whenNear(el, () => this.mount(saved));
    }

    /** The editor, made when the exercise nears the viewport (whenNear): CodeMirror is fetched
     *  then, not with the page. */
    async mount(saved) {
      const lib = tw.codepanel ? await tw.codepanel.loadEditor() : null;
      const options = { doc: this.state.code, readOnly: false, label: TEXT.label(this.name) };
      this.view.hidden = false;
      if (this.starterEl) this.starterEl.hidden = true; // the editor holds it now (print shows it: tw.css)
      this.editor = lib ? lib.create(this.view, options) : tw.codepanel.plainEditor(this.view, options);
      this.view.dataset.editor = this.editor.kind;
      if (!lib) this.view.append(Object.assign(document.createElement("p"), { className: "tw-exercise-plain", textContent: TEXT.plain }));
      if (!this.usable()) this.say(location.protocol === "file:" && !tw.embedded ? TEXT.file : TEXT.unsupported);
      else if (saved && saved.code !== this.starter) this.say(TEXT.restored);
      for (let i = 0; i < this.state.hints; i++) await this.showHint(i);
    }

    get code() {
      return this.editor ? this.editor.value : this.state.code;
    }

    save() {
      this.state.code = this.code;
      const untouched = this.state.code === this.starter && !this.state.solved && !this.state.tried && !this.state.hints;
      store(this.name, untouched ? null : this.state);
    }

    refresh() {
      if (this.state.solved) this.el.dataset[DATA.SOLVED] = "true";
      else delete this.el.dataset[DATA.SOLVED];
      progress();
      this.buttons.check.disabled = this.running !== null;
      const total = this.info ? this.info.hints.length : Infinity;
      this.buttons.hint.disabled = this.state.hints >= total;
      this.buttons.solution.disabled = !this.state.tried;
      this.buttons.solution.title = this.state.tried ? "" : TEXT.solutionLocked;
    }

    say(text, verdict = null, line = null) {
      this.result.replaceChildren();
      inline(this.result, text); // the call and the values as code: text nodes, never markup
      if (verdict) this.result.dataset[DATA.VERDICT] = verdict;
      else delete this.result.dataset[DATA.VERDICT];
      if (this.editor) this.editor.markLine(line);
    }

    /** The worker's ExerciseReply, asked again once the reader has tried (for the solution). */
    async ask() {
      if (this.info && (this.info.solution !== undefined || !this.state.tried)) return this.info;
      const k = kernel();
      await k.ready;
      this.info = await k.call(EXERCISE, { exercise: this.name, attempted: this.state.tried });
      this.refresh();
      return this.info;
    }

    usable() {
      return Boolean(tw.kernel && config() && tw.kernel.supported()); // from disk: only the single file
    }

    /** «Comprova»: the reader's code graded in the worker, stopped after LIMIT_MS. */
    async check() {
      if (this.running || !this.usable()) return;
      const code = this.code;
      this.save();
      this.running = {};
      this.refresh();
      this.el.dataset.busy = "true";
      let k = kernel();
      if (!k.loaded) this.say(TEXT.waiting);
      let verdict;
      try {
        await k.ready;
        k = kernel();
        this.say(TEXT.checking);
        k.tainted = true; // the reader's code ran in it: it may have changed any module (host.js, codepanel.js)
        // the limit counts from the moment the worker starts the reader's code (its step), not
        // from a queue behind the widgets' runs (a fresh worker recomputes every widget first)
        let timer;
        let late;
        const started = new Promise((resolve) => (late = resolve));
        const call = k.call(CHECK, { exercise: this.name, code }, () => (timer = setTimeout(() => late(null), LIMIT_MS)));
        verdict = await Promise.race([call, started]);
        clearTimeout(timer);
        if (verdict === null) {
          call.catch(() => {}); // rejected by the restart: the timeout is what the reader hears
          if (!(tw.host && tw.host.restart())) tw.kernel.restart(config());
          verdict = { verdict: "timeout", message: TEXT.timeout, line: null };
        }
      } catch (error) {
        verdict = { verdict: "error", message: TEXT.failed(error.message), line: null, failed: true };
      }
      this.running = null;
      delete this.el.dataset.busy;
      if (!verdict.failed) this.state.tried = true;
      if (verdict.verdict === "pass") this.state.solved = true;
      this.figure = verdict.verdict === "pass" && verdict.figure && this.widget(verdict.figure.widget) ? verdict.figure : null;
      this.buttons.drive.hidden = this.figure === null;
      this.save();
      this.refresh();
      this.say(verdict.message, verdict.verdict, verdict.line); // the message names the reader's line (exercise.py); the editor marks it
    }

    /** The page's first widget `name` that can take an edit (its «Codi» panel), or null. */
    widget(name) {
      const w = document.querySelector(`.${CLASS.WIDGET}[data-${DATA.WIDGET}="${CSS.escape(name)}"]`);
      return w && tw.codepanel && tw.codepanel.has(w) ? /** @type {HTMLElement} */ (w) : null;
    }

    /** «Aplica a la figura»: the passing answer drives its widget, as that widget's edit. */
    drive() {
      const w = this.figure && this.widget(this.figure.widget);
      if (!w) return;
      tw.codepanel.apply(w, this.figure.code, TEXT.drivenPanel(this.figure.exercise));
      this.say(TEXT.driven(this.figure.title), "pass");
      w.scrollIntoView({ block: "start" });
    }

    async hint() {
      if (!this.usable()) return;
      if (!kernel().loaded) this.say(TEXT.waiting);
      try {
        await this.ask();
      } catch (error) {
        return this.say(TEXT.failed(error.message));
      }
      if (this.result.textContent === TEXT.waiting) this.say("");
      if (this.state.hints >= this.info.hints.length) return this.say(TEXT.noMoreHints);
      await this.showHint(this.state.hints);
      this.state.hints += 1;
      this.save();
      this.refresh();
    }

    async showHint(i) {
      if (this.hints.children.length > i) return;
      try {
        await this.ask();
      } catch {
        return; // shown when Python answers and the reader asks again
      }
      if (i >= this.info.hints.length || this.hints.children.length > i) return;
      const p = document.createElement("p");
      p.className = "tw-exercise-hint-text";
      p.append(Object.assign(document.createElement("strong"), { textContent: `${TEXT.hintTitle(i + 1)}: ` }));
      this.hints.append(inline(p, this.info.hints[i]));
      this.refresh();
    }

    /** «Solució»: the reference answer, below the editor (the reader's code stays). */
    async reveal() {
      if (!this.state.tried || !this.usable()) return;
      try {
        await this.ask();
      } catch (error) {
        return this.say(TEXT.failed(error.message));
      }
      const pre = document.createElement("pre");
      pre.tabIndex = 0; // a long line scrolls inside it: reachable and named (a phone's 360 px)
      pre.setAttribute("aria-label", TEXT.solutionTitle);
      const code = document.createElement("code");
      code.className = "language-python";
      code.textContent = this.info.solution || "";
      pre.append(code);
      this.solution.replaceChildren(Object.assign(document.createElement("p"), { textContent: TEXT.solutionTitle }), pre);
      this.solution.hidden = false;
    }

    /** «Torna a començar»: the starter again; nothing kept. */
    reset() {
      if (this.editor) this.editor.setValue(this.starter);
      this.figure = null;
      this.buttons.drive.hidden = true;
      this.state = { code: this.starter, solved: false, tried: false, hints: 0 };
      this.hints.replaceChildren();
      this.solution.hidden = true;
      this.solution.replaceChildren();
      this.info = null;
      store(this.name, null);
      this.say("");
      this.refresh();
    }
  }

  const made = new WeakMap(); // exercise element -> its Exercise

  /** `then()` once `el` comes within a screen of the viewport (host.js's NEAR), or once the
   *  page's widgets are all interactive (host.js's tw:idle, when the offline copy is fetched
   *  too), as for the model data; at once where that cannot be watched. The editor bundle
   *  (CodeMirror, 230 KB on the wire) is the page's largest script: fetched at load it shared
   *  the link with Python's boot, for exercises that sit below the widgets (issue 44). */
  function whenNear(el, then) {
    if (typeof IntersectionObserver === "undefined" || !tw.host) return then();
    let near = null;
    const once = () => {
      if (!near) return;
      near.disconnect();
      near = null;
      document.removeEventListener("tw:idle", once);
      then();
    };
    near = new IntersectionObserver((entries) => entries.some((e) => e.isIntersecting) && once(), { rootMargin: tw.host.NEAR });
    near.observe(el);
    document.addEventListener("tw:idle", once);
  }

  /** The page's list of exercises: each solved one marked, the count in its status line. */
  function progress(said = null) {
    for (const list of document.querySelectorAll(`.${CLASS.EXERCISES}`)) {
      const items = /** @type {HTMLElement[]} */ ([...list.querySelectorAll(`li[data-${DATA.LISTED}]`)]);
      let solved = 0;
      for (const li of items) {
        const ex = find(li.dataset[DATA.LISTED]);
        const done = Boolean(ex && ex.state.solved);
        solved += Number(done);
        let mark = li.querySelector(".tw-exercises-mark");
        if (done && !mark) {
          mark = Object.assign(document.createElement("span"), { className: "tw-exercises-mark", textContent: ` ✓ ${TEXT.solvedMark}` });
          li.append(mark);
        } else if (!done && mark) mark.remove();
      }
      const status = list.querySelector(`.${CLASS.EXERCISES_STATUS}`);
      if (status) status.textContent = said || TEXT.solvedCount(solved, items.length);
      if (!list.querySelector(".tw-exercises-clear")) {
        const clear = button("tw-exercises-clear", TEXT.clear);
        clear.addEventListener("click", () => {
          if (clear.dataset.armed !== "true") {
            clear.dataset.armed = "true";
            clear.textContent = TEXT.clearConfirm;
            return;
          }
          delete clear.dataset.armed;
          clear.textContent = TEXT.clear;
          for (const li of items) {
            const ex = find(li.dataset[DATA.LISTED]);
            if (ex) ex.reset();
          }
          progress(TEXT.cleared(items.length));
        });
        clear.addEventListener("blur", () => {
          delete clear.dataset.armed;
          clear.textContent = TEXT.clear;
        });
        list.append(clear);
      }
    }
  }

  function start() {
    document.querySelectorAll(`.${CLASS.EXERCISE}[data-${DATA.EXERCISE}]`).forEach((/** @type {HTMLElement} */ el) => {
      if (!made.has(el)) made.set(el, new Exercise(el));
    });
    progress();
  }

  // the editor's text kept as the reader types, and on leaving the page
  for (const type of ["input", "keyup", "paste", "cut"]) {
    document.addEventListener(type, (e) => {
      const el = e.target instanceof Element && e.target.closest(`.${CLASS.EXERCISE}`);
      if (el && made.has(el)) setTimeout(() => made.get(el).save()); // after the editor took the change
    }, true);
  }
  window.addEventListener("pagehide", () => document.querySelectorAll(`.${CLASS.EXERCISE}`).forEach((el) => made.has(el) && made.get(el).save()));

  const find = (name) => {
    const el = document.querySelector(`.${CLASS.EXERCISE}[data-${DATA.EXERCISE}="${CSS.escape(name)}"]`);
    return el && made.has(el) ? made.get(el) : null;
  };

  progress(); // the list's count before any exercise is made (a page without Python too)

  tw.exercise = {
    /** The editor's text of exercise `name` (CodeMirror draws only the lines in view): for tests. */
    text: (name) => (find(name) ? find(name).code : null),
    /** The editor's text replaced, as a paste would (tests in engines without a keyboard API);
     *  false before the editor is made. */
    setText: (name, code) => {
      const ex = find(name);
      if (!ex || !ex.editor) return false;
      ex.editor.setValue(code);
      ex.save();
      return true;
    },
    LIMIT_MS,
  };

  if (window.document$ && typeof window.document$.subscribe === "function") window.document$.subscribe(() => start());
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();

// @ts-check
// The code panel of each widget ("Codi"): the Python module that draws the figure, as the
// worker has it installed from the site's wheel (asked through the kernel, never a copy),
// shown with line numbers in the site's code colours; "Edita" makes it editable, "Executa"
// runs the edit in the worker in place of the shipped module for this widget on this page
// (widgets_py/engine/edits.py), "Atura" stops a run that does not end (a fresh worker),
// "Restaura" returns to the shipped module. The page never evaluates code: Python runs in
// the worker. The editor is CodeMirror 6, bundled by the build (build_hooks/runtime/editor_assets.py)
// and loaded when a panel first opens; without it, a plain textarea.
//
// An edit is kept in localStorage per page and widget instance until restored, as a draft:
// on the next visit it is shown in its panel and marked on the widget ("edició desada"), and
// it runs only when the reader presses «Executa» again (an edit that hangs, or that someone
// else planted, never runs by itself). From disk (file://) nothing is kept: every local file
// shares that storage. An applied edit runs in the page's one Python worker, where it can
// change any module's state: while one is applied, every widget of the page says so, and
// «Restaura» gives the page a fresh worker (host.js restarts one the edit has run in).
(() => {
  "use strict";
  const tw = (window.tw ||= /** @type {TW} */ ({}));
  const { SOURCE, EDITED } = tw.protocol.CALLS;
  const { CLASS, DATA, ID } = tw.protocol.DOM; // what the build's HTML carries (widgets_py/engine/dom.py)
  const ROOT = new URL("../../", /** @type {HTMLScriptElement} */ (document.currentScript).src || location.href); // inlined (single_file.py): no src
  const STOP_AFTER_MS = 400; // a run slower than this offers "Atura"
  const TEXT = {
    open: "Codi",
    close: "Amaga el codi",
    edit: "Edita",
    run: "Executa",
    stop: "Atura",
    restore: "Restaura",
    mark: "codi editat",
    draftMark: "edició desada (no aplicada)",
    pageMark: "hi ha codi editat en aquesta pàgina",
    pageMarkTitle: "Un altre widget d'aquesta pàgina executa codi editat, que pot canviar el que calcula aquest",
    draft: "Tens una edició desada d'una visita anterior. No s'ha executat: revisa-la i prem «Executa» per aplicar-la, o «Restaura».",
    notKept: "Des del disc les edicions no es desen (qualsevol fitxer local podria llegir-les o plantar-ne): durarà mentre la pàgina estigui oberta.",
    loading: "Demanant el codi a Python…",
    shipped: (file) => `${file}: el mòdul tal com s'executa al teu navegador. Pots editar-lo i executar-lo aquí.`,
    editing: "Edita el codi i prem «Executa»: el widget es recalcularà amb la teva versió (només aquí). Per sortir de l'editor amb el teclat: Esc i després Tab.",
    running: "Executant el teu codi…",
    ok: "El widget usa el teu codi. «Restaura» torna al codi original.",
    notSaved: "No s'ha pogut desar l'edició en aquest navegador: durarà només mentre la pàgina estigui oberta.",
    error: (e) => `${e.line ? `Línia ${e.line}: ` : ""}${e.kind}: ${e.message}. Es manté la darrera figura bona.`,
    stopped: "Aturat. El widget torna al codi original; el teu codi és a l'editor.",
    shelved: "Python no responia i s'ha reiniciat: el widget torna al codi original. La teva edició és a l'editor, sense aplicar.",
    restored: "Codi original restaurat.",
    plain: "(editor simple: no s'ha pogut carregar l'editor de codi)",
    liveTitle: "Calculat amb el teu codi editat",
  };
  const panels = new Map(); // widget element -> its Panel (a page left behind: pruned by `live`)

  function settings() {
    const el = document.getElementById(ID.CODE);
    return el ? { enabled: el.dataset[DATA.ENABLED] !== "false", editor: el.dataset[DATA.EDITOR] } : { enabled: false };
  }

  /** The editor bundle's path; in the single file, the blob: URL its boot sets once it has
   *  unpacked the bundle (export_boot.js, after DOMContentLoaded: an exercise asks at once). */
  async function editorPath() {
    const packed = tw.embedded && document.querySelector(`script[data-url-into^="${ID.CODE}:"]`);
    for (let waited = 0; packed && !settings().editor && waited < 10000; waited += 50) await new Promise((r) => setTimeout(r, 50));
    return settings().editor;
  }

  let editorLib = null; // promise of window.twEditor, or null where it cannot load
  function loadEditor() {
    if (editorLib) return editorLib;
    editorLib = editorPath().then((src) => !src ? null : new Promise((resolve) => {
      if (window.twEditor) return resolve(window.twEditor);
      const script = document.createElement("script");
      script.src = new URL(src, ROOT).href;
      script.onload = () => resolve(window.twEditor || null);
      script.onerror = () => resolve(null);
      document.head.appendChild(script);
    }));
    return editorLib;
  }

  /** Without CodeMirror: numbered lines to read, a monospace textarea to edit. */
  function plainEditor(parent, { doc, readOnly, label }) {
    const area = document.createElement("textarea");
    area.className = "tw-code-plain";
    area.spellcheck = false;
    area.setAttribute("aria-label", label);
    area.value = doc;
    area.readOnly = readOnly;
    area.rows = Math.min(30, doc.split("\n").length + 1);
    const numbers = document.createElement("pre");
    numbers.className = "tw-code-numbers";
    numbers.setAttribute("aria-hidden", "true");
    const number = () => (numbers.textContent = area.value.split("\n").map((_, i) => i + 1).join("\n"));
    area.addEventListener("input", number);
    area.addEventListener("scroll", () => (numbers.scrollTop = area.scrollTop));
    number();
    parent.append(numbers, area);
    parent.classList.add("tw-code-fallback");
    return {
      kind: "textarea",
      get value() {
        return area.value;
      },
      setValue(text) {
        area.value = text;
        number();
      },
      setReadOnly(readOnly) {
        area.readOnly = readOnly;
      },
      markLine(n) {
        if (!n) return;
        const lines = area.value.split("\n");
        const start = lines.slice(0, n - 1).join("\n").length + (n > 1 ? 1 : 0);
        area.setSelectionRange(start, start + (lines[n - 1] || "").length);
      },
      focus: () => area.focus(),
    };
  }

  // one key per page, however its URL was spelt (/cap15/ and /cap15/index.html are one page)
  const storageKey = (w) => `tw-codi:${location.pathname.replace(/\/index\.html$/, "/")}#${w.dataset[DATA.INSTANCE]}`;
  const keeps = location.protocol !== "file:"; // from disk every file shares one localStorage

  /** The stored edit, {code}, or null. */
  function stored(w) {
    if (!keeps) return null;
    try {
      const data = JSON.parse(localStorage.getItem(storageKey(w)));
      return data && typeof data.code === "string" ? { code: data.code } : null;
    } catch {
      return null; // unreadable or no storage: no edit
    }
  }

  function store(w, data) {
    if (!keeps) return false;
    try {
      if (data) localStorage.setItem(storageKey(w), JSON.stringify(data));
      else localStorage.removeItem(storageKey(w));
      return true;
    } catch {
      return false; // private mode or full: the edit lasts this page only
    }
  }

  const button = (cls, label) => {
    const b = document.createElement("button");
    b.type = "button";
    b.className = cls;
    b.textContent = label;
    return b;
  };

  class Panel {
    constructor(w, host) {
      this.w = w;
      this.host = host; // {kernel: () => Kernel, recompute: () => void, restart: () => void}
      this.shipped = null; // {module, file, source} from the worker
      this.editor = null;
      this.code = null; // the applied edit (the code the widget runs), or null: shipped
      const saved = stored(w);
      this.draft = saved ? saved.code : null; // the editor's text, kept across reloads; never run by itself
      this.restored = saved !== null; // a draft from an earlier visit, not run yet
      this.notice = null; // a status that outlives a reload of the view (shelve)
      this.said = null; // what the panel says of an applied edit written elsewhere (applyCode), or TEXT.ok

      const head = w.querySelector(`.${CLASS.HEAD}`);
      this.mark = document.createElement("span");
      this.mark.className = "tw-code-mark";
      this.mark.textContent = TEXT.mark;
      this.pageMark = document.createElement("span");
      this.pageMark.className = "tw-code-mark tw-code-page-mark";
      this.pageMark.textContent = TEXT.pageMark;
      this.pageMark.title = TEXT.pageMarkTitle;
      this.pageMark.hidden = true;
      this.toggle = button("tw-code-toggle", TEXT.open);
      this.toggle.setAttribute("aria-expanded", "false");
      this.section = document.createElement("section");
      this.section.className = "tw-code";
      this.section.id = `${w.id}-codi`;
      this.section.hidden = true;
      this.section.setAttribute("aria-label", `Codi Python: ${w.querySelector(`.${CLASS.TITLE}`).textContent}`);
      this.toggle.setAttribute("aria-controls", this.section.id);
      this.file = document.createElement("p");
      this.file.className = "tw-code-file";
      this.view = document.createElement("div");
      this.view.className = "tw-code-view";
      const actions = document.createElement("div");
      actions.className = "tw-code-actions";
      this.buttons = {
        edit: button("tw-code-edit", TEXT.edit),
        run: button("tw-code-run", TEXT.run),
        stop: button("tw-code-stop", TEXT.stop),
        restore: button("tw-code-restore", TEXT.restore),
      };
      this.buttons.stop.hidden = true;
      actions.append(...Object.values(this.buttons));
      this.status = document.createElement("p");
      this.status.className = "tw-code-status";
      this.status.setAttribute("role", "status");
      this.status.setAttribute("aria-live", "polite");
      this.section.append(this.file, this.view, actions, this.status);
      head.append(this.mark, this.pageMark, this.toggle);
      w.querySelector(`.${CLASS.BODY}`).after(this.section);

      this.toggle.addEventListener("click", () => this.show(this.section.hidden));
      this.buttons.edit.addEventListener("click", () => this.startEditing());
      this.buttons.run.addEventListener("click", () => this.apply());
      this.buttons.stop.addEventListener("click", () => this.stop());
      this.buttons.restore.addEventListener("click", () => this.restore());
      this.refresh();
    }

    refresh() {
      const edited = this.code !== null;
      if (edited) this.w.dataset.edited = "true";
      else delete this.w.dataset.edited;
      const draft = !edited && this.draft !== null && this.restored;
      if (draft) this.w.dataset.draft = "true";
      else delete this.w.dataset.draft;
      this.mark.hidden = !edited && !draft;
      this.mark.textContent = edited ? TEXT.mark : TEXT.draftMark;
      markPage();
      const editing = this.editor !== null && this.section.dataset.mode === "edit";
      this.buttons.edit.hidden = editing;
      this.buttons.run.hidden = !editing;
      this.buttons.restore.disabled = !edited && this.draft === null;
      this.buttons.edit.disabled = this.editor === null;
    }

    say(text, error = null) {
      this.status.textContent = text;
      if (error && error.line) this.section.dataset.errorLine = String(error.line);
      else delete this.section.dataset.errorLine;
      if (this.editor) this.editor.markLine(error ? error.line : null);
    }

    async show(open) {
      this.section.hidden = !open;
      this.toggle.setAttribute("aria-expanded", String(open));
      this.toggle.textContent = open ? TEXT.close : TEXT.open;
      if (open && !this.shipped) await this.load();
    }

    /** A new worker: the module shown came from the old one (which an edit may have changed),
     *  so it is asked again, now if the panel is open, else when it opens. */
    renew() {
      this.shipped = null;
      if (!this.editor) return;
      this.editor = null;
      this.view.replaceChildren();
      if (!this.section.hidden) this.load();
    }

    /** A hung worker is restarted: an applied edit waits in the editor as a draft. */
    shelve() {
      if (this.code === null) return;
      this.code = null;
      this.restored = true;
      this.notice = TEXT.shelved; // what the panel says, also once renew() has reloaded it
      store(this.w, { code: this.draft });
      this.refresh();
      this.say(TEXT.shelved);
    }

    async load() {
      this.say(TEXT.loading);
      const kernel = this.host.kernel();
      try {
        await kernel.ready;
        this.shipped = await kernel.call(SOURCE, { widget: this.w.dataset[DATA.WIDGET] });
      } catch (error) {
        this.say(`${error.message}`);
        return;
      }
      const lib = await loadEditor();
      const options = { doc: this.draft ?? this.shipped.source, readOnly: true, label: `Codi de ${this.shipped.file}` };
      this.editor = lib ? lib.create(this.view, options) : plainEditor(this.view, options);
      this.section.dataset.editor = this.editor.kind;
      this.file.textContent = this.shipped.module.replace(/\./g, "/") + ".py" + (lib ? "" : ` ${TEXT.plain}`);
      this.section.dataset.mode = "read";
      this.say(this.code !== null ? this.said || TEXT.ok : this.notice ? this.notice
        : this.restored && this.draft !== null ? TEXT.draft : TEXT.shipped(this.shipped.file));
      if (this.draft !== null) this.startEditing();
      this.refresh();
    }

    startEditing() {
      if (!this.editor) return;
      this.section.dataset.mode = "edit";
      this.editor.setReadOnly(false);
      this.editor.focus();
      if (this.code === null && !(this.restored && this.draft !== null)) this.say(TEXT.editing); // a draft says so (load)
      this.refresh();
    }

    /** "Executa": the editor's text becomes the widget's code, and the widget recomputes. */
    apply() {
      const code = this.editor.value;
      if (code === this.shipped.source) return this.restore();
      this.code = this.draft = code;
      this.restored = false;
      this.notice = null;
      this.said = null;
      this.saved = store(this.w, { code });
      this.refresh();
      this.host.recompute();
    }

    /** An edit written elsewhere (an exercise's passing answer behind one of the module's
     *  functions, exercise.js): applied as «Executa» applies the editor's text; `said` is what
     *  the panel says while it runs. */
    applyCode(code, said) {
      this.code = this.draft = code;
      this.restored = false;
      this.notice = null;
      this.said = said;
      this.saved = store(this.w, { code });
      if (this.editor && this.shipped) {
        this.editor.setValue(code);
        this.startEditing();
      }
      this.refresh();
      this.host.recompute();
    }

    /** The call host.js makes for an edited widget: like RUN, or an Error with {kind, line}. */
    async run(kernel, params) {
      const code = this.code;
      this.say(TEXT.running);
      const slow = setTimeout(() => (this.buttons.stop.hidden = false), STOP_AFTER_MS);
      let data;
      try {
        kernel.tainted = true; // from now on this worker may differ from the shipped code anywhere
        data = await kernel.call(EDITED, { widget: this.w.dataset[DATA.WIDGET], key: storageKey(this.w), code, params,
          layout: tw.figures.shown(this.w) });
      } catch (error) {
        this.say(TEXT.error({ kind: error.kind === "stopped" ? "Aturat" : "Error", message: error.message }));
        throw error;
      } finally {
        clearTimeout(slow);
        this.buttons.stop.hidden = true;
      }
      if (data.error) {
        this.say(TEXT.error(data.error), data.error);
        throw Object.assign(new Error(TEXT.error(data.error)), data.error);
      }
      const ok = this.said || TEXT.ok;
      this.say(this.saved === false ? `${ok} ${keeps ? TEXT.notSaved : TEXT.notKept}` : ok);
      return data;
    }

    /** "Atura": a fresh worker; the widget goes back to the shipped code, the edit stays in the editor. */
    stop() {
      this.code = null;
      store(this.w, { code: this.draft });
      this.refresh();
      this.say(TEXT.stopped);
      this.host.restart();
    }

    /** "Restaura": the shipped code, and the shipped numbers: in a fresh worker if the edit
     *  has run in this one (it may have changed other modules than its own). */
    restore() {
      this.code = this.draft = null;
      this.restored = false;
      this.notice = null;
      this.said = null;
      store(this.w, null);
      if (this.editor && this.shipped) {
        this.editor.setValue(this.shipped.source);
        this.editor.setReadOnly(true);
        this.section.dataset.mode = "read";
      }
      this.refresh();
      this.say(TEXT.restored);
      if (this.host.kernel().tainted) this.host.restart();
      else this.host.recompute();
    }
  }

  /** The panels of the page shown; those of pages left (instant navigation) are forgotten. */
  function live() {
    for (const w of panels.keys()) if (!w.isConnected) panels.delete(w);
    return [...panels.values()];
  }

  /** Every widget of the page says so while any of them runs edited code. */
  function markPage() {
    const all = [...document.querySelectorAll(`.${CLASS.WIDGET}`)].filter((w) => panels.has(w)).map((w) => panels.get(w));
    const any = all.some((p) => p.code !== null);
    for (const p of all) p.pageMark.hidden = !any || p.code !== null;
    if (any) document.documentElement.dataset.twEdited = "true";
    else delete document.documentElement.dataset.twEdited;
  }

  tw.codepanel = {
    /** Adds the panel to widget `w` (unless the page turned it off); host: see Panel. */
    setup(w, host) {
      if (!settings().enabled || panels.has(w)) return;
      panels.set(w, new Panel(w, host));
    },
    /** The edited code the widget runs, or null when it runs the shipped module. */
    edited: (w) => (panels.has(w) ? panels.get(w).code : null),
    run: (w, kernel, params) => panels.get(w).run(kernel, params),
    /** Whether widget `w` has a panel that can take an edit written elsewhere (applyCode). */
    has: (w) => panels.has(w),
    /** `code` becomes widget `w`'s edit, applied at once (an exercise's passing answer). */
    apply: (w, code, said) => panels.get(w).applyCode(code, said),
    /** The editor's text (CodeMirror draws only the lines in view): for tests and the curious. */
    text: (w) => (panels.has(w) && panels.get(w).editor ? panels.get(w).editor.value : null),
    liveTitle: TEXT.liveTitle,
    /** Every panel's view asked again of the new worker (host.js restart). */
    renew: () => live().forEach((p) => p.renew()),
    /** Every applied edit back to a draft (host.js, before restarting a hung worker). */
    shelve: () => live().forEach((p) => p.shelve()),
    /** The editor, for exercise.js: a promise of the CodeMirror bundle (null where it cannot
     *  load, even on a page whose panels are off), and the textarea that stands in for it. */
    loadEditor,
    plainEditor,
  };
})();

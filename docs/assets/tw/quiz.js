// @ts-check
// Quizzes and reading checklists: answers checked in the page, progress kept in
// localStorage so it survives a reload. Markup (written in the chapters' Markdown):
//   .tw-quiz[data-quiz] > .tw-q[data-q][data-kind=open|number|choice]
//   number: data-answer, data-tolerance (relative), data-unit; choice: ul.tw-options > li[data-correct]
//   ul.tw-checklist[data-list] > li[data-item]
(() => {
  "use strict";
  const tw = window.tw; // numbers.js: readAnswer, percent

  // Stored state is a plain object of booleans ({"kv": true}), read entry by entry: an entry
  // that is not a boolean (a hand edit, another version's format) is dropped and the rest
  // kept, and the cleaned object written back, so that the answers survive the next load
  // too; anything else (a number, a string, an array, a half-written JSON) is discarded
  // whole. A bad value never breaks the quiz and "Torna a començar" always works. Storage
  // may be refused (privacy mode, file://) or full (quota): then the page still works and
  // says that it does not save.
  const load = (key) => {
    let raw = null;
    try {
      raw = localStorage.getItem(key);
    } catch {
      return {};
    }
    let value = null;
    try {
      value = JSON.parse(raw);
    } catch {
      /* not JSON: discarded below */
    }
    const valid = value !== null && typeof value === "object" && !Array.isArray(value);
    const state = Object.create(null);
    if (valid) for (const [k, v] of Object.entries(value)) if (v === true || v === false) state[k] = v;
    if (raw === null || (valid && Object.keys(state).length === Object.keys(value).length)) return state;
    try {
      if (valid) localStorage.setItem(key, JSON.stringify(state)); // the good entries, without the bad
      else localStorage.removeItem(key); // nothing to keep: start afresh
    } catch {
      /* storage refused or full: the good entries still count on this page */
    }
    return state;
  };
  const save = (key, value) => {
    try {
      localStorage.setItem(key, JSON.stringify(value));
      return true;
    } catch {
      return false; // quota or storage refused: the caller says "not saved"
    }
  };
  const NOT_SAVED = "El progrés no es desa en aquest navegador (emmagatzematge no disponible).";
  const noteSaved = (anchor, ok) => {
    // one note just before `anchor` (the quiz's progress bar, a checklist), only while failing
    const prev = anchor.previousElementSibling;
    const note = prev && prev.classList.contains("tw-not-saved") ? prev : null;
    if (ok) note?.remove();
    else if (!note) {
      const p = document.createElement("p");
      p.className = "tw-not-saved";
      p.setAttribute("role", "status");
      p.textContent = NOT_SAVED;
      anchor.before(p);
    }
  };
  const parseNumber = tw.readAnswer; // numbers.js: Catalan or plain ("68.719.476.736", "6,87e10")
  /** A margin or an error as a percentage: one decimal where it has one (2 %, 2,5 %), fmt.percent's digits. */
  const pct = (/** @type {number} */ x) => tw.percent(x, Math.round(x * 1000) % 10 === 0 ? 0 : 1);

  function setupQuiz(quiz) {
    const key = `tw-quiz:${quiz.dataset.quiz}`;
    const state = load(key);
    const questions = [...quiz.querySelectorAll(".tw-q")];
    const progress = document.createElement("p");
    progress.className = "tw-quiz-progress";
    progress.setAttribute("role", "status");
    const reset = document.createElement("button");
    reset.type = "button";
    reset.className = "tw-quiz-reset";
    reset.textContent = "Torna a començar";
    const bar = document.createElement("div");
    bar.className = "tw-quiz-bar";
    bar.append(progress, reset);
    quiz.prepend(bar);

    const render = () => {
      const done = questions.filter((q) => state[q.dataset.q]).length;
      progress.textContent = `${done} de ${questions.length} resoltes`;
      questions.forEach((q) => q.classList.toggle("tw-solved", Boolean(state[q.dataset.q])));
    };
    const solve = (q) => {
      state[q.dataset.q] = true;
      noteSaved(bar, save(key, state));
      render();
    };

    questions.forEach((q) => {
      const kind = q.dataset.kind;
      if (kind === "open") {
        const details = q.querySelector("details.tw-model");
        details?.addEventListener("toggle", () => details.open && solve(q));
      } else if (kind === "number") {
        const answer = Number(q.dataset.answer);
        const tolerance = Number(q.dataset.tolerance || 0);
        const form = document.createElement("form");
        form.className = "tw-number";
        const id = `tw-q-${q.dataset.q}`;
        form.innerHTML =
          `<label for="${id}">La teva resposta${q.dataset.unit ? ` (${q.dataset.unit})` : ""}</label>` +
          `<input id="${id}" type="text" inputmode="decimal" autocomplete="off">` +
          `<button type="submit">Comprova</button><span class="tw-feedback" role="status" aria-live="polite"></span>` +
          `<small>Marge acceptat: ${pct(tolerance)}</small>`;
        const feedback = /** @type {HTMLElement} */ (form.querySelector(".tw-feedback"));
        form.addEventListener("submit", (e) => {
          e.preventDefault();
          const value = parseNumber(form.querySelector("input").value);
          if (Number.isNaN(value)) {
            feedback.textContent = "Escriu un nombre (per exemple 1.234.567 o 1,2e6).";
            feedback.dataset.ok = "false";
            return;
          }
          const error = Math.abs(value - answer) / Math.abs(answer);
          const ok = error <= tolerance;
          feedback.dataset.ok = String(ok);
          feedback.textContent = ok
            ? `Correcte: a ${pct(error)} de la resposta, dins del marge del ${pct(tolerance)}.`
            : `Encara no: et separa un ${pct(error)} de la resposta, i el marge és del ${pct(tolerance)}.`;
          if (ok) solve(q);
        });
        q.append(form);
      } else if (kind === "choice") {
        q.querySelectorAll(".tw-options li").forEach((li) => {
          const button = document.createElement("button");
          button.type = "button";
          button.className = "tw-choose";
          button.append(...li.querySelector(".tw-option").childNodes);
          li.querySelector(".tw-option").replaceWith(button);
          button.addEventListener("click", () => {
            li.classList.add(li.dataset.correct ? "tw-right" : "tw-wrong");
            li.querySelector(".tw-why").hidden = false;
            if (li.dataset.correct) solve(q);
          });
          li.querySelector(".tw-why").hidden = true;
        });
      }
    });
    reset.addEventListener("click", () => {
      Object.keys(state).forEach((k) => delete state[k]);
      noteSaved(bar, save(key, state));
      quiz.querySelectorAll(".tw-right, .tw-wrong").forEach((li) => li.classList.remove("tw-right", "tw-wrong"));
      quiz.querySelectorAll(".tw-why").forEach((why) => (why.hidden = true));
      quiz.querySelectorAll(".tw-feedback").forEach((f) => (f.textContent = ""));
      quiz.querySelectorAll("details.tw-model").forEach((d) => (d.open = false));
      render();
    });
    render();
  }

  function setupChecklist(list) {
    const key = `tw-list:${list.dataset.list}`;
    const state = load(key);
    list.querySelectorAll("li[data-item]").forEach((li) => {
      const box = document.createElement("input");
      box.type = "checkbox";
      box.id = `tw-${list.dataset.list}-${li.dataset.item}`;
      box.checked = Boolean(state[li.dataset.item]);
      const label = document.createElement("label");
      label.htmlFor = box.id;
      label.append(...li.childNodes);
      li.append(box, label);
      box.addEventListener("change", () => {
        state[li.dataset.item] = box.checked;
        noteSaved(list, save(key, state));
      });
    });
  }

  const start = () => {
    document.querySelectorAll(".tw-quiz:not([data-ready])").forEach((/** @type {HTMLElement} */ q) => {
      q.dataset.ready = "true";
      setupQuiz(q);
    });
    document.querySelectorAll(".tw-checklist:not([data-ready])").forEach((/** @type {HTMLElement} */ l) => {
      l.dataset.ready = "true";
      setupChecklist(l);
    });
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();

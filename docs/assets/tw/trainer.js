// @ts-check
// Training as a capability: any widget whose HTML has a .tw-train block (a widget declared
// trainable in Python) gets a start and a cancel button driving one training call in the
// kernel; several on one page each run their own call. The curve is redrawn at each step;
// when a run ends, `onTrained` lets the page recompute with the new weights. A run belongs
// to the page that started it: leaving the page (instant navigation) cancels it, so a
// page never shows a run it did not start and two runs never share the worker.
(() => {
  "use strict";
  const tw = (window.tw ||= /** @type {TW} */ ({}));
  if (tw.trainer) return;
  const { CLASS, DATA } = tw.protocol.DOM; // what the build's HTML carries (widgets_py/engine/dom.py)
  const TEXT = {
    done: (status) => `Entrenat al navegador: ${status}. Els widgets ja fan servir els pesos nous.`,
    cancelled: "Entrenament aturat; es mantenen els pesos d'abans.",
    failed: (why) => `L'entrenament ha fallat: ${why}.`,
  };

  /** Wire the widget's training block; returns {enable(), leave()} or null if it has none. */
  function setup(w, { kernel, onTrained, onStopped }) {
    const block = w.querySelector(`.${CLASS.TRAIN}`);
    if (!block) return null;
    const parts = {
      start: block.querySelector(`.${CLASS.TRAIN_START}`),
      cancel: block.querySelector(`.${CLASS.TRAIN_CANCEL}`),
      bar: block.querySelector(`.${CLASS.TRAIN_PROGRESS}`),
      status: block.querySelector(`.${CLASS.TRAIN_STATUS}`),
    };
    let running = null; // the pending training call
    let left = false; // the page was swapped for another: this block is no longer shown

    const show = (on) => {
      parts.start.disabled = on;
      parts.cancel.hidden = !on;
      parts.bar.hidden = !on;
    };
    const step = (data) => {
      tw.figures.show(w, data); // the curve, drawn for the layout shown, cleaned (figures.js, markup.js)
      parts.bar.value = data.step / data.steps;
      parts.status.textContent = data.status;
      w.dataset.trainStep = data.step;
    };

    parts.start.addEventListener("click", async () => {
      show(true);
      const layout = tw.figures.shown(w);
      running = kernel().call(tw.protocol.CALLS.TRAIN, { widget: w.dataset[DATA.WIDGET], params: tw.readParams(w), layout }, step);
      try {
        const data = await running;
        show(false);
        if (data.cancelled && left) {
          // stopped because its page was left: nothing here is shown any more
        } else if (data.cancelled) {
          parts.status.textContent = TEXT.cancelled;
          onStopped(w);
        } else {
          step(data);
          parts.status.textContent = TEXT.done(data.status);
          w.dataset.trainMatmul = data.matmul; // "wasm-simd", or "einsum" where the kernel did not load
          w.dataset.trainElapsed = data.elapsed_s;
          onTrained(w);
        }
      } catch (error) {
        show(false);
        parts.status.textContent = TEXT.failed(error.message);
        if (!left) onStopped(w);
      } finally {
        running = null;
      }
    });
    parts.cancel.addEventListener("click", () => running && running.cancel());
    return {
      enable: () => (parts.start.disabled = running !== null),
      leave: () => {
        left = true;
        if (running) running.cancel();
      },
    };
  }

  tw.trainer = { setup };
})();

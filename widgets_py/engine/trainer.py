"""A training run the browser drives: one trained model retrained from scratch, a few steps
at a time, that replaces the model's committed weights for every widget when it ends.

Any widget can offer it by declaring `Trainable(model=...)` (widget.py); the worker
creates a `Run` per training call, and several can exist at once.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from ..maths import corpus, gpt, pretrained, train
from . import fmt, session


def smooth(history: list[float], window: int = 20) -> np.ndarray:
    """A moving average of the loss history, the first `window - 1` points left as they are."""
    h = np.asarray(history, np.float64)
    if len(h) < window:
        return h
    kernel = np.ones(window) / window
    return np.concatenate([h[:window - 1], np.convolve(h, kernel, mode="valid")])  # [n]


class Run:
    """Training `model` from scratch for `steps` steps with `seed`, on the corpus's training text."""

    def __init__(self, model: str, steps: int, seed: int):
        self.model = model
        self.cfg, tc = pretrained.specs()[model]
        self.tc = replace(tc, steps=steps, seed=seed)
        self.steps = train.steps(self.cfg, self.tc, corpus.data()[0])
        self.history: list[float] = []
        self.params = None
        self.started = time.perf_counter()

    @property
    def done(self) -> bool:
        return len(self.history) >= self.tc.steps

    def advance(self, n: int) -> dict:
        """Run up to n more steps; at the end, the new weights replace the model's."""
        for _ in range(n):
            step = next(self.steps, None)
            if step is None:
                break
            _, loss, self.params = step
            self.history.append(loss)
        if self.done:
            session.override(self.model, self.params, self.history)
        elapsed = time.perf_counter() - self.started
        status = (f"Pas {fmt.number(len(self.history))} de {fmt.number(self.tc.steps)} · pèrdua "
                  f"{fmt.number(float(smooth(self.history)[-1]), 3)} nats · {fmt.number(elapsed, 1)} s")
        return {"step": len(self.history), "steps": self.tc.steps, "loss": self.history[-1], "done": self.done,
                "status": status, "elapsed_s": elapsed, "ms_per_step": 1e3 * elapsed / len(self.history),
                "matmul": gpt.matmul_path()}

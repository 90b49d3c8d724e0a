"""Entry point for the Pyodide worker: one JSON call per control change."""

from __future__ import annotations

import json

from . import registry


def render(name: str, params_json: str) -> str:
    """Run widget `name` with JSON params; return values, their Catalan text and the figure."""
    result = registry.run(name, json.loads(params_json))
    return json.dumps({
        "values": result.values,
        "text": registry.formatted(name, result.values),
        "figure": result.figure,
        "alt": result.alt,
        "tables": result.tables,
    }, ensure_ascii=False)


class Trainer:
    """A from-scratch training run that the worker advances a few steps at a time."""

    def __init__(self, params_json: str):
        import time
        from dataclasses import replace

        from . import corpus, pretrained, train

        p = registry.validate_params("training", json.loads(params_json))
        self.cfg, tc = pretrained.specs()["mini"]
        self.tc = replace(tc, steps=p["steps"], seed=p["seed"])
        self.run = train.steps(self.cfg, self.tc, corpus.data()[0])
        self.history: list[float] = []
        self.params = None
        self.started = time.perf_counter()

    def advance(self, n: int) -> str:
        """Run up to n more steps; JSON with progress and the loss curve so far."""
        import time

        from . import pretrained, training

        for _ in range(n):
            step = next(self.run, None)
            if step is None:
                break
            _, loss, self.params = step
            self.history.append(loss)
        done = len(self.history) >= self.tc.steps
        if done:
            pretrained.override("mini", self.params, self.history)
        elapsed = time.perf_counter() - self.started
        from . import fmt

        status = (f"Pas {fmt.number(len(self.history))} de {fmt.number(self.tc.steps)} · pèrdua "
                  f"{fmt.number(float(training.smooth(self.history)[-1]), 3)} nats · {fmt.number(elapsed, 1)} s")
        return json.dumps({
            "step": len(self.history), "steps": self.tc.steps, "loss": self.history[-1], "done": done,
            "status": status,
            "elapsed_s": elapsed, "ms_per_step": 1e3 * elapsed / len(self.history),
            "figure": training.curve(self.history, self.tc.steps, "Entrenant al navegador"),
        })

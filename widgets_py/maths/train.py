"""Training the mini-GPT: random windows of the corpus, AdamW, a schedule, a held-out loss.

Deterministic from a seed; `train` reports (step, loss) through a callback (`./dev train`).
The browser does not call it: its trainer (engine/trainer.py) takes `steps` a few at a time,
and cancelling is not asking for the next.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from . import gpt, products


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 1500  # optimiser steps
    batch: int = 16  # windows per step
    lr: float = 1.5e-2  # peak learning rate
    warmup: int = 20  # linear warm-up steps, then cosine decay to lr/10
    weight_decay: float = 0.01  # AdamW, on matrices only
    seed: int = 1234  # init and batch sampling


def lr_at(step: int, tc: TrainConfig) -> float:
    if step < tc.warmup:
        return tc.lr * (step + 1) / tc.warmup
    t = (step - tc.warmup) / max(1, tc.steps - tc.warmup)
    return tc.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))


def batch(data: np.ndarray, context: int, size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    starts = rng.integers(0, len(data) - context - 1, size)  # [B]
    idx = starts[:, None] + np.arange(context)  # [B, T]
    return data[idx], data[idx + 1]


def flat(p: dict[str, np.ndarray]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """One float32 buffer holding every parameter, and the same dict as views into it."""
    buf = np.concatenate([v.ravel() for v in p.values()])  # [n_params]
    views, at = {}, 0
    for k, v in p.items():
        views[k] = buf[at:at + v.size].reshape(v.shape)
        at += v.size
    return buf, views


class AdamW:
    """AdamW over the flat buffer of `flat`: a step is a few whole-model array operations, not
    a dozen per tensor (each numpy call costs microseconds in Pyodide; per tensor, the update
    was a tenth of a training step there). Element by element the same float32 arithmetic."""

    def __init__(self, p: dict[str, np.ndarray], tc: TrainConfig, b1=0.9, b2=0.99, eps=1e-8):
        self.keys, self.tc, self.b1, self.b2, self.eps, self.t = list(p), tc, b1, b2, eps, 0
        sizes = [p[k].size for k in self.keys]
        self.matrix = np.repeat([p[k].ndim == 2 for k in self.keys], sizes)  # [n] decoupled decay on matrices only
        self.m = np.zeros(sum(sizes), np.float32)  # [n] first moment
        self.v = np.zeros(sum(sizes), np.float32)  # [n] second moment
        self.decayed = np.where(self.matrix, -1, 0).astype(np.int32)  # [n] the kernel's mask

    def step(self, buf: np.ndarray, grads: dict[str, np.ndarray], lr: float) -> None:
        """One update of buf [n] in place, from the gradients of the keys given at creation."""
        self.t += 1
        b1, b2, t, m, v = self.b1, self.b2, self.t, self.m, self.v
        g = np.concatenate([grads[k].ravel() for k in self.keys])  # [n]
        kernel = products.current().kernel
        if kernel is not None:  # in the browser one call, the same float32 operations (kernel.py's adamw)
            decay = np.float32(1 - lr * self.tc.weight_decay)
            kernel.adamw(buf, m, v, g, self.decayed, 1 - b1, 1 - b2, decay, lr, 1 - b1**t, 1 - b2**t, self.eps)
            return
        m += (1 - b1) * (g - m)
        v += (1 - b2) * (g * g - v)
        buf *= np.where(self.matrix, np.float32(1 - lr * self.tc.weight_decay), np.float32(1))
        buf -= lr * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + self.eps)


def steps(cfg: gpt.GPTConfig, tc: TrainConfig, data: np.ndarray, init: dict | None = None
          ) -> Iterator[tuple[int, float, dict]]:
    """Yields (step, training loss, params) after each step: the browser drives this. The
    params are views into one buffer (`flat`), updated in place; they start from `init`
    (copied), or from gpt.init with the run's seed."""
    rng = np.random.default_rng(tc.seed)
    buf, p = flat(gpt.init(cfg, tc.seed) if init is None else init)
    opt = AdamW(p, tc)
    for step in range(tc.steps):
        x, y = batch(data, cfg.context, tc.batch, rng)
        _, loss, cache = gpt.forward(p, cfg, x, y)
        opt.step(buf, gpt.backward(p, cfg, cache), lr_at(step, tc))
        yield step, loss, p


def train(cfg: gpt.GPTConfig, tc: TrainConfig, data: np.ndarray,
          progress: Callable[[int, float], None] | None = None) -> tuple[dict, list[float]]:
    history, p = [], None
    for step, loss, p in steps(cfg, tc, data):
        history.append(loss)
        if progress:
            progress(step, loss)
    return p, history


EVAL_TOKENS = 8192  # held-out characters evaluate() scores by default (the first ones): 64 windows of 128


def evaluate(p, cfg: gpt.GPTConfig, data: np.ndarray, tokens: int = EVAL_TOKENS) -> float:
    """Mean cross-entropy (nats/char) on the first `tokens` of data, in context windows."""
    return gpt.loss(p, cfg, *windows(cfg, data, tokens))


def windows(cfg: gpt.GPTConfig, data: np.ndarray, tokens: int) -> tuple[np.ndarray, np.ndarray]:
    """evaluate()'s inputs and targets: the first `tokens` of data (whole windows), [N, T] each."""
    n = min(tokens, len(data) - 1) // cfg.context * cfg.context
    return data[:n].reshape(-1, cfg.context), data[1:n + 1].reshape(-1, cfg.context)


def flops_per_step(cfg: gpt.GPTConfig, batch_size: int) -> float:
    """FLOPs of one training step, from the shapes: forward, and backward at twice that."""
    t = cfg.context
    matmul = gpt.macs_per_token(cfg)  # multiply-adds per token
    attention = gpt.attention_macs_per_token(cfg, (t + 1) / 2)  # mean over the window's positions
    return 3 * 2 * (matmul + attention) * batch_size * t

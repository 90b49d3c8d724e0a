"""gpt's ops run now, in numpy: natively (BLAS), and in Pyodide wherever the kernel does not
run a config. tape.py records the same ops for the browser's kernel; gpt.py writes the model
once against either (`block(ops, ...)`).

Each op calls its layer in layers.py, and with `keep` stores the layer's cache by name, as
the kernel keeps what each backward reads; the backward ops read them and gather the
parameters' gradients in `grads`.
"""

from __future__ import annotations

import numpy as np

from .layers import (ACTIVATIONS, NORMS, attention, attention_backward, linear, linear_backward, maxima,
                     merge_heads, mm, mm_nt, mm_tn, picked, split_heads, sums)


class Eager:
    """A runner (gpt.runner) and its ops: model `cfg` with parameters p."""

    def __init__(self, p: dict, cfg):
        self.p, self.cfg = p, cfg
        self.keep = False
        self.caches: dict[str, object] = {}  # layer name -> its cache, while keep
        self.grads: dict[str, np.ndarray] = {}
        self._then = None  # the backward start() left for finish()

    # ---- passes --------------------------------------------------------------------------

    def call(self, fn, **inputs):
        """fn(ops, cfg, **inputs): a pass of gpt.py (the kernel runs it in one call)."""
        return fn(self, self.cfg, **inputs)

    def start(self, forward, backward, **inputs):
        """A training step's forward, each layer keeping its cache; finish() runs `backward`."""
        self.keep, self._then = True, (backward, inputs)
        return forward(self, self.cfg, **inputs)

    def finish(self) -> dict[str, np.ndarray]:
        backward, inputs = self._then
        backward(self, self.cfg, **inputs)
        return self.grads

    def _kept(self, name: str, out, cache):
        if self.keep:
            self.caches[name] = cache
        return out

    # ---- the forward ----------------------------------------------------------------------

    def cache(self, layers: int, shape: tuple) -> list[list]:
        """Where each layer's attention leaves its new keys and values (of `shape`)."""
        return [[None, None] for _ in range(layers)]

    def norm(self, name: str, x):
        return self._kept(name, *NORMS[self.cfg.norm][0](x, self.p[f"{name}.w"], self.p.get(f"{name}.b")))

    def linear(self, name: str, x):
        return self._kept(name, *linear(x, self.p[f"{name}.w"], self.p[f"{name}.b"]))

    def act(self, name: str, x):
        return self._kept(name, *ACTIVATIONS[self.cfg.activation][0](x))

    def attention(self, name: str, qkv, past=None, new=None, last=False):
        """qkv [B, T, 3C] -> y [B, T, C]; after past (keys, values [B, H, P, hs]), leaving this
        layer's keys and values [B, H, T, hs] in `new` if given. last: the last query only."""
        c = qkv.shape[-1] // 3
        q, k, v = (split_heads(qkv[..., j * c:(j + 1) * c], self.cfg.heads) for j in range(3))  # np.split's views
        if new is not None:
            new[0], new[1] = k, v
        offset = 0
        if past is not None:
            offset = past[0].shape[-2]
            k, v = np.concatenate([past[0], k], -2), np.concatenate([past[1], v], -2)
        if last:  # the last query sees every key
            q, offset = q[..., -1:, :], k.shape[-2] - 1
        y, cache = attention(q, k, v, causal_offset=offset)
        return self._kept(name, merge_heads(y), cache)

    def last(self, x):
        """Each sequence's last position: x [B, T, C] -> [B, 1, C]."""
        return x[:, -1:]

    def add(self, x, y):
        return x + y

    def head(self, xf):
        """The tied head: xf [B, T, C] @ wte.T -> logits [B, T, V]."""
        return self._kept("head", mm_nt(xf, self.p["wte"]), (xf, self.p["wte"]))

    def nll(self, logits, targets):
        """Each row's target logit, max and sum of exponentials [B, T, 1]: a held-out loss's parts."""
        top = maxima(logits)
        return picked(logits, targets), top, sums(np.exp(logits - top))

    def cross_entropy(self, logits, targets):
        """Each row's max and sum of exponentials [B, T, 1]; the exponentials kept."""
        top = maxima(logits)
        e = np.exp(logits - top)  # [B, T, V]
        total = sums(e)  # [B, T, 1]
        self.caches["loss"] = (e, total, targets)
        return top, total

    # ---- the backward ---------------------------------------------------------------------

    def cross_entropy_backward(self):
        e, total, targets = self.caches["loss"]
        d = e / total  # softmax, from the forward's exponentials (one exp fewer per step)
        np.put_along_axis(d, targets[..., None], np.take_along_axis(d, targets[..., None], -1) - 1, -1)
        d /= targets.size  # [B, T, V]
        return d

    def head_backward(self, dlogits):
        xf, wte = self.caches["head"]
        self.grads["wte"] = mm_tn(dlogits.reshape(-1, wte.shape[0]), xf.reshape(-1, wte.shape[1]))
        return mm(dlogits, wte)  # [B, T, C]

    def norm_backward(self, name: str, dout):
        dx, self.grads[f"{name}.w"], db = NORMS[self.cfg.norm][1](dout, self.caches[name])
        if db is not None:
            self.grads[f"{name}.b"] = db
        return dx

    def linear_backward(self, name: str, dout):
        dx, self.grads[f"{name}.w"], self.grads[f"{name}.b"] = linear_backward(dout, self.caches[name])
        return dx

    def act_backward(self, name: str, d):
        return ACTIVATIONS[self.cfg.activation][1](d, self.caches[name])

    def attention_backward(self, name: str, dy):
        dq, dk, dv = attention_backward(split_heads(dy, self.cfg.heads), self.caches[name])
        return np.concatenate([merge_heads(dq), merge_heads(dk), merge_heads(dv)], -1)

    def embedding_backward(self, idx, dx) -> None:
        np.add.at(self.grads["wte"], idx, dx)  # accumulate into the rows used


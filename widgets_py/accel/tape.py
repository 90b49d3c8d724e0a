"""gpt's layers recorded as the browser kernel's primitives: a Tape is the `ops` that gpt.py's
model runs on to become one program (program.py), which the kernel runs in one call.

gpt.py writes the model once, against ops (`norm`, `linear`, `act`, `attention`, `add`, the
tied `head` and the losses, and each one's backward); eager.py runs those ops now in numpy.
A Tape runs nothing: each op allocates its outputs and records the primitives that compute
them, in gpt.py's order, so the same block, whatever it is, becomes a program. What a
backward reads is kept by layer name (`kept`), as eager.py keeps each layer's cache.

The parameters lie in one input, `weights`, in the model's packing order (gpt.shapes); the
gradients in an output of the same layout, `grads`. A KV cache's past has P positions, the
program's free size (program.P): one program serves every step of a decode.
"""

from __future__ import annotations

import numpy as np

from .builder import Builder
from .program import Ref, dim, size

ACTIVATIONS = ("relu", "gelu")  # the kernel's (accel.backend refuses a config with any other)
NORMS = {"layernorm": 0, "rmsnorm": 1}  # -> the norm primitives' `rms`


class Tape(Builder):
    """The ops of one pass of model `cfg` with parameters of `shapes` (name -> shape, in
    packing order), recorded. keep: each layer keeps what its backward reads (training)."""

    def __init__(self, cfg, shapes: dict[str, tuple], keep: bool = False):
        super().__init__()
        self.cfg, self.keep_caches = cfg, keep
        self.params, at = {}, 0
        for name, shape in shapes.items():
            self.params[name] = (at, tuple(shape))
            at += size(shape)
        self.weights = self.input("weights", (at,))
        self.keep(self.weights)  # never written over: the next run of the program may find them there
        self.grads: Ref | None = None

    def w(self, name: str) -> Ref:
        """A parameter, where it lies in `weights`."""
        at, shape = self.params[name]
        return Ref(self.weights.buffer, at, shape)

    def g(self, name: str) -> Ref:
        """A parameter's gradient, where it lies in `grads` (the weights' layout)."""
        if self.grads is None:
            self.grads = self.new(self.weights.shape)
        at, shape = self.params[name]
        return Ref(self.grads.buffer, at, shape)

    def _kept(self, name: str, kind: str, *xs: Ref) -> None:
        if self.keep_caches:
            self.kept[name] = (kind, *xs)
            self.keep(*xs)

    # ---- the forward ------------------------------------------------------------------------

    def cache(self, layers: int, shape: tuple) -> Ref:
        """Where each layer's attention writes its new keys and values: [L, 2, *shape]."""
        return self.new((layers, 2, *shape))

    def norm(self, name: str, x: Ref) -> Ref:
        rms = NORMS[self.cfg.norm]
        out = self.new(x.shape)
        norm, rstd = (self.new(x.shape), self.new((*x.shape[:-1], 1))) if self.keep_caches else (None, None)
        self.emit("norm", x=x, out=out, w=self.w(f"{name}.w"), b=None if rms else self.w(f"{name}.b"),
                  keep_norm=norm, keep_rstd=rstd, rows=x.rows, c=x.width, rms=rms)
        self._kept(name, "norm", norm, rstd)
        return out

    def linear(self, name: str, x: Ref) -> Ref:
        nin, nout = self.params[f"{name}.w"][1]
        out = self.new((*x.shape[:-1], nout))  # [..., nin] -> [..., nout]
        self.emit("product", a=x, b=self.w(f"{name}.w"), c=out, m=x.rows, k=nin, n=nout, sa_i=nin, sa_p=1, count=1)
        self.emit("bias", x=out, b=self.w(f"{name}.b"), rows=x.rows, n=nout, relu=0)
        self._kept(name, "linear", x)
        return out

    def act(self, name: str, x: Ref) -> Ref:
        if self.cfg.activation == "relu":
            op, fields, _ = self.ops[-1] if self.ops else (None, {}, None)
            if op == "bias" and fields["x"].buffer is x.buffer and not fields["relu"]:  # the bias that made x
                fields["relu"] = 1  # folds ReLU in: one pass over x, not two
                out = self.in_place(x, "bias with ReLU")
            else:
                out = self.new(x.shape)
                self.emit("relu", x=x, out=out, n=size(x.shape))
            self._kept(name, "relu", out)  # its backward reads the output's sign
            return out
        out = self.new(x.shape)
        self.emit("gelu", x=x, out=out, n=size(x.shape))
        self._kept(name, "gelu", x)  # its backward reads the input
        return out

    def attention(self, name: str, qkv: Ref, past: Ref | None = None, new: Ref | None = None,
                  last: bool = False) -> Ref:
        """Causal attention over qkv [B, T, 3C]; after `past` ([2, B, H, P, hs]: this layer's
        cached keys, then values) if any, writing this layer's keys and values to `new`
        ([2, B, H, T, hs]) if given. -> y [B, T, C]; with last, each sequence's last row
        [B, 1, C]: the kernel computes every query (a call's cost outweighs the rows saved)."""
        *lead, t, c3 = qkv.shape
        c, heads, b = c3 // 3, self.cfg.heads, size(lead)
        hs, p = c // heads, 0 if past is None else past[0].shape[-2]
        if (past is not None or new is not None) and b != 1:
            raise ValueError(f"a KV cache holds one sequence, not {b}")
        n = p + t  # keys a query sees at most
        y = self.new((*lead, t, c))
        att = self.new((b, heads, t, t)) if self.keep_caches else None  # the weights, kept for the backward
        self.emit("attention", qkv=qkv, y=y, kv_past=past, kv_new=new, att=att, kt=self.new((hs, n)),
                  vs=self.new((n, hs)), sc=None if att else self.new((t, n)), yo=self.new((t, hs)),
                  stats=self.new((2, t)), rows=b * t, t=t, c=c, heads=heads, past=p,
                  scale=np.float32(1.0 / np.sqrt(hs)))
        self._kept(name, "attention", qkv, att)
        return self.last(y) if last else y

    def last(self, x: Ref) -> Ref:
        """Each sequence's last position: x [B, T, C] -> [B, 1, C], a row copied per sequence."""
        *lead, t, c = x.shape
        out = self.new((*lead, 1, c))
        for s in range(size(lead)):
            self.emit("copy", dst=Ref(out.buffer, s * c, (c,)), src=Ref(x.buffer, dim(x.offset) + (s * t + t - 1) * c, (c,)), n=c)
        return out

    def add(self, x: Ref, y: Ref) -> Ref:
        out = self.new(x.shape)
        self.emit("add", out=out, x=x, y=y, n=size(x.shape))
        return out

    def head(self, xf: Ref) -> Ref:
        """The tied head: xf [B, T, C] @ wte.T -> logits [B, T, V]."""
        vocab, c = self.params["wte"][1]
        wt = self.new((c, vocab))
        self.emit("transpose", dst=wt, src=self.w("wte"), rows=vocab, cols=c)
        logits = self.new((*xf.shape[:-1], vocab))
        self.emit("product", a=xf, b=wt, c=logits, m=xf.rows, k=c, n=vocab, sa_i=c, sa_p=1, count=1)
        self._kept("head", "head", xf)
        return logits

    def _stats(self, logits: Ref) -> tuple[Ref, Ref, Ref]:
        """A softmax's maxima, then its sums: (the buffer, max [..., 1], sum [..., 1])."""
        stats = self.new((2, logits.rows))
        lead = (*logits.shape[:-1], 1)
        return stats, Ref(stats.buffer, 0, lead), Ref(stats.buffer, logits.rows, lead)

    def nll(self, logits: Ref, targets: Ref) -> tuple[Ref, Ref, Ref]:
        """A held-out loss's parts: each row's target logit, max and sum of exponentials,
        each [B, T, 1]; the logits are overwritten (their exponentials)."""
        picked = self.new((*logits.shape[:-1], 1))
        self.emit("pick", dst=picked, src=logits, ids=targets, rows=logits.rows, n=logits.width)
        stats, top, total = self._stats(logits)
        self.emit("softmax", x=logits, stats=stats, rows=logits.rows, n=logits.width, tq=1,
                  offset=logits.width - 1, norm=0, scale=1.0)
        self.in_place(logits, "a held-out loss's exponentials")
        return picked, top, total

    def cross_entropy(self, logits: Ref, targets: Ref) -> tuple[Ref, Ref]:
        """Training's loss: each row's max and sum of exponentials [B, T, 1]; the softmax kept."""
        probs = self.new(logits.shape)
        self.emit("copy", dst=probs, src=logits, n=size(logits.shape))
        stats, top, total = self._stats(logits)
        self.emit("softmax", x=probs, stats=stats, rows=logits.rows, n=logits.width, tq=1,
                  offset=logits.width - 1, norm=1, scale=1.0)
        self.kept["loss"] = ("softmax", probs, targets)
        self.keep(probs)
        return top, total

    # ---- the backward ----------------------------------------------------------------------

    def cross_entropy_backward(self) -> Ref:
        """The mean cross-entropy's gradient of the logits: (softmax - one-hot) / positions."""
        _, probs, targets = self.kept["loss"]
        self.emit("onehot", x=probs, ids=targets, rows=probs.rows, n=probs.width)
        self.emit("divide", x=probs, n=size(probs.shape), s=np.float32(size(targets.shape)))
        return self.in_place(probs, "the loss's backward")

    def head_backward(self, dlogits: Ref) -> Ref:
        """wte's gradient from the head (dlogits^T @ xf), and xf's (dlogits @ wte)."""
        xf = self.kept["head"][1]
        vocab, c = self.params["wte"][1]
        dw = self.new((vocab, c))  # apart: a product writes past its last row
        self.emit("product", a=dlogits, b=xf, c=dw, m=vocab, k=xf.rows, n=c, sa_i=1, sa_p=vocab, count=1)
        self.emit("copy", dst=self.g("wte"), src=dw, n=vocab * c)
        dxf = self.new(xf.shape)
        self.emit("product", a=dlogits, b=self.w("wte"), c=dxf, m=xf.rows, k=vocab, n=c, sa_i=vocab, sa_p=1, count=1)
        return dxf

    def norm_backward(self, name: str, dout: Ref) -> Ref:
        _, norm, rstd = self.kept[name]
        rms = NORMS[self.cfg.norm]
        dx = self.new(dout.shape)
        self.emit("norm_backward", dout=dout, norm=norm, rstd=rstd, w=self.w(f"{name}.w"), dx=dx,
                  gw=self.g(f"{name}.w"), gb=None if rms else self.g(f"{name}.b"), rows=dout.rows,
                  c=dout.width, rms=rms)
        return dx

    def linear_backward(self, name: str, dout: Ref) -> Ref:
        """x's gradient dout @ W^T; W's, x^T @ dout (apart, then copied: a product writes past
        its last row, into the next parameter's gradient); b's, the column sums of dout."""
        x = self.kept[name][1]
        nin, nout = self.params[f"{name}.w"][1]
        wt = self.new((nout, nin))
        self.emit("transpose", dst=wt, src=self.w(f"{name}.w"), rows=nin, cols=nout)
        dx = self.new((*dout.shape[:-1], nin))
        self.emit("product", a=dout, b=wt, c=dx, m=dout.rows, k=nout, n=nin, sa_i=nout, sa_p=1, count=1)
        dw = self.new((nin, nout))
        self.emit("product", a=x, b=dout, c=dw, m=nin, k=dout.rows, n=nout, sa_i=1, sa_p=nin, count=1)
        self.emit("copy", dst=self.g(f"{name}.w"), src=dw, n=nin * nout)
        self.emit("colsum", dst=self.g(f"{name}.b"), src=dout, rows=dout.rows, n=nout)
        return dx

    def act_backward(self, name: str, d: Ref) -> Ref:
        kind, x = self.kept[name]
        self.emit(f"{kind}_backward", d=d, **{"act" if kind == "relu" else "x": x}, n=size(d.shape))
        return self.in_place(d, f"{kind}'s backward")

    def attention_backward(self, name: str, dy: Ref) -> Ref:
        _, qkv, att = self.kept[name]
        *lead, t, c = dy.shape
        heads = self.cfg.heads
        hs = c // heads
        dqkv = self.new(qkv.shape)
        self.emit("attention_backward", dy=dy, dqkv=dqkv, qkv=qkv, att=att, vt=self.new((hs, t)),
                  datt=self.new((t, t)), dqh=self.new((t, hs)), dkh=self.new((t, hs)), dvh=self.new((t, hs)),
                  rows=dy.rows, t=t, c=c, heads=heads, root=np.float32(np.sqrt(hs)))
        return dqkv

    def embedding_backward(self, idx: Ref, dx: Ref) -> None:
        """Each row of dx added to its token's row of wte's gradient, in row order."""
        self.emit("scatter", dst=self.g("wte"), ids=idx, src=dx, rows=dx.rows, c=dx.width)

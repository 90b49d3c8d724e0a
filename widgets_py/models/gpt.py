"""A tiny decoder-only transformer in numpy: forward, manual backward, KV-cache inference.

Pure functions over a flat parameter dict, after jaymody/picoGPT and karpathy/nanoGPT.
Positions are fixed sinusoids (no parameters), so inference can run past the training
context (a prefill/decode clock can measure up to 512 tokens); the output head is tied to the
token embedding. Every layer has `forward(...) -> (out, cache)` and
`backward(dout, cache) -> grads`, as in llm.c's layernorm.py; `tests/test_gpt.py`
checks each against finite differences. These numpy layers are the model. In the browser,
where numpy has no BLAS and each of its calls costs tens of microseconds, every forward
(hidden_states, extend, and training's, which keeps what the backward reads) runs the same
layers in one call of sgemm.wat's kernel, and so does the backward through the blocks; tests
hold the kernel to the numpy layers in float64.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from . import backend, sgemm


@dataclass(frozen=True)
class GPTConfig:
    vocab: int  # distinct characters of the corpus
    d: int = 32  # embedding width
    layers: int = 2  # transformer blocks
    heads: int = 4  # attention heads (d must divide evenly)
    context: int = 32  # training window, tokens
    mlp: int = 4  # MLP hidden width = mlp * d
    activation: str = "relu"  # the MLP's: "relu", or "gelu" (GPT-2's tanh approximation)
    norm: str = "layernorm"  # "layernorm" (weight and bias), or "rmsnorm" (Zhang & Sennrich 2019: weight only)

    def __post_init__(self):
        for field, allowed in (("activation", ACTIVATIONS), ("norm", NORMS)):
            if getattr(self, field) not in allowed:
                raise ValueError(f"GPTConfig.{field}={getattr(self, field)!r}: allowed {', '.join(allowed)}")


def init(cfg: GPTConfig, seed: int) -> dict[str, np.ndarray]:
    """GPT-2 style init: N(0, 0.02), residual projections scaled by 1/sqrt(2·layers)."""
    rng = np.random.default_rng(seed)
    d, h = cfg.d, cfg.mlp * cfg.d
    normal = lambda *shape, std=0.02: (std * rng.standard_normal(shape)).astype(np.float32)  # noqa: E731
    proj_std = 0.02 / np.sqrt(2 * cfg.layers)
    p = {"wte": normal(cfg.vocab, d)}
    for i in range(cfg.layers):
        p |= {
            f"h{i}.ln1.w": np.ones(d, np.float32), f"h{i}.ln1.b": np.zeros(d, np.float32),
            f"h{i}.qkv.w": normal(d, 3 * d), f"h{i}.qkv.b": np.zeros(3 * d, np.float32),
            f"h{i}.proj.w": normal(d, d, std=proj_std), f"h{i}.proj.b": np.zeros(d, np.float32),
            f"h{i}.ln2.w": np.ones(d, np.float32), f"h{i}.ln2.b": np.zeros(d, np.float32),
            f"h{i}.fc.w": normal(d, h), f"h{i}.fc.b": np.zeros(h, np.float32),
            f"h{i}.out.w": normal(h, d, std=proj_std), f"h{i}.out.b": np.zeros(d, np.float32),
        }
    p |= {"lnf.w": np.ones(d, np.float32), "lnf.b": np.zeros(d, np.float32)}
    if cfg.norm == "rmsnorm":  # no bias: RMSNorm scales only
        p = {k: v for k, v in p.items() if not k.endswith(("ln1.b", "ln2.b", "lnf.b"))}
    return p


def n_params(p: dict[str, np.ndarray]) -> int:
    return sum(v.size for v in p.values())


def macs_per_token(cfg: GPTConfig) -> int:
    """Multiply-adds of the weight matmuls for one token: qkv, proj, MLP, tied head."""
    d, h = cfg.d, cfg.mlp * cfg.d
    return cfg.layers * (d * 3 * d + d * d + 2 * d * h) + d * cfg.vocab


@lru_cache(maxsize=256)
def positions(start: int, count: int, d: int) -> np.ndarray:
    """Sinusoidal position encodings of positions start..start+count-1: [count, d]. Kept
    (every training step asks for the same); read-only, as callers share it."""
    pos = np.arange(start, start + count, dtype=np.float32)[:, None]  # [T, 1]
    freq = np.exp(-np.log(10000.0) * np.arange(0, d, 2, dtype=np.float32) / d)  # [d/2]
    enc = np.empty((count, d), np.float32)
    enc[:, 0::2], enc[:, 1::2] = np.sin(pos * freq), np.cos(pos * freq)
    enc *= 0.02  # small beside the token embeddings, which start at std 0.02
    enc.flags.writeable = False
    return enc


# ---- matrix products: BLAS natively, a WebAssembly SIMD kernel in Pyodide ---------------
# The session's backend chooses (models.backend says why each): `@` natively; in Pyodide the
# kernel, or einsum's contiguous loops where it cannot load.
FEW_ROWS = 4  # up to this many rows (a decode step), matmul's small fixed cost wins instead


def matmul_path() -> str:
    """Which products this session uses: "blas" (natively), "wasm-simd" or "einsum" (Pyodide)."""
    return backend.current().path


def _product(a2, b=None, bt=None):
    """a2 [M, K] @ [K, N], the right side given as b [K, N] or as bt [N, K]."""
    if a2.shape[0] <= FEW_ROWS:
        return a2 @ (b if b is not None else bt.T)
    n = b.shape[1] if b is not None else bt.shape[0]
    be = backend.current()
    if a2.size * n >= be.kernel_macs and be.takes(a2, b if b is not None else bt):
        return be.kernel.nn(a2, b if b is not None else np.ascontiguousarray(bt.T))  # bt: a weight, small
    if a2.shape[1] >= n:  # long sums, narrow output: contiguous dot products
        return np.einsum("ik,nk->in", a2, np.ascontiguousarray(b.T) if bt is None else bt)
    return np.einsum("ik,kn->in", a2, np.ascontiguousarray(bt.T) if b is None else b)  # row updates


def mm(a, b):
    """a [..., K] @ b [K, N] -> [..., N]."""
    if not backend.current().einsum:
        return a @ b
    return _product(a.reshape(-1, a.shape[-1]), b=b).reshape(*a.shape[:-1], b.shape[1])


def mm_nt(a, b):
    """a [..., N] @ b [K, N].T -> [..., K]: the tied head, and gradients through a weight."""
    if not backend.current().einsum:
        return a @ b.T
    return _product(a.reshape(-1, a.shape[-1]), bt=b).reshape(*a.shape[:-1], b.shape[0])


def mm_tn(a, b):
    """a [M, K].T @ b [M, N] -> [K, N]: a weight gradient, summed over the M rows."""
    be = backend.current()
    if not be.einsum:
        return a.T @ b
    if a.size * b.shape[1] >= be.kernel_macs and be.takes(a, b):
        return be.kernel.tn(a, b)
    return np.einsum("km,nm->kn", np.ascontiguousarray(a.T), np.ascontiguousarray(b.T))  # dot: M is long


# ---- layers: forward(...) -> (out, cache), backward(dout, cache) -> grads --------------

# Reductions call the ufunc's reduce directly: ndarray.sum/max/mean go through Python-level
# wrappers (numpy/_core/_methods.py), whose cost in Pyodide is several times the reduction's
# on these small arrays. Bit for bit the same.
def _sum(x, axis=-1):
    return np.add.reduce(x, axis=axis, keepdims=True)


def _max(x, axis=-1):
    return np.maximum.reduce(x, axis=axis, keepdims=True)


def _mean(x):
    """x.mean(-1, keepdims=True), bit for bit (the same float32 sum, divided by the count)."""
    return _sum(x) / x.shape[-1]


def layernorm(x, w, b, eps=1e-5):
    mean = _mean(x)  # [..., 1]
    centred = x - mean  # [..., C]
    rstd = 1.0 / np.sqrt(_mean(centred * centred) + eps)  # [..., 1]
    norm = centred * rstd  # [..., C]
    return norm * w + b, (norm, w, rstd)


def layernorm_backward(dout, cache):
    norm, w, rstd = cache
    dnorm = dout * w  # [..., C]
    dx = rstd * (dnorm - _mean(dnorm) - norm * _mean(dnorm * norm))
    axes = tuple(range(dout.ndim - 1))
    return dx, np.add.reduce(dout * norm, axis=axes), np.add.reduce(dout, axis=axes)


def linear(x, w, b):
    return mm(x, w) + b, (x, w)  # [..., C] -> [..., C']


def linear_backward(dout, cache):
    x, w = cache
    x2, d2 = x.reshape(-1, x.shape[-1]), dout.reshape(-1, dout.shape[-1])
    return mm_nt(dout, w), mm_tn(x2, d2), np.add.reduce(d2, axis=0)


def relu(x):
    """ReLU, not GPT-2's tanh-GELU: a fifth of the cost in WebAssembly, same quality here."""
    on = x > 0
    return x * on, on


def relu_backward(dout, on):
    return dout * on


GELU_C = math.sqrt(2 / math.pi)  # a Python float: float32 stays float32


def gelu(x):
    """GPT-2's GELU, the tanh approximation (Hendrycks & Gimpel 2016, eq. 2): a config's choice."""
    t = np.tanh(GELU_C * (x + 0.044715 * x * x * x))
    return 0.5 * x * (1 + t), (x, t)


def gelu_backward(dout, cache):
    x, t = cache
    return dout * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * GELU_C * (1 + 3 * 0.044715 * x * x))


def rmsnorm(x, w, b=None, eps=1e-5):
    """RMSNorm (Zhang & Sennrich 2019): x / rms(x) * w, no centring and no bias (b is None)."""
    rstd = 1.0 / np.sqrt(_mean(x * x) + eps)  # [..., 1]
    norm = x * rstd  # [..., C]
    return norm * w, (norm, w, rstd)


def rmsnorm_backward(dout, cache):
    norm, w, rstd = cache
    dnorm = dout * w  # [..., C]
    dx = rstd * (dnorm - norm * _mean(dnorm * norm))
    return dx, np.add.reduce(dout * norm, axis=tuple(range(dout.ndim - 1))), None


# A config's choices: name -> (forward, backward). Layer norm's backward gives (dx, dw, db);
# RMSNorm's db is None (it has no bias).
ACTIVATIONS = {"relu": (relu, relu_backward), "gelu": (gelu, gelu_backward)}
NORMS = {"layernorm": (layernorm, layernorm_backward), "rmsnorm": (rmsnorm, rmsnorm_backward)}


def normed(p, name: str, x, cfg: GPTConfig):
    """The config's norm of x with the parameters `name`.w (and .b): (out, cache)."""
    return NORMS[cfg.norm][0](x, p[f"{name}.w"], p.get(f"{name}.b"))


def normed_backward(dout, cache, name: str, cfg: GPTConfig, grads):
    dx, grads[f"{name}.w"], db = NORMS[cfg.norm][1](dout, cache)
    if db is not None:
        grads[f"{name}.b"] = db
    return dx


@lru_cache(maxsize=64)
def causal_mask(tq: int, tk: int, offset: int) -> tuple[np.ndarray, np.ndarray]:
    """[Tq, Tk] additive mask, 0 where query i may see key j (j <= i + offset) and -inf
    elsewhere, and the same as a bool array, True where it may see."""
    hidden = np.arange(tk)[None, :] > np.arange(tq)[:, None] + offset
    return np.where(hidden, -np.inf, 0.0).astype(np.float32), ~hidden


def attention(q, k, v, causal_offset=0):
    """q: [B, H, Tq, hs], k, v: [B, H, Tk, hs]; query i sees keys <= i + causal_offset."""
    tq, tk, hs = q.shape[-2], k.shape[-2], q.shape[-1]
    scores = q @ k.swapaxes(-1, -2)  # [B, H, Tq, Tk]
    scores *= 1.0 / np.sqrt(hs)
    mask, seen = causal_mask(tq, tk, causal_offset)
    scores += mask  # -inf above the diagonal
    scores -= _max(scores)
    att = np.exp(scores, out=np.zeros(scores.shape, scores.dtype), where=seen)  # exp(-inf) = 0 is not computed
    att /= _sum(att)  # softmax over keys
    return att @ v, (q, k, v, att)  # [B, H, Tq, hs]


def attention_backward(dout, cache):
    q, k, v, att = cache
    datt = dout @ v.swapaxes(-1, -2)  # [B, H, Tq, Tk]
    dv = att.swapaxes(-1, -2) @ dout
    dscores = att * (datt - _sum(datt * att)) / np.sqrt(q.shape[-1]).astype(q.dtype)
    return dscores @ k, dscores.swapaxes(-1, -2) @ q, dv


def split_heads(x, heads):  # [B, T, C] -> [B, H, T, C/H]
    b, t, c = x.shape
    return x.reshape(b, t, heads, c // heads).transpose(0, 2, 1, 3)


def merge_heads(x):  # [B, H, T, hs] -> [B, T, H*hs]
    b, h, t, hs = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, t, h * hs)


# ---- the model ----------------------------------------------------------------------

class BlockCache(NamedTuple):
    """What block()'s backward reads: each layer's cache, by name."""
    ln1: tuple
    qkv: tuple  # (input, weight): quantize's activation maxima read the input
    att: tuple
    proj: tuple
    ln2: tuple
    fc: tuple
    act: tuple | np.ndarray
    out: tuple


def block(p, i, x, cfg: GPTConfig, kv=None, last=False):
    """One transformer block. kv: (k_past, v_past) [B, H, Tpast, hs] or None. last: only the
    last position's output is wanted: keys and values come from every position, the query,
    the projection and the MLP from the last one alone (x [B, T, C] -> [B, 1, C])."""
    heads = cfg.heads
    a, c_ln1 = normed(p, f"h{i}.ln1", x, cfg)
    qkv, c_qkv = linear(a, p[f"h{i}.qkv.w"], p[f"h{i}.qkv.b"])  # [B, T, C] -> [B, T, 3C]
    c = qkv.shape[-1] // 3
    q, k, v = (split_heads(qkv[..., j * c:(j + 1) * c], heads) for j in range(3))  # np.split's views
    past = 0
    if kv is not None:
        past = kv[0].shape[-2]
        k, v = np.concatenate([kv[0], k], -2), np.concatenate([kv[1], v], -2)
    if last:  # the last query sees every key
        q, x, past = q[..., -1:, :], x[:, -1:], k.shape[-2] - 1
    y, c_att = attention(q, k, v, causal_offset=past)
    o, c_proj = linear(merge_heads(y), p[f"h{i}.proj.w"], p[f"h{i}.proj.b"])
    x = x + o
    m, c_ln2 = normed(p, f"h{i}.ln2", x, cfg)
    hdn, c_fc = linear(m, p[f"h{i}.fc.w"], p[f"h{i}.fc.b"])  # [B, T, C] -> [B, T, 4C]
    act, c_act = ACTIVATIONS[cfg.activation][0](hdn)
    out, c_out = linear(act, p[f"h{i}.out.w"], p[f"h{i}.out.b"])  # [B, T, 4C] -> [B, T, C]
    return x + out, (k, v), BlockCache(c_ln1, c_qkv, c_att, c_proj, c_ln2, c_fc, c_act, c_out)


class Resident(Sequence):
    """block()'s caches of a training forward the kernel ran: left in the kernel's memory,
    where its backward reads them (copying some 2 MB out and back in cost a tenth of a
    step); copied out as block()'s caches only for a reader that asks (quantize's
    activation maxima, the tests). `final` is the final norm's cache; `weights`, the packed
    parameters the forward ran with, which the backward needs too; `kernel`, the one that ran it."""

    def __init__(self, kernel: sgemm.Kernel, p, kept, heads: int, weights: np.ndarray):
        self.kernel, self.p, self.kept, self.heads, self.weights, self._caches = kernel, p, kept, heads, weights, None

    def _read(self) -> tuple[list, tuple]:
        if self._caches is None:
            layers, final = self.kernel.kept_arrays(self.kept)
            self._caches = ([_kept_cache(self.p, i, layer, self.heads) for i, layer in enumerate(layers)],
                            (final["norm"], self.p["lnf.w"], final["rstd"]))
        return self._caches

    @property
    def final(self) -> tuple:
        return self._read()[1]

    def __getitem__(self, i):
        return self._read()[0][i]

    def __len__(self) -> int:
        return len(self.kept.regions)


def _kept_cache(p, i, kept: dict, heads: int) -> tuple:
    """block()'s cache, from what the kernel's forward kept of layer i (sgemm.TRAIN_KEPT)."""
    qkv, c = kept["qkv"], kept["qkv"].shape[-1] // 3
    q, k, v = (split_heads(qkv[..., j * c:(j + 1) * c], heads) for j in range(3))
    act = kept["act"]
    return BlockCache((kept["norm1"], p[f"h{i}.ln1.w"], kept["rstd1"]), (kept["a"], p[f"h{i}.qkv.w"]),
                      (q, k, v, kept["att"]), (kept["y"], p[f"h{i}.proj.w"]), (kept["norm2"], p[f"h{i}.ln2.w"], kept["rstd2"]),
                      (kept["m"], p[f"h{i}.fc.w"]), act > 0, (act, p[f"h{i}.out.w"]))  # ReLU's mask: the kernel's only activation


def block_backward(p, i, dx, cache: BlockCache, cfg: GPTConfig, grads):
    dact, grads[f"h{i}.out.w"], grads[f"h{i}.out.b"] = linear_backward(dx, cache.out)
    dhdn = ACTIVATIONS[cfg.activation][1](dact, cache.act)
    dm, grads[f"h{i}.fc.w"], grads[f"h{i}.fc.b"] = linear_backward(dhdn, cache.fc)
    dx = dx + normed_backward(dm, cache.ln2, f"h{i}.ln2", cfg, grads)  # residual
    dy, grads[f"h{i}.proj.w"], grads[f"h{i}.proj.b"] = linear_backward(dx, cache.proj)
    dq, dk, dv = attention_backward(split_heads(dy, cfg.heads), cache.att)
    dqkv = np.concatenate([merge_heads(dq), merge_heads(dk), merge_heads(dv)], -1)
    da, grads[f"h{i}.qkv.w"], grads[f"h{i}.qkv.b"] = linear_backward(dqkv, cache.qkv)
    return dx + normed_backward(da, cache.ln1, f"h{i}.ln1", cfg, grads)


KERNEL_ORDER = ("ln1.w", "ln1.b", "qkv.w", "qkv.b", "proj.w", "proj.b", "ln2.w", "ln2.b", "fc.w", "fc.b", "out.w", "out.b")


@lru_cache(maxsize=16)
def _packing(layers: int) -> tuple[str, ...]:
    return tuple(f"h{i}.{k}" for i in range(layers) for k in KERNEL_ORDER) + ("lnf.w", "lnf.b")


def packed(p, cfg: GPTConfig) -> np.ndarray:
    """Every block's parameters, then the final layer norm's, as one float32 vector: the
    order sgemm.wat's forward reads them in. Packed at each call, as training updates p in
    place; a dict of read-only arrays (pretrained.load's) is packed once and kept, on the
    session's backend."""
    store = backend.current().packed
    kept = store.get(id(p))
    if kept is not None and kept[0] is p:
        return kept[1]
    flat = np.concatenate([p[k] for k in _packing(cfg.layers)], axis=None)
    if not any(v.flags.writeable for v in p.values()):
        if len(store) >= backend.PACKED_MAX:
            store.clear()
        store[id(p)] = (p, flat)
    return flat


def hidden_states(p, cfg: GPTConfig, idx) -> np.ndarray:
    """The final layer norm's output at every position, xf [B, T, C], with no caches kept:
    inference's forward. In the browser one kernel call: numpy's per-call cost in Pyodide
    (tens of microseconds, some forty calls per block) outweighs this model's arithmetic."""
    x = p["wte"][idx] + positions(0, idx.shape[-1], cfg.d)  # [B, T, C]
    be = backend.current()
    if be.runs(cfg, x, p["wte"]):
        return be.kernel.forward(x, packed(p, cfg), cfg.heads, cfg.layers, cfg.mlp * cfg.d)
    for i in range(cfg.layers):
        x, _, _ = block(p, i, x, cfg)
    return normed(p, "lnf", x, cfg)[0]


def loss(p, cfg: GPTConfig, idx, targets) -> float:
    """Mean cross-entropy of targets [B, T] after idx [B, T]: forward's loss, no caches kept."""
    be = backend.current()
    if be.runs(cfg, p["wte"]):  # in the browser the head too runs where the forward left its output
        return nll(*loss_parts(be.kernel, p, cfg, idx, targets))
    return _cross_entropy(mm_nt(hidden_states(p, cfg, idx), p["wte"]), targets)[0]


def loss_parts(kernel: sgemm.Kernel, p, cfg: GPTConfig, idx, targets):
    """loss()'s pass on `kernel` (sgemm.Kernel, float32 weights): each position's target
    logit, the max of its logits and the sum of their exponentials, each [B, T, 1]. Apart
    from nll(), so that a pass recorded for another worker (offload.py) is finished when
    its arrays are back."""
    x = p["wte"][idx] + positions(0, idx.shape[-1], cfg.d)  # [B, T, C]
    return kernel.loss(x, packed(p, cfg), cfg.heads, cfg.layers, cfg.mlp * cfg.d, p["wte"], targets)


def nll(picked, top, total) -> float:
    """The mean loss from loss_parts(): picked - top is z [B, T, 1], as _cross_entropy makes it."""
    return _mean_nll(picked - top, total)


def _cross_entropy(logits, targets):
    """(mean loss, exp(logits - max) [B, T, V], their sum [B, T, 1]): the backward's softmax too.
    numpy's (with the kernel, loss() and forward() take its head instead: Kernel.loss, .head)."""
    z = logits - _max(logits)
    e = np.exp(z)  # [B, T, V]
    total = _sum(e)  # [B, T, 1]
    return _mean_nll(_picked(z, targets), total), e, total


def _picked(x, targets):
    """x [B, T, V] at each position's target -> [B, T, 1]: np.take_along_axis's values,
    gathered without its Python-level set-up (a training step's dearest numpy call in Pyodide)."""
    rows = x.reshape(-1, x.shape[-1])  # [B*T, V]
    return rows[np.arange(len(rows)), targets.ravel()].reshape(*targets.shape, 1)


def _mean_nll(z, total) -> float:
    """Mean of the targets' negative log-softmax, z - log(total) [B, T, 1] with z = the target's
    logit minus the row's max: ndarray.mean's float32 sum and division, without its wrapper."""
    ll = z - np.log(total)
    return float(-(np.add.reduce(ll, axis=None) / ll.size))


def forward(p, cfg: GPTConfig, idx, targets=None):
    """idx: [B, T] int -> logits [B, T, V]; with targets also (mean loss, cache for backward)."""
    b, t = idx.shape
    x = p["wte"][idx] + positions(0, t, cfg.d)  # [B, T, C]
    kernel = backend.current().kernel
    if backend.current().runs(cfg, x, p["wte"]):  # in the browser every block in one call, keeping the backward's inputs there
        weights = packed(p, cfg)
        xf, kept = kernel.forward_kept(x, weights, cfg.heads, cfg.layers, cfg.mlp * cfg.d)
        caches = Resident(kernel, p, kept, cfg.heads, weights)
        if targets is not None:  # the loss head, its backward too, in one more call: the same bits as below
            logits, top, total, dwte, dxf = kernel.head(kept, p["wte"], targets)
            return logits, _mean_nll(_picked(logits, targets) - top, total), (idx, targets, (dwte, dxf), xf, None, caches)
        c_lnf = None  # no backward without targets (Resident.final has it)
    else:
        caches = []
        for i in range(cfg.layers):
            x, _, c = block(p, i, x, cfg)
            caches.append(c)
        xf, c_lnf = normed(p, "lnf", x, cfg)
    logits = mm_nt(xf, p["wte"])  # [B, T, C] -> [B, T, V], tied head
    if targets is None:
        return logits
    loss, e, total = _cross_entropy(logits, targets)
    return logits, loss, (idx, targets, (e, total), xf, c_lnf, caches)


def backward(p, cfg: GPTConfig, cache) -> dict[str, np.ndarray]:
    """Gradients of the mean cross-entropy with respect to every parameter."""
    idx, targets, head, xf, c_lnf, caches = cache
    if isinstance(caches, Resident):  # in the browser: the kernel's head gave wte's part and dxf (forward)
        dwte, dxf = head  # every block's backward, then the embedding's, in one call
        _, flat = caches.kernel.backward(dxf, caches.weights, caches.kept, cfg.heads, cfg.mlp * cfg.d, idx, dwte)
        grads = {"wte": dwte}
        at = 0
        for name in _packing(cfg.layers):  # the flat gradients, back into the parameters' shapes
            grads[name] = flat[at:at + p[name].size].reshape(p[name].shape)
            at += p[name].size
        return grads
    e, total = head
    dlogits = e / total  # softmax, from the forward's exponentials (one exp fewer per step)
    np.put_along_axis(dlogits, targets[..., None], np.take_along_axis(dlogits, targets[..., None], -1) - 1, -1)
    dlogits /= targets.size  # [B, T, V]
    grads = {"wte": mm_tn(dlogits.reshape(-1, cfg.vocab), xf.reshape(-1, cfg.d))}  # tied head
    dxf = mm(dlogits, p["wte"])  # [B, T, C]
    dx = normed_backward(dxf, c_lnf, "lnf", cfg, grads)
    for i in reversed(range(cfg.layers)):
        dx = block_backward(p, i, dx, caches[i], cfg, grads)
    np.add.at(grads["wte"], idx, dx)  # embedding lookup: accumulate into the rows used
    return grads


def warm_kernel() -> None:
    """Every pass of the browser's kernel once, on a toy model: V8 starts a WebAssembly
    function in its baseline tier and sets up its first calls, which a widget's first change
    would otherwise pay (the worker calls this when idle, after the widgets' modules)."""
    kernel = backend.current().kernel
    if kernel is None:
        return
    cfg = GPTConfig(vocab=8, d=32, layers=1, heads=4, context=32)  # the mini-GPT's widths: loops that run
    p = init(cfg, 0)  # long enough for V8 to optimise them
    idx = np.arange(128).reshape(4, 32) % cfg.vocab  # [B, T]
    loss(p, cfg, idx, idx)  # forward and the held-out loss's head
    backward(p, cfg, forward(p, cfg, idx, idx)[2])  # training's forward, loss head and backward
    extend(p, cfg, [1, 2, 3], extend(p, cfg, [4, 5])[1])  # prefill, then decode after a cache
    kernel.nn(p["wte"], p["wte"].T.copy())  # a product alone (sampling's head, at its sizes)
    zeros = np.zeros(8, np.float32)
    kernel.adamw(zeros.copy(), zeros.copy(), zeros.copy(), zeros, np.zeros(8, np.int32), 0.1, 0.01, 1.0, 0.01, 0.1, 0.01, 1e-8)


# ---- inference with a KV cache --------------------------------------------------------

def extend(p, cfg: GPTConfig, tokens, kv=None):
    """Run new tokens [T] after a cached past; returns logits [T, V] and the grown cache.

    prefill = extend(tokens, None); one decode step = extend([token], cache). The maths
    is the training forward's, so prefill + decode equals a full forward (tested).
    """
    past = 0 if kv is None else kv[0][0].shape[-2]
    x = p["wte"][np.asarray(tokens)][None] + positions(past, len(tokens), cfg.d)  # [1, T, C]
    be = backend.current()
    if be.runs(cfg, x, p["wte"]):  # in the browser every block in one call, the cache in and out
        xf, fresh = be.kernel.extend(x, packed(p, cfg), cfg.heads, cfg.layers, cfg.mlp * cfg.d, kv)  # [L, 2, 1, H, T, hs]
        if kv is None:
            return mm_nt(xf, p["wte"])[0], [(k, v) for k, v in fresh]
        return mm_nt(xf, p["wte"])[0], [(np.concatenate([k, fresh[i, 0]], -2), np.concatenate([v, fresh[i, 1]], -2))
                                        for i, (k, v) in enumerate(kv)]
    new = []
    for i in range(cfg.layers):
        x, layer_kv, _ = block(p, i, x, cfg, None if kv is None else kv[i])
        new.append(layer_kv)
    xf, _ = normed(p, "lnf", x, cfg)
    return mm_nt(xf, p["wte"])[0], new  # [T, V]


def next_logits(p, cfg: GPTConfig, tokens) -> np.ndarray:
    """Logits [V] of the token after `tokens` (at positions 0..T-1), with no cache kept:
    extend(tokens)[0][-1], but the last block and the head run for the last position only
    (a generator sliding its window recomputes the window at every token)."""
    if backend.current().runs(cfg, p["wte"]):  # the whole window in one call: cheaper than the last-row shortcut
        return mm_nt(hidden_states(p, cfg, np.asarray(tokens)[None])[:, -1], p["wte"])[0]
    x = p["wte"][np.asarray(tokens)][None] + positions(0, len(tokens), cfg.d)  # [1, T, C]
    for i in range(cfg.layers):
        x, _, _ = block(p, i, x, cfg, last=i == cfg.layers - 1)  # the last: [1, 1, C]
    xf, _ = normed(p, "lnf", x, cfg)
    return mm_nt(xf, p["wte"])[0, -1]  # [V]

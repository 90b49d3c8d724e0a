"""The mini-GPT's layers in numpy, and its products: each layer a pure function,
`forward(...) -> (out, cache)` and `backward(dout, cache) -> grads`, as in llm.c's
layernorm.py (tests/test_gpt.py checks each against finite differences). eager.py runs gpt's
model with them; the kernel's primitives (wasm/*.c) compute the same operations in float32.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from . import products


# ---- matrix products: whoever runs the code chooses how (products.py) -------------------

def mm(a, b):
    """a [..., K] @ b [K, N] -> [..., N]."""
    return products.current().mm(a, b)


def mm_nt(a, b):
    """a [..., N] @ b [K, N].T -> [..., K]: the tied head, and gradients through a weight."""
    return products.current().mm_nt(a, b)


def mm_tn(a, b):
    """a [M, K].T @ b [M, N] -> [K, N]: a weight gradient, summed over the M rows."""
    return products.current().mm_tn(a, b)


# ---- layers: forward(...) -> (out, cache), backward(dout, cache) -> grads --------------

# Reductions call the ufunc's reduce directly: ndarray.sum/max/mean go through Python-level
# wrappers (numpy/_core/_methods.py), whose cost in Pyodide is several times the reduction's
# on these small arrays. Bit for bit the same.
def sums(x, axis=-1):
    return np.add.reduce(x, axis=axis, keepdims=True)


def maxima(x, axis=-1):
    return np.maximum.reduce(x, axis=axis, keepdims=True)


def means(x):
    """x.mean(-1, keepdims=True), bit for bit (the same float32 sum, divided by the count)."""
    return sums(x) / x.shape[-1]


def layernorm(x, w, b, eps=1e-5):
    mean = means(x)  # [..., 1]
    centred = x - mean  # [..., C]
    rstd = 1.0 / np.sqrt(means(centred * centred) + eps)  # [..., 1]
    norm = centred * rstd  # [..., C]
    return norm * w + b, (norm, w, rstd)


def layernorm_backward(dout, cache):
    norm, w, rstd = cache
    dnorm = dout * w  # [..., C]
    dx = rstd * (dnorm - means(dnorm) - norm * means(dnorm * norm))
    axes = tuple(range(dout.ndim - 1))
    return dx, np.add.reduce(dout * norm, axis=axes), np.add.reduce(dout, axis=axes)


def linear(x, w, b):
    return mm(x, w) + b, (x, w)  # [..., C] -> [..., C']


def linear_backward(dout, cache):
    x, w = cache
    x2, d2 = x.reshape(-1, x.shape[-1]), dout.reshape(-1, dout.shape[-1])
    return mm_nt(dout, w), mm_tn(x2, d2), np.add.reduce(d2, axis=0)


def relu(x):
    """ReLU, not GPT-2's tanh-GELU: a fifth of the cost in WebAssembly, same quality here.
    Its cache is its output, whose sign the backward reads (as the kernel keeps it)."""
    out = x * (x > 0)
    return out, out


def relu_backward(dout, out):
    return dout * (out > 0)


GELU_C = math.sqrt(2 / math.pi)  # a Python float: float32 stays float32


def _gelu_tanh(x):
    return np.tanh(GELU_C * (x + 0.044715 * x * x * x))


def gelu(x):
    """GPT-2's GELU, the tanh approximation (Hendrycks & Gimpel 2016, eq. 2): a config's
    choice. Its cache is its input (as the kernel keeps it)."""
    return 0.5 * x * (1 + _gelu_tanh(x)), x


def gelu_backward(dout, x):
    t = _gelu_tanh(x)
    return dout * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * GELU_C * (1 + 3 * 0.044715 * x * x))


def rmsnorm(x, w, b=None, eps=1e-5):
    """RMSNorm (Zhang & Sennrich 2019): x / rms(x) * w, no centring and no bias (b is None)."""
    rstd = 1.0 / np.sqrt(means(x * x) + eps)  # [..., 1]
    norm = x * rstd  # [..., C]
    return norm * w, (norm, w, rstd)


def rmsnorm_backward(dout, cache):
    norm, w, rstd = cache
    dnorm = dout * w  # [..., C]
    dx = rstd * (dnorm - norm * means(dnorm * norm))
    return dx, np.add.reduce(dout * norm, axis=tuple(range(dout.ndim - 1))), None


# A config's choices: name -> (forward, backward). Layer norm's backward gives (dx, dw, db);
# RMSNorm's db is None (it has no bias).
ACTIVATIONS = {"relu": (relu, relu_backward), "gelu": (gelu, gelu_backward)}
NORMS = {"layernorm": (layernorm, layernorm_backward), "rmsnorm": (rmsnorm, rmsnorm_backward)}


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
    scores -= maxima(scores)
    att = np.exp(scores, out=np.zeros(scores.shape, scores.dtype), where=seen)  # exp(-inf) = 0 is not computed
    att /= sums(att)  # softmax over keys
    return att @ v, (q, k, v, att)  # [B, H, Tq, hs]


def attention_backward(dout, cache):
    q, k, v, att = cache
    datt = dout @ v.swapaxes(-1, -2)  # [B, H, Tq, Tk]
    dv = att.swapaxes(-1, -2) @ dout
    dscores = att * (datt - sums(datt * att)) / np.sqrt(q.shape[-1]).astype(q.dtype)
    return dscores @ k, dscores.swapaxes(-1, -2) @ q, dv


def split_heads(x, heads):  # [B, T, C] -> [B, H, T, C/H]
    b, t, c = x.shape
    return x.reshape(b, t, heads, c // heads).transpose(0, 2, 1, 3)


def merge_heads(x):  # [B, H, T, hs] -> [B, T, H*hs]
    b, h, t, hs = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, t, h * hs)


def picked(x, targets):
    """x [B, T, V] at each position's target -> [B, T, 1]: np.take_along_axis's values,
    gathered without its Python-level set-up (a training step's dearest numpy call in Pyodide)."""
    rows = x.reshape(-1, x.shape[-1])  # [B*T, V]
    return rows[np.arange(len(rows)), targets.ravel()].reshape(*targets.shape, 1)


def mean_nll(z, total) -> float:
    """Mean of the targets' negative log-softmax, z - log(total) [B, T, 1] with z = the target's
    logit minus the row's max: ndarray.mean's float32 sum and division, without its wrapper."""
    ll = z - np.log(total)
    return float(-(np.add.reduce(ll, axis=None) / ll.size))

"""A tiny decoder-only transformer: the model, written once, and the passes it runs.

Pure functions over a flat parameter dict, after jaymody/picoGPT and karpathy/nanoGPT.
Positions are fixed sinusoids (no parameters), so inference can run past the training
context (a prefill/decode clock can measure up to 512 tokens); the output head is tied to the
token embedding.

The model is `block` and `block_backward`, written against `ops`: norm, linear, act,
attention, add, and each one's backward (llm.c's manual backprop, layer by layer). Who runs
the ops is the runtime's choice (`runner`, products.py): eager.py computes them now, in
numpy, with layers.py's layers (natively, with BLAS); in Pyodide accel/tape.py records them as the browser
kernel's primitives, so that a whole pass (a forward, a decode step, a training step's
forward, its backward) runs in one WebAssembly call (accel/compiled.py): numpy's cost per call in
Pyodide, tens of microseconds some forty times a block, outweighs this model's arithmetic.
Tests hold the kernel's passes to numpy's in float64 and to an independent float64 GPT.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType

import numpy as np

from . import layers, products
from .eager import Eager
from .layers import mean_nll, mm_nt, picked


SIZES = ("vocab", "d", "layers", "heads", "context", "mlp")  # GPTConfig's sizes; its other fields are choices


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
        for field, allowed in (("activation", layers.ACTIVATIONS), ("norm", layers.NORMS)):
            if getattr(self, field) not in allowed:
                raise ValueError(f"GPTConfig.{field}={getattr(self, field)!r}: allowed {', '.join(allowed)}")
        if self.d % self.heads:
            raise ValueError(f"GPTConfig: {self.heads} heads do not divide d={self.d} (allowed: a divisor of d)")
        # hashed at every pass (the kernel's programs, refusal, shapes), as a dataclass rebuilds
        # the tuple of its fields each time: worked out once (a config is frozen)
        object.__setattr__(self, "_hash", hash(tuple(getattr(self, f.name) for f in dataclasses.fields(self))))

    def __hash__(self) -> int:
        return self._hash


@lru_cache(maxsize=64)  # asked at every pass (the kernel's packing): read-only
def shapes(cfg: GPTConfig) -> Mapping[str, tuple[int, ...]]:
    """Every parameter's shape, in the model's order: init's, and the kernel's packing."""
    d, h = cfg.d, cfg.mlp * cfg.d
    out = {"wte": (cfg.vocab, d)}
    for i in range(cfg.layers):
        out |= {f"h{i}.ln1.w": (d,), f"h{i}.ln1.b": (d,), f"h{i}.qkv.w": (d, 3 * d), f"h{i}.qkv.b": (3 * d,),
                f"h{i}.proj.w": (d, d), f"h{i}.proj.b": (d,), f"h{i}.ln2.w": (d,), f"h{i}.ln2.b": (d,),
                f"h{i}.fc.w": (d, h), f"h{i}.fc.b": (h,), f"h{i}.out.w": (h, d), f"h{i}.out.b": (d,)}
    out |= {"lnf.w": (d,), "lnf.b": (d,)}
    if cfg.norm == "rmsnorm":  # no bias: RMSNorm scales only
        out = {k: v for k, v in out.items() if not k.endswith(("ln1.b", "ln2.b", "lnf.b"))}
    return MappingProxyType(out)


def init(cfg: GPTConfig, seed: int) -> dict[str, np.ndarray]:
    """GPT-2 style init: N(0, 0.02), residual projections scaled by 1/sqrt(2·layers)."""
    rng = np.random.default_rng(seed)
    proj_std = 0.02 / np.sqrt(2 * cfg.layers)
    p = {}
    for name, shape in shapes(cfg).items():
        if len(shape) == 2:
            std = proj_std if name.endswith(("proj.w", "out.w")) else 0.02
            p[name] = (std * rng.standard_normal(shape)).astype(np.float32)
        else:  # norms' gains 1, biases 0
            p[name] = (np.ones if name.endswith(("ln1.w", "ln2.w", "lnf.w")) else np.zeros)(shape, np.float32)
    return p


def n_params(p: dict[str, np.ndarray]) -> int:
    return sum(v.size for v in p.values())


def macs_per_token(cfg: GPTConfig) -> int:
    """Multiply-adds of the weight matmuls for one token: qkv, proj, MLP, tied head."""
    d, h = cfg.d, cfg.mlp * cfg.d
    return cfg.layers * (d * 3 * d + d * d + 2 * d * h) + d * cfg.vocab


def attention_macs_per_token(cfg: GPTConfig, keys: float) -> float:
    """Multiply-adds of attention for one token that sees `keys` keys: its scores (q·k) and
    the weighted sum of the values, d each per key, in every layer. In a causal pass over L
    tokens, token t sees t keys: (L + 1) / 2 on average."""
    return cfg.layers * 2 * cfg.d * keys


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


def embed(p, cfg: GPTConfig, idx, start: int = 0) -> np.ndarray:
    """Token embeddings plus positions start..start+T-1: idx [B, T] -> x [B, T, C]."""
    idx = np.asarray(idx)
    return p["wte"][idx] + positions(start, idx.shape[-1], cfg.d)


# ---- the model, against ops (eager.py runs them in numpy, tape.py records them) -------

def block(ops, i: int, x, past=None, new=None, last=False):
    """One pre-norm transformer block (GPT-2's): x [B, T, C] -> [B, T, C]. With a KV cache,
    attention sees this layer's `past` keys and values and writes the new ones to `new`.
    last: only the last position's output is wanted (-> [B, 1, C]): keys and values come from
    every position, the query and all after it from the last one."""
    qkv = ops.linear(f"h{i}.qkv", ops.norm(f"h{i}.ln1", x))  # [B, T, C] -> [B, T, 3C]
    y = ops.attention(f"h{i}.att", qkv, past, new, last)  # causal
    x = ops.add(ops.last(x) if last else x, ops.linear(f"h{i}.proj", y))
    h = ops.act(f"h{i}.act", ops.linear(f"h{i}.fc", ops.norm(f"h{i}.ln2", x)))  # [B, T, C] -> [B, T, 4C]
    return ops.add(x, ops.linear(f"h{i}.out", h))  # [B, T, 4C] -> [B, T, C]


def block_backward(ops, i: int, dx):
    """block()'s backward, its layers in reverse: the gradient of its output -> of its input;
    the parameters' gradients go to ops."""
    dh = ops.act_backward(f"h{i}.act", ops.linear_backward(f"h{i}.out", dx))
    dx = ops.add(dx, ops.norm_backward(f"h{i}.ln2", ops.linear_backward(f"h{i}.fc", dh)))  # residual
    dqkv = ops.attention_backward(f"h{i}.att", ops.linear_backward(f"h{i}.proj", dx))
    return ops.add(dx, ops.norm_backward(f"h{i}.ln1", ops.linear_backward(f"h{i}.qkv", dqkv)))


def transformer(ops, cfg: GPTConfig, x, past=None, new=None, last=False):
    """Every block, then the final norm: x [B, T, C] -> xf [B, T, C]. A KV cache: past, each
    layer's (keys, values) [1, H, P, hs] of P positions; new [L, 2, 1, H, T, hs], this pass's.
    last: the last position's output only, [B, 1, C] (the last block computes it alone)."""
    for i in range(cfg.layers):
        x = block(ops, i, x, None if past is None else past[i], None if new is None else new[i],
                  last and i == cfg.layers - 1)
    return ops.norm("lnf", x)


def transformer_backward(ops, cfg: GPTConfig, dxf):
    dx = ops.norm_backward("lnf", dxf)
    for i in reversed(range(cfg.layers)):
        dx = block_backward(ops, i, dx)
    return dx


# ---- passes: each one call on the kernel (and transformer, inference's forward) ----------

def next_position(ops, cfg: GPTConfig, x):
    """The final norm's output at the last position of each sequence, [B, 1, C] (a sliding
    window's next token)."""
    return transformer(ops, cfg, x, last=True)


def extension(ops, cfg: GPTConfig, x, past=None):
    """New positions x [1, T, C] after a KV cache's past: (xf, their keys and values, each
    layer's [2, 1, H, T, hs])."""
    new = ops.cache(cfg.layers, (x.shape[0], cfg.heads, x.shape[1], cfg.d // cfg.heads))
    return transformer(ops, cfg, x, past, new), new


def held_out(ops, cfg: GPTConfig, x, targets):
    """A held-out loss's parts: each position's target logit, max and sum of exponentials."""
    return ops.nll(ops.head(transformer(ops, cfg, x)), targets)


def training(ops, cfg: GPTConfig, x, idx, targets):
    """Training's forward, each layer keeping what its backward reads: (logits, each row's max
    and sum of exponentials)."""
    logits = ops.head(transformer(ops, cfg, x))
    return (logits, *ops.cross_entropy(logits, targets))


def training_backward(ops, cfg: GPTConfig, x, idx, targets):
    """The mean cross-entropy's gradient of every parameter (gathered by ops)."""
    dx = transformer_backward(ops, cfg, ops.head_backward(ops.cross_entropy_backward()))
    ops.embedding_backward(idx, dx)  # the embedding's rows: accumulated at the tokens used


# ---- what the widgets call --------------------------------------------------------------

def runner(p, cfg: GPTConfig):
    """Who runs model cfg's passes with parameters p: numpy's layers (eager.py), or what the
    runtime provides in their place (products.py: in Pyodide, the kernel's programs)."""
    compiled = products.current().compiled(p, cfg)
    return compiled if compiled is not None else Eager(p, cfg)


def matmul_path() -> str:
    """Which products this run uses: "blas" (natively), "wasm-simd" or "einsum" (Pyodide)."""
    return products.current().path


def hidden_states(p, cfg: GPTConfig, idx) -> np.ndarray:
    """The final norm's output at every position, xf [B, T, C], with no caches kept."""
    return runner(p, cfg).call(transformer, x=embed(p, cfg, idx))


def loss(p, cfg: GPTConfig, idx, targets) -> float:
    """Mean cross-entropy of targets [B, T] after idx [B, T], no caches kept."""
    return nll(*runner(p, cfg).call(held_out, x=embed(p, cfg, idx), targets=targets))


def nll(picked_logit, top, total) -> float:
    """The mean loss from each position's target logit, max and sum of exponentials [B, T, 1]."""
    return mean_nll(picked_logit - top, total)


def forward(p, cfg: GPTConfig, idx, targets=None):
    """idx: [B, T] int -> logits [B, T, V]; with targets also (mean loss, cache for backward):
    the cache is the runner, whose `caches` hold each layer's."""
    run = runner(p, cfg)
    x = embed(p, cfg, idx)
    if targets is None:
        return mm_nt(run.call(transformer, x=x), p["wte"])  # [B, T, C] -> [B, T, V], tied head
    logits, top, total = run.start(training, training_backward, x=x, idx=np.asarray(idx), targets=np.asarray(targets))
    return logits, nll(picked(logits, targets), top, total), run


def backward(p, cfg: GPTConfig, cache) -> dict[str, np.ndarray]:
    """Gradients of the mean cross-entropy with respect to every parameter."""
    return cache.finish()


def extend(p, cfg: GPTConfig, tokens, kv=None):
    """Run new tokens [T] after a cached past; returns logits [T, V] and the grown cache.

    prefill = extend(tokens, None); one decode step = extend([token], cache). The maths
    is the training forward's, so prefill + decode equals a full forward (tested).
    """
    start = 0 if kv is None else kv[0][0].shape[-2]
    xf, new = runner(p, cfg).call(extension, x=embed(p, cfg, np.asarray(tokens)[None], start), past=kv)
    logits = mm_nt(xf, p["wte"])[0]  # [T, V]
    if kv is None:
        return logits, [(k, v) for k, v in new]
    return logits, [(np.concatenate([k, nk], -2), np.concatenate([v, nv], -2)) for (k, v), (nk, nv) in zip(kv, new)]


def next_logits(p, cfg: GPTConfig, tokens) -> np.ndarray:
    """Logits [V] of the token after `tokens` (at positions 0..T-1), with no cache kept (a
    generator sliding its window recomputes the window at every token)."""
    return mm_nt(runner(p, cfg).call(next_position, x=embed(p, cfg, np.asarray(tokens)[None]))[:, -1], p["wte"])[0]

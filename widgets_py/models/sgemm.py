"""The mini-GPT's float32 work in a WebAssembly SIMD kernel, for numpy in Pyodide.

Pyodide's numpy has no BLAS and is compiled without SIMD: its fastest products (einsum's
row loops, see gpt.py) reach about 4 GFLOP/s here. `sgemm.wat` computes C = A @ B in blocks
of 4 rows × 8 columns held in eight f32x4 registers, about 4× faster at the mini-GPT's shapes
(benchmarks/training.py measures both in the same run). It runs in a memory of its own: a
call copies its operands in and its results out, at memcpy speed, a small part of its time.

Numpy's cost per call in Pyodide (tens of microseconds, some forty calls a block) outweighs
this model's arithmetic, so whole passes run in one call: `forward` (every block and the
final norm), `loss` (the same, then a held-out loss's head, only each position's target
logit, max and sum coming back), `extend` (the same after a KV cache), and a training step
in four calls:
`forward_kept` (which leaves the backward's inputs in the kernel's memory, `Kept`), `head`
(the tied loss head, forward and backward), `backward` (every block's gradients and the
embedding's) and `adamw` (numpy's float32 update, to the bit). A loss's exponentials come from
the attention's softmax code, inside `head` and `loss` (`exp_rows` runs it alone, for the
tests): numpy's float32 exp is its slowest element-wise operation in Pyodide (about 18 ns an
element), the kernel's four lanes at a time within one ulp. The softmax's max and division
are numpy's to the bit; the exponential and the order of each sum differ in the last bits.

The kernel is the committed `sgemm.wasm`, assembled from `sgemm.wat` (`python -m
widgets_py.models.sgemm` re-assembles it; tests/test_sgemm.py checks the two agree and runs
the kernel through this module's code in wasmtime, against float64 products). Each output
is summed over k in order, one float32 multiply and add at a time: not BLAS's order, so
natively and in the browser the last bits differ, as they already did with einsum.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
WAT, WASM = HERE / "sgemm.wat", HERE / "sgemm.wasm"
PAGE = 65536  # bytes in a WebAssembly memory page
VIEWS = 256  # views of the kernel's memory kept (three per product shape)
EXPORTS = ("sgemm", "softmax", "forward", "backward", "adamw", "head", "nll")  # sgemm.wat's functions, as a host offers them


def layout(m: int, k: int, n: int, count: int = 1) -> tuple[int, int, int]:
    """Offsets (in floats) of B and C after A at 0, and the floats the products need.

    The kernel reads up to 3 rows past A (a last block of 4 rows), 7 floats past B's rows (a
    last block of 8 columns) and writes as far past C: each region is followed by slack, and
    what is read or written there only reaches rows and columns nobody reads back.
    """
    slack = 3 * max(m, k, n) + 8
    b = count * m * k + slack
    c = b + count * k * n + slack
    return b, c, c + count * m * n + slack


def _slack(c: int, hidden: int, keys: int) -> int:
    """Floats after each region of a pass: as in `layout`, 3 rows of the widest product + 8."""
    return 3 * max(3 * c, hidden, keys) + 8


def _place(sizes: dict, at: int, slack: int) -> tuple[dict, int]:
    """Regions one after another from `at` (floats), each followed by slack: ({name: offset}, end)."""
    out = {}
    for name, size in sizes.items():
        out[name] = at
        at += size + slack
    return out, at


@lru_cache(maxsize=64)
def forward_layout(rows: int, t: int, c: int, hidden: int, weights: int, past: int = 0, layers: int = 0) -> dict[str, int]:
    """Offsets (in floats) of the forward's regions after the weights at 0 (sgemm.wat's
    `forward`), and where they end. With a cache of `past` positions: its keys and values
    for `layers` layers (kvp), and the new ones (kvn)."""
    n = past + t  # keys a query may see at most
    sizes = {"x": rows * c, "a": rows * c, "qkv": rows * 3 * c, "y": rows * c, "h": rows * hidden,
             "tmp": rows * c, "kt": c * n, "vs": n * c, "sc": t * n, "yo": t * c, "stats": 2 * t,
             "kvp": layers * 2 * past * c, "kvn": layers * 2 * t * c}
    slack = _slack(c, hidden, n)
    out, end = _place(sizes, weights + slack, slack)
    return out | {"end": end}


TRAIN_KEPT = ("norm1", "rstd1", "a", "qkv", "att", "y", "norm2", "rstd2", "m", "act")  # per layer, sgemm.wat's table order


@lru_cache(maxsize=16)
def train_layout(rows: int, t: int, c: int, hidden: int, heads: int, layers: int, start: int) -> tuple[tuple[dict, ...], dict, int]:
    """Where a training forward keeps the backward's inputs, from `start` (floats): per layer
    (TRAIN_KEPT order) and the final norm's (norm, rstd); and where they end.
    -> (per-layer {name: (offset, shape)}, final, end)."""
    shapes = {"norm1": (rows, c), "rstd1": (rows, 1), "a": (rows, c), "qkv": (rows, 3 * c),
              "att": (rows // t, heads, t, t), "y": (rows, c), "norm2": (rows, c), "rstd2": (rows, 1),
              "m": (rows, c), "act": (rows, hidden)}
    final_shapes = {"norm": (rows, c), "rstd": (rows, 1)}
    slack, at, per_layer = _slack(c, hidden, t), start, []
    for _ in range(layers):
        regions, at = _place({name: math.prod(shapes[name]) for name in TRAIN_KEPT}, at, slack)
        per_layer.append({name: (offset, shapes[name]) for name, offset in regions.items()})
    final, at = _place({name: math.prod(shape) for name, shape in final_shapes.items()}, at, slack)
    return tuple(per_layer), {name: (offset, final_shapes[name]) for name, offset in final.items()}, at


BACKWARD_WORK = ("dx", "d4", "dm", "dt", "dqkv", "wt", "gws", "vt", "datt", "dqh", "dkh", "dvh")


@lru_cache(maxsize=16)
def backward_layout(rows: int, t: int, c: int, hidden: int, heads: int, weights: int, start: int, vocab: int = 0) -> dict:
    """Offsets (in floats) of `backward`'s regions from `start`, past what the training
    forward kept (it reads that where it lies): the gradients (the weights' size), dx, the
    work regions (BACKWARD_WORK, sgemm.wat's order), and the embedding's token ids and
    gradient [vocab, c]."""
    hs = c // heads
    sizes = {"g": weights, "dx": rows * c, "d4": rows * hidden, "dm": rows * c, "dt": rows * c, "dqkv": rows * 3 * c,
             "wt": max(c * hidden, 3 * c * c), "gws": max(c * hidden, 3 * c * c), "vt": hs * t, "datt": t * t,
             "dqh": t * hs, "dkh": t * hs, "dvh": t * hs,
             "idx": rows, "eg": vocab * c}
    slack = _slack(c, hidden, t)
    out, end = _place(sizes, start + slack, slack)
    return out | {"end": end}


@dataclass(frozen=True)
class Kept:
    """What a training forward left in the kernel's memory for the backward: the address of
    its table (sgemm.wat's, TRAIN_KEPT per layer, then the final norm's) and its regions, for
    `rows` positions of sequences of t. Valid until the kernel's next pass (Kernel.live)."""

    table: int  # floats
    regions: tuple  # per layer {name: (offset, shape)}
    final: dict  # {"norm", "rstd": (offset, shape)}
    end: int  # floats: the products run from here on meanwhile
    rows: int
    t: int
    xf: int  # floats: the final norm's output [rows, c], which the loss head reads


@lru_cache(maxsize=16)
def head_layout(rows: int, c: int, vocab: int, start: int) -> dict:
    """Offsets (in floats) of `head`'s regions from `start`, each followed by slack."""
    sizes = {"wt": c * vocab, "w": vocab * c, "targets": rows, "logits": rows * vocab, "stats": 2 * rows,
             "probs": rows * vocab, "dw": vocab * c, "dx": rows * c}
    out, end = _place(sizes, start + _slack(c, vocab, rows), _slack(c, vocab, rows))
    return out | {"end": end}


def _ids(ids: np.ndarray, shape: tuple[int, int], n: int, what: str, of: str) -> np.ndarray:
    """Token ids as the kernel reads them (int32, through a float32 view), refused unless
    they have `shape` (the forward's positions) and each is one of the n rows of `of`."""
    if ids.shape != shape:
        raise ValueError(f"{what} {ids.shape} for a forward of {shape[0]}×{shape[1]} positions")
    # the ufuncs' reduce, not ndarray.min/max: their Python-level wrappers cost more than the
    # reduction in Pyodide (twice a training step)
    if ids.size and not 0 <= np.minimum.reduce(ids, axis=None) <= np.maximum.reduce(ids, axis=None) < n:
        raise ValueError(f"{what} outside {of} (0 to {n - 1})")
    return np.ascontiguousarray(ids, np.int32).view(np.float32)


class Kernel:
    """The kernel's calls on a host that holds its memory (the browser's, or wasmtime's):
    products (leading axes a batch, one call for every pair, as numpy's matmul does), a
    loss's exponentials, and the model's passes."""

    def __init__(self, host):
        self.host = host
        self.live: Kept | None = None  # a training forward's kept arrays, until the next pass

    @property
    def base(self) -> int:
        """Where products and exponentials put their operands (floats): past what a training
        forward kept, so the loss head between it and the backward leaves that in place."""
        return self.live.end if self.live is not None else 0

    def nn(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """a [..., M, K] @ b [..., K, N] -> [..., M, N]."""
        *batch, m, k = a.shape
        n = b.shape[-1]
        return self._product(a, b, batch, m, k, n, 4 * k, 4)  # A's row i at i·K floats, element p at p

    def tn(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """a [..., S, M].T @ b [..., S, N] -> [..., M, N]: summed over the S rows, no transpose made."""
        *batch, k, m = a.shape
        n = b.shape[-1]
        return self._product(a, b, batch, m, k, n, 4, 4 * m)  # A's row i is a's column i

    def _product(self, a, b, batch, m, k, n, row_bytes, step_bytes):
        if b.shape[:-2] != tuple(batch) or b.shape[-2] != k:
            raise ValueError(f"shapes {a.shape} and {b.shape} do not multiply")
        _float32(a, b)
        count = math.prod(batch)  # not np.prod: numpy's Python-level wrappers cost more in Pyodide
        at = self.base
        ob, oc, end = layout(m, k, n, count)
        ob, oc = at + ob, at + oc
        self.host.reserve(at + end)
        self.host.write(at, a if a.flags.c_contiguous else np.ascontiguousarray(a))
        self.host.write(ob, b if b.flags.c_contiguous else np.ascontiguousarray(b))
        self.host.sgemm(4 * at, 4 * ob, 4 * oc, m, k, n, row_bytes, step_bytes, count)
        out = np.empty((*batch, m, n), np.float32)
        self.host.read(oc, out)
        return out

    def forward(self, x: np.ndarray, weights: np.ndarray, heads: int, layers: int, hidden: int) -> np.ndarray:
        """Every transformer block and the final layer norm over x [B, T, C], no caches kept
        (gpt.hidden_states): one call, the weights flat in gpt.KERNEL_ORDER. -> [B, T, C]."""
        return self._blocks(x, weights, heads, layers, hidden, None, keep=False)[0]

    def loss(self, x: np.ndarray, weights: np.ndarray, heads: int, layers: int, hidden: int, wte: np.ndarray,
             targets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`forward`, then the tied head's loss parts over its output where it lies (gpt.loss):
        wte [V, C], targets [B, T] -> (each position's target logit, the max of its logits and
        the sum of their exponentials, each [B, T, 1]): what gpt._cross_entropy reads of the
        logits and of exp_rows, the same bits, without the logits and their exponentials
        (4096 positions: some 3 MB) copied out and back in."""
        _float32(wte)
        b, t, c = x.shape
        if wte.shape[1:] != (c,):
            raise ValueError(f"an embedding {wte.shape} for rows of {c}")
        ids = _ids(targets, (b, t), wte.shape[0], "targets", "the vocabulary")
        return self._blocks(x, weights, heads, layers, hidden, None, keep=False, loss=(wte, ids))

    def _nll(self, o: dict, shape: tuple[int, int, int], wte: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, ...]:
        b, t, c = shape
        rows, vocab = b * t, wte.shape[0]
        h, end = _place({"wt": c * vocab, "targets": rows, "logits": rows * vocab, "picked": rows, "stats": 2 * rows},
                        o["end"], _slack(c, vocab, rows))
        self.host.reserve(end)
        self.host.write(h["wt"], np.ascontiguousarray(wte.T))
        self.host.write(h["targets"], ids)
        self.host.nll(4 * o["x"], 4 * h["wt"], 4 * h["targets"], rows, c, vocab, *(4 * h[k] for k in ("logits", "picked", "stats")))
        picked, stats = np.empty((b, t, 1), np.float32), np.empty((b, t, 2), np.float32)
        self.host.read(h["picked"], picked)
        self.host.read(h["stats"], stats)
        return picked, stats[..., :1], stats[..., 1:]

    def forward_kept(self, x: np.ndarray, weights: np.ndarray, heads: int, layers: int, hidden: int
                     ) -> tuple[np.ndarray, Kept]:
        """The same, keeping what the backward reads (gpt.forward in training) in the kernel's
        memory, where `backward` reads it: -> (xf, where it lies). `kept_arrays` copies it out."""
        return self._blocks(x, weights, heads, layers, hidden, None, keep=False, train=True)

    def kept_arrays(self, kept: Kept) -> tuple[list[dict], dict]:
        """A training forward's kept arrays, copied out: (per layer {TRAIN_KEPT name: array},
        the final norm's {"norm", "rstd"}), arrays [B, T, ...] (att [B, H, T, T])."""
        self._check(kept)
        start = kept.regions[0]["norm1"][0]
        block = np.empty(kept.end - start, np.float32)
        self.host.read(start, block)
        b = kept.rows // kept.t
        view = lambda at, shape: block[at - start:at - start + math.prod(shape)].reshape(  # noqa: E731
            shape if len(shape) == 4 else (b, kept.t, shape[1]))
        return ([{name: view(*region) for name, region in regions.items()} for regions in kept.regions],
                {name: view(*region) for name, region in kept.final.items()})

    def _check(self, kept: Kept) -> None:
        if kept is not self.live:
            raise RuntimeError("the kernel has run another pass since this training forward: what it kept is gone")

    def extend(self, x: np.ndarray, weights: np.ndarray, heads: int, layers: int, hidden: int,
               past: list | None) -> tuple[np.ndarray, np.ndarray]:
        """The same for new positions x [1, T, C] after a KV cache (gpt.extend): past is a
        (k, v) pair [1, H, P, hs] per layer, or None. -> (xf [1, T, C], the new keys and
        values [layers, 2, 1, H, T, hs])."""
        return self._blocks(x, weights, heads, layers, hidden, past, keep=True)

    def _blocks(self, x, weights, heads, layers, hidden, past, keep, train=False, loss=None):
        _float32(x, weights)
        self.live = None  # this pass writes over what a training forward kept
        b, t, c = x.shape
        if c % heads:
            raise ValueError(f"{heads} heads do not divide a width of {c}")
        if keep and b != 1:
            raise ValueError(f"a KV cache holds one sequence, not {b}")
        hs, p = c // heads, 0 if past is None else past[0][0].shape[-2]
        o = forward_layout(b * t, t, c, hidden, weights.size, p, layers if keep else 0)
        table = 0
        if train:  # the table of addresses (int32, written through a float32 view), then the regions
            kept, final, end = train_layout(b * t, t, c, hidden, heads, layers, o["end"] + len(TRAIN_KEPT) * layers + 2)
            addresses = [4 * at for regions in kept for at, _ in regions.values()] + [4 * at for at, _ in final.values()]
            self.host.reserve(end)
            self.host.write(o["end"], np.array(addresses, np.int32).view(np.float32))
            table = 4 * o["end"]
        self.host.reserve(o["end"])
        self.host.write(0, weights)
        self.host.write(o["x"], x if x.flags.c_contiguous else np.ascontiguousarray(x))
        if p:  # every layer's K then V [1, H, P, hs], in one copy
            cache = np.concatenate([m for pair in past for m in pair], axis=None)
            _float32(cache)
            self.host.write(o["kvp"], cache)
        scale = float(np.float32(1.0 / np.sqrt(hs)))
        self.host.forward(0, 4 * o["x"], b * t, t, c, heads, layers, hidden, scale, p, 4 * o["kvp"],
                          4 * o["kvn"] if keep else 0, table, 4 * o["a"], 4 * o["qkv"], 4 * o["y"], 4 * o["h"],
                          4 * o["tmp"], 4 * o["kt"], 4 * o["vs"], 4 * o["sc"], 4 * o["yo"], 4 * o["stats"])
        if loss is not None:  # the loss head, on the output where it lies (`loss`)
            return self._nll(o, x.shape, *loss)
        out = np.empty(x.shape, np.float32)
        self.host.read(o["x"], out)
        if train:  # what it kept stays where it lies, for the backward
            self.live = Kept(table // 4, kept, final, end, b * t, t, o["x"])
            return out, self.live
        if not keep:
            return out, None
        new = np.empty((layers, 2, 1, heads, t, hs), np.float32)
        self.host.read(o["kvn"], new)
        return out, new

    def backward(self, dxf: np.ndarray, weights: np.ndarray, kept: Kept, heads: int, hidden: int,
                 idx: np.ndarray | None = None, embedding: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """gpt.backward's loop over the blocks in one call: from dxf [B, T, C], the gradient of
        the final norm's output, and what the training forward kept (read where it lies) ->
        (the gradient of the first block's input [B, T, C], every block's and the final
        norm's parameter gradients, flat in the weights' order). The forward's weights.
        With the token ids idx [B, T], the embedding's gradient [vocab, C] gets each row of
        that input gradient added at its token, in place (np.add.at's, bit for bit)."""
        self._check(kept)
        b, t, c = dxf.shape
        if (b * t, t) != (kept.rows, kept.t):
            raise ValueError(f"a gradient of {b}×{t} positions for a forward of {kept.rows // kept.t}×{kept.t}")
        _float32(dxf, weights)
        scatter = idx is not None
        if scatter:
            _float32(embedding)
            if embedding.shape[1:] != (c,) or not embedding.flags.c_contiguous:
                raise ValueError(f"an embedding gradient {embedding.shape} for rows of {c}")
            ids = _ids(idx, (b, t), embedding.shape[0], "token ids", "the embedding's rows")
        o = backward_layout(b * t, t, c, hidden, heads, weights.size, kept.end, embedding.shape[0] if scatter else 0)
        self.host.reserve(o["end"])
        self.host.write(0, weights)  # the forward's: a product's operands since went past kept.end
        self.host.write(o["dx"], dxf if dxf.flags.c_contiguous else np.ascontiguousarray(dxf))
        if scatter:
            self.host.write(o["idx"], ids)
            self.host.write(o["eg"], embedding)
        self.live = None  # read once: the products after it may take its place
        self.host.backward(0, 4 * o["g"], 4 * o["dx"], b * t, t, c, heads, len(kept.regions), hidden,
                           float(np.float32(np.sqrt(c // heads))), 4 * kept.table, *(4 * o[k] for k in BACKWARD_WORK[1:]),
                           4 * o["idx"] if scatter else 0, 4 * o["eg"])
        dx, grads = np.empty(dxf.shape, np.float32), np.empty(weights.size, np.float32)
        self.host.read(o["dx"], dx)
        self.host.read(o["g"], grads)
        if scatter:
            self.host.read(o["eg"], embedding)
        return dx, grads

    def head(self, kept: Kept, wte: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, ...]:
        """The tied loss head after a training forward, forward and backward in one call:
        wte [V, C], targets [B, T] -> (logits [B, T, V], each row's max [B, T, 1] and sum of
        exponentials [B, T, 1], the head's part of wte's gradient [V, C], the gradient of the
        final norm's output [B, T, C]), for the mean cross-entropy. What the forward kept
        stays in place for the backward."""
        self._check(kept)
        _float32(wte)
        vocab, c = wte.shape
        b, t = kept.rows // kept.t, kept.t
        ids = _ids(targets, (b, t), vocab, "targets", "the vocabulary")
        o = head_layout(kept.rows, c, vocab, kept.end)
        self.host.reserve(o["end"])
        self.host.write(o["wt"], np.ascontiguousarray(wte.T))
        self.host.write(o["w"], wte if wte.flags.c_contiguous else np.ascontiguousarray(wte))
        self.host.write(o["targets"], ids)
        self.host.head(4 * kept.xf, 4 * o["wt"], 4 * o["w"], 4 * o["targets"], kept.rows, c, vocab,
                       float(np.float32(targets.size)), *(4 * o[k] for k in ("logits", "stats", "probs", "dw", "dx")))
        logits, stats = np.empty((b, t, vocab), np.float32), np.empty((b, t, 2), np.float32)
        dw, dx = np.empty((vocab, c), np.float32), np.empty((b, t, c), np.float32)
        for name, out in (("logits", logits), ("stats", stats), ("dw", dw), ("dx", dx)):
            self.host.read(o[name], out)
        return logits, stats[..., :1], stats[..., 1:], dw, dx

    def adamw(self, p: np.ndarray, m: np.ndarray, v: np.ndarray, g: np.ndarray, decayed: np.ndarray,
              k1, k2, decay, lr, c1, c2, eps) -> None:
        """train.AdamW's update of p, m, v [n] in place, from g [n], the decay applied where the
        int32 mask `decayed` is -1: numpy's float32 operations in its order, the same bits.
        The scalars are float32 (numpy casts a Python float to the array's type)."""
        _float32(p, m, v, g)
        n = p.size
        if not (m.size == v.size == g.size == decayed.size == n and decayed.dtype == np.int32
                and all(x.flags.c_contiguous for x in (p, m, v))):
            raise ValueError("AdamW's arrays must be contiguous, of one size, the mask int32")
        self.live = None
        self.host.reserve(5 * n)
        for i, x in enumerate((p, m, v, g, decayed.view(np.float32))):
            self.host.write(i * n, x)
        self.host.adamw(0, 4 * n, 8 * n, 12 * n, 16 * n, n, *(float(np.float32(x)) for x in (k1, k2, decay, lr, c1, c2, eps)))
        for i, x in enumerate((p, m, v)):
            self.host.read(i * n, x)

    def exp_rows(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A softmax's parts over the last axis, as a loss needs them: x [..., N] ->
        (exp(x - max) [..., N], max [..., 1], sum of the exponentials [..., 1]). The passes run
        this code inside them (`head`, `loss`); alone, it is the tests' handle on it."""
        _float32(x)
        *lead, n = x.shape
        rows, at = math.prod(lead), self.base
        self.host.reserve(at + rows * n + 2 * rows + 4)  # a row's last vector reads up to 3 floats past it
        self.host.write(at, x if x.flags.c_contiguous else np.ascontiguousarray(x))
        self.host.softmax(4 * at, rows, n, 1, n - 1, 1.0, 0, 4 * (at + rows * n))
        e, stats = np.empty(x.shape, np.float32), np.empty((*lead, 2), np.float32)
        self.host.read(at, e)
        self.host.read(at + rows * n, stats)
        return e, stats[..., :1], stats[..., 1:]


def _float32(*xs) -> None:
    if any(x.dtype != np.float32 for x in xs):
        raise TypeError(f"the kernel computes in float32, not {', '.join(str(x.dtype) for x in xs)}")


class BrowserHost:
    """The kernel instantiated by the browser's WebAssembly, from Pyodide: copies through
    JsBuffer.assign / assign_to (Pyodide's public API for buffers)."""

    def __init__(self, wasm: bytes):
        from js import Float32Array, WebAssembly
        from pyodide.ffi import to_js

        self._f32 = Float32Array
        self.module = WebAssembly.Module.new(to_js(wasm))  # compiled once: the helper shares it (offload.py)
        exports = WebAssembly.Instance.new(self.module).exports
        self.memory = exports.memory
        for name in EXPORTS:  # the kernel's functions, called with byte addresses and sizes
            setattr(self, name, getattr(exports, name))
        self.floats = Float32Array.new(self.memory.buffer)
        self.capacity = self.floats.length  # kept as a Python int: a JS property read per call costs
        self.views = {}  # (offset, size) -> Float32Array view: the same shapes recur every step

    def reserve(self, floats: int) -> None:
        if floats > self.capacity:
            self.memory.grow(-(-(floats - self.capacity) * 4 // PAGE))
            self.floats = self._f32.new(self.memory.buffer)  # growing detaches the old views
            self.capacity = self.floats.length
            self.views.clear()

    def view(self, at: int, size: int):
        """A view of the kernel's memory, kept: making one per copy was half a call's fixed cost."""
        v = self.views.get((at, size))
        if v is None:
            if len(self.views) >= VIEWS:
                self.views.clear()
            v = self.views[at, size] = self.floats.subarray(at, at + size)
        return v

    def write(self, at: int, x: np.ndarray) -> None:
        self.view(at, x.size).assign(x)

    def read(self, at: int, out: np.ndarray) -> None:
        self.view(at, out.size).assign_to(out)


def browser_kernel() -> tuple[Kernel | None, str | None]:
    """(the kernel in Pyodide, None), or (None, why not): not in a browser (no reason: none
    is tried), or no WebAssembly SIMD there (then models.backend keeps einsum)."""
    if sys.platform != "emscripten":
        return None, None
    try:
        return Kernel(BrowserHost(WASM.read_bytes())), None
    except Exception as e:  # a browser without WebAssembly SIMD (Safari < 16.4) compiles nothing
        return None, f"{type(e).__name__}: {e}"


def assemble() -> bytes:
    """sgemm.wat -> WebAssembly bytes (wasmtime's assembler: a test and authoring tool only)."""
    import wasmtime

    return bytes(wasmtime.wat2wasm(WAT.read_text()))


if __name__ == "__main__":
    WASM.write_bytes(assemble())
    print(f"{WASM.name}: {WASM.stat().st_size} bytes from {WAT.name}")

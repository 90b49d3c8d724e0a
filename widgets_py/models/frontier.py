"""The latency–throughput frontier of decode: how far batching pays, and the batch a TPOT target allows.

Everything here is `serving`'s physics read along the batch axis; nothing new is assumed.

- The critical batch (jax-ml/scaling-book, inference.md, "Linear operations: what bottlenecks
  us?"): the smallest batch whose decode step has at least as much FLOP time as byte time.
  Without the cache it is about (P/β)·(bytes per parameter)/2 for a dense model: 240 for bf16
  on a TPU v5e, 120 for int8 weights multiplied in bf16, 240 again with int8 products. With
  the cache, each sequence adds its cache's bytes as well as its FLOPs, so the point moves away
  with the context, and past some context there is none: decode stays memory-bound at any batch.
- The frontier (the scaling book's "Pareto frontier" figure, from the ESTI paper): as the batch
  grows, each step gets slower (TPOT) and the group emits more tokens per second per GPU.
- Memory bounds the batch first when caches are long: the sequences whose cache fits beside
  the weights in the share of memory an engine takes (vLLM's `gpu_memory_utilization`, 0.9).
"""

from __future__ import annotations

import math

import numpy as np

from ..engine import fmt
from .numformats import FORMATS
from .hardware import counts
from .serving import Setup, attention_flops_per_pair, decode_step, flops_per_token, kv_bytes_per_token, params_read

MEMORY_SHARE = 0.9  # vLLM EngineArgs.gpu_memory_utilization default: the rest is for the runtime
MAX_BATCH = 1 << 20  # beyond a million sequences, "never" is the honest answer


def compute_minus_memory(s: Setup, batch: int, context: int) -> float:
    """FLOP time minus byte time of a decode step (s): negative while the step waits for memory."""
    m = s.m
    flops = batch * flops_per_token(m) / s.peak + batch * (context + 1) * attention_flops_per_pair(m) / s.attention_peak
    nbytes = params_read(m, batch) * FORMATS[s.weights].nbytes + batch * context * kv_bytes_per_token(m, s.cache)
    return flops - nbytes / s.bandwidth


def critical_batch(s: Setup, context: int = 0) -> float:
    """Smallest batch whose decode step is compute-bound (math.inf: none up to MAX_BATCH).

    The difference FLOP time − byte time is convex in the batch (the experts a batch reads grow
    ever more slowly), negative at small batches: it crosses zero once at most, found by bisection.
    """
    if context < 0:
        raise ValueError(f"context must be >= 0, not {context}")
    if compute_minus_memory(s, 1, context) >= 0:
        return 1
    if compute_minus_memory(s, MAX_BATCH, context) < 0:
        return math.inf
    lo, hi = 1, MAX_BATCH  # memory-bound at lo, compute-bound at hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if compute_minus_memory(s, mid, context) < 0 else (lo, mid)
    return hi


def cache_memory(s: Setup) -> float:
    """Bytes left for the KV cache: the engine's share of memory minus every weight (negative: they do not fit)."""
    return MEMORY_SHARE * s.memory - counts(s.m).total * FORMATS[s.weights].nbytes


def critical_values(b: float, key: str) -> dict:
    """A critical batch as a widget's outputs: the number (0 when there is none) and a Catalan text."""
    finite = math.isfinite(b)
    text = fmt.number(b) if finite else "cap: el pas espera la memòria amb qualsevol lot"
    return {key: b if finite else 0, f"{key}_exists": finite, f"{key}_text": text}


def batch_in_memory(s: Setup, context: int) -> int:
    """Sequences of `context` tokens whose cache fits beside all the weights (0: the weights do not fit)."""
    free = cache_memory(s)
    per_seq = max(context, 1) * kv_bytes_per_token(s.m, s.cache)
    return max(0, math.floor(free / per_seq))


def frontier(s: Setup, context: int, batches) -> tuple[np.ndarray, np.ndarray]:
    """([k] TPOT in s, [k] tokens/s per GPU) of a decode step at each batch of `batches`."""
    batches = np.asarray(batches, int)  # [k]
    if batches.size == 0 or batches.min() < 1:
        raise ValueError("batches must be positive integers")
    tpot = np.array([decode_step(s, int(b), context) for b in batches])  # [k]
    return tpot, batches / tpot / s.n_gpus


def best_under(tpot: np.ndarray, per_gpu: np.ndarray, target: float, allowed: np.ndarray) -> int:
    """Index of the highest throughput whose TPOT meets `target` among `allowed` points (-1: none)."""
    ok = (tpot <= target) & allowed  # [k]
    return int(np.argmax(np.where(ok, per_gpu, -1.0))) if ok.any() else -1

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
- Memory bounds the batch first when caches are long. The one rule for what fits, as vLLM sizes
  its cache (`gpu_worker.determine_available_memory`): the engine takes a share of each GPU's
  memory (`gpu_memory_utilization`, 0.9 by default); out of it come the weights and the peak
  activations of one profiling pass of `max_num_batched_tokens` tokens; the rest is KV cache.
  The cost widget and this module both call `cache_memory`.
"""

from __future__ import annotations

import math

import numpy as np

from .numformats import FORMATS
from .hardware import GiB, counts
from .serving import Setup, attention_flops_per_pair, decode_step, flops_per_token, kv_bytes_per_token, params_read

MEMORY_SHARE = 0.9  # vLLM EngineArgs.gpu_memory_utilization default: the rest is for the runtime
MAX_BATCH = 1 << 20  # beyond a million sequences, "never" is the honest answer


def compute_minus_memory(s: Setup, batch: int, context: int) -> float:
    """FLOP time minus byte time of a decode step (s): negative while the step waits for memory."""
    m = s.m
    flops = batch * flops_per_token(m) / s.peak + batch * (context + 1) * attention_flops_per_pair(m) / s.attention_peak
    nbytes = params_read(m, batch) * FORMATS[s.weights].nbytes + batch * context * kv_bytes_per_token(m, s.cache) * s.kv_copies
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


def profile_tokens(s: Setup) -> tuple[int, int]:
    """(tokens, sequences) of the pass vLLM profiles: its default budget per iteration for an API
    server (`max_num_batched_tokens`) and its default `max_num_seqs`, 8 192 and 1 024 on GPUs of
    70 GiB or more other than the A100, 2 048 and 256 on the rest (vLLM EngineArgs.get_batch_defaults)."""
    big = s.g.memory >= 70 * GiB and not s.gpu.startswith("a100")
    return (8192, 1024) if big else (2048, 256)


def activation_bytes(s: Setup) -> float:
    """Peak activations of the profiling pass over the whole group, bytes: our estimate.

    Per GPU, the widest point of a block: the residual stream and its normed copy ([T, d] each,
    whole on every GPU of the group) beside the MLP's gate, up and their product ([T, f/n] each,
    split n ways; f the MLP width a token uses: its experts' together in a MoE); and the fp32
    logits of the sequences sampled at the end of the pass, over the whole vocabulary. Left out:
    attention's buffers (FlashAttention keeps no L×L scores), kernel workspaces, CUDA graphs and
    NCCL buffers, which vLLM also counts: this errs low, towards more cache.
    """
    m, n = s.m, s.n_gpus
    tokens, seqs = profile_tokens(s)
    f = max(m.d_ff_dense, (m.n_active_experts + m.n_shared_experts) * m.d_ff) if m.n_experts else m.d_ff
    per_gpu = tokens * (2 * m.d_model + 3 * f / n) * 2 + min(tokens, seqs) * m.vocab * 4
    return n * per_gpu


def cache_memory(s: Setup, share: float = MEMORY_SHARE) -> float:
    """Bytes left for the KV cache: the engine's share of memory minus every weight and the peak
    activations (negative: they do not fit)."""
    return share * s.memory - counts(s.m).total * FORMATS[s.weights].nbytes - activation_bytes(s)


def batch_in_memory(s: Setup, context: int, share: float = MEMORY_SHARE) -> int:
    """Sequences of `context` tokens whose cache fits beside the weights and activations (0: those do not fit)."""
    free = cache_memory(s, share)
    per_seq = max(context, 1) * kv_bytes_per_token(s.m, s.cache) * s.kv_copies  # its copies over the group
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

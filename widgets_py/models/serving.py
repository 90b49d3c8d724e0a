"""The physics of a serving step, in one place: bytes, FLOPs and roofline times.

Every serving widget (roofline, KV cache, batching, cost) calls these functions; none
carries its own copy. The assumptions, stated once:

1. Formats: bytes per stored scalar (`numformats.FORMATS`, the one table); the scales of grouped formats (INT4 with
   one scale per 128 weights adds 1/64 of a byte per weight) are left out.
2. FLOPs: 2 per parameter a token multiplies by (Kaplan et al. 2020, §2.1): attention,
   the dense or shared MLPs, its own k routed experts, the output head. An embedding
   lookup multiplies nothing. Attention's score FLOPs (Q·K and A·V) are left out.
3. Weights read by a pass of T tokens: every always-used matrix once for the whole pass;
   routed experts, only those some token of the pass uses. With uniform, independent
   routing of k of E experts, one expert is missed by all T tokens with probability
   (1 − k/E)^T, so E·(1 − (1 − k/E)^T) experts per layer are read, in expectation; shared
   experts are always read. Real routers are not uniform (fewer distinct experts).
4. The input embedding is a lookup: a pass reads one row per token, not the table
   (a tied table is read whole anyway, as the output head).
5. Step time (jax-ml/scaling-book, inference.md, "Theoretical Step Time (General)"): the
   weight matmuls overlap their loads with their FLOPs, max(FLOPs/peak, bytes/bandwidth);
   attention's KV traffic (read in decode, written in prefill) is memory-bound and does
   not overlap with them, so its time adds.
6. TTFT is one prefill pass of the whole prompt on an idle GPU: its weights, its FLOPs,
   its cache written (and a reused prefix's cache read). No queue, no network, no sampling.
7. Several GPUs add up their FLOPs, bandwidth and memory; their communication is left out.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..engine import fmt
from .hardware import GPU, GPUS, MODELS, ModelCard, counts
from .numformats import FORMATS


WEIGHT_FORMATS = ("fp32", "bf16", "fp8", "int8", "int4")
CACHE_FORMATS = ("fp32", "bf16", "fp8", "int8")  # serving engines do not keep the cache in int4


def format_choices(keys: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """(key, label) pairs for a control: 'BF16 · 2 bytes'."""
    return tuple((k, f"{FORMATS[k].label} · {fmt.number(FORMATS[k].nbytes, 1 if FORMATS[k].nbytes < 1 else 0)} "
                     f"byte{'s' if FORMATS[k].nbytes != 1 else ''}") for k in keys)


@dataclass(frozen=True)
class Setup:
    """What is served and on what: the one way widgets declare a model and its GPUs."""
    model: str  # key of hardware.MODELS
    gpu: str  # key of hardware.GPUS
    weights: str = "bf16"  # key of FORMATS for the weights
    cache: str = "bf16"  # key of FORMATS for the KV cache
    n_gpus: int = 1  # GPUs adding up FLOPs, bandwidth and memory

    @property
    def m(self) -> ModelCard:
        return MODELS[self.model]

    @property
    def g(self) -> GPU:
        return GPUS[self.gpu]

    @property
    def peak(self) -> float:  # FLOP/s
        return self.n_gpus * self.g.flops_bf16

    @property
    def bandwidth(self) -> float:  # bytes/s
        return self.n_gpus * self.g.bandwidth

    @property
    def memory(self) -> float:  # bytes
        return self.n_gpus * self.g.memory


def kv_bytes_per_token(m: ModelCard, cache: str) -> float:
    """Cache bytes one token adds: per layer, K and V of every KV head, or MLA's latent + RoPE key."""
    if m.mla:
        _, kv_lora, rope_dim, _ = m.mla
        per_layer = kv_lora + rope_dim  # one compressed latent plus the key's shared RoPE part
    else:
        per_layer = 2 * m.n_kv_heads * m.d_head  # K and V
    return per_layer * m.n_layers * FORMATS[cache].nbytes


def expected_experts(n_experts: int, k: int, tokens: float) -> float:
    """Distinct routed experts per layer that `tokens` tokens use, each picking k of E uniformly."""
    return n_experts * (1.0 - (1.0 - k / n_experts) ** tokens)


def params_read(m: ModelCard, tokens: int) -> float:
    """Parameters a pass of `tokens` tokens reads from memory (assumptions 3 and 4)."""
    c = counts(m)
    experts = expected_experts(m.n_experts, m.n_active_experts, tokens) if m.n_experts else 0.0
    tables = (0 if m.tied else 1) + (1 if m.n_pos else 0)  # lookup tables: one row each per token
    return c.always + c.moe_layers * experts * c.expert + tokens * tables * m.d_model


def flops_per_token(m: ModelCard) -> float:
    """2 FLOPs per parameter a token multiplies by: its active parameters minus the lookups."""
    c = counts(m)
    return 2.0 * (c.active - c.lookup)


def step_time(s: Setup, tokens: int, kv_tokens: float) -> float:
    """Roofline time of one forward pass of `tokens` tokens that moves `kv_tokens` tokens of cache."""
    weights = params_read(s.m, tokens) * FORMATS[s.weights].nbytes
    matmuls = max(tokens * flops_per_token(s.m) / s.peak, weights / s.bandwidth)  # loads overlap FLOPs
    return kv_tokens * kv_bytes_per_token(s.m, s.cache) / s.bandwidth + matmuls  # attention adds


def decode_step(s: Setup, batch: int, context: int) -> float:
    """One decode step: one new token for each of `batch` sequences with `context` tokens cached."""
    return step_time(s, batch, batch * context)


def ttft(s: Setup, prompt: int, cached: int = 0) -> float:
    """Time to first token: the prefill of `prompt` new tokens after `cached` reused ones."""
    return step_time(s, prompt, prompt + cached)


def clamp_context(m: ModelCard, tokens: int) -> tuple[int, str]:
    """Tokens the model can hold, and the Catalan note the widget shows."""
    if tokens <= m.max_context:
        return tokens, f"dins del límit de {m.label} ({fmt.number(m.max_context)} posicions)"
    return m.max_context, (f"{m.label} només admet {fmt.number(m.max_context)} posicions: es calcula amb "
                           f"{fmt.number(m.max_context)} tokens en lloc de {fmt.number(tokens)}")

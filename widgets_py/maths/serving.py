"""The physics of a serving step, in one place: bytes, FLOPs, collectives and roofline times.

Every serving widget (roofline, KV cache, batching, cost, tensor parallelism, frontier) calls
these functions; none carries its own copy. The assumptions, stated once:

1. Formats: bytes per stored scalar (`numformats.FORMATS`, the one table); the scales of grouped
   formats (INT4 with one scale per 128 weights adds 1/64 of a byte per weight) are left out.
   A weight format also fixes the products' format (`SCHEMES`): weight-only INT4 (W4A16, as AWQ
   and GPTQ kernels run) multiplies in bf16, so it reads fewer bytes but computes no faster;
   FP8 and INT8 (W8A8) multiply at the GPU's 8-bit peak, when it has one.
2. FLOPs: 2 per parameter a token multiplies by (Kaplan et al. 2020, §2.1): attention's
   projections, the dense or shared MLPs, its own k routed experts, the output head. An
   embedding lookup multiplies nothing. Attention's own products, QKᵀ and AV, add
   2·h·(d_qk + d_v) FLOPs per layer for each (query, key) pair; causal, so a pass of T new
   tokens after C cached ones has T·C + T(T+1)/2 pairs (jax-ml/scaling-book, inference.md,
   "What about attention?", with the mask's half). They run in bf16 whatever the weights'
   format. FlashAttention changes their memory traffic, not their FLOPs.
3. Weights read by a pass of T tokens: every always-used matrix once for the whole pass;
   routed experts, only those some token of the pass uses. With uniform, independent
   routing of k of E experts, one expert is missed by all T tokens with probability
   (1 − k/E)^T, so E·(1 − (1 − k/E)^T) experts per layer are read, in expectation; shared
   experts are always read. Real routers are not uniform (fewer distinct experts).
4. The input embedding is a lookup: a pass reads one row per token, not the table
   (a tied table is read whole anyway, as the output head).
5. Step time (scaling book, inference.md, "Theoretical Step Time (General)"): the weight
   matmuls overlap their loads with their FLOPs, max(FLOPs/peak, bytes/bandwidth); attention
   is a roofline of its own, max(its FLOPs/bf16 peak, its KV traffic/bandwidth), memory-bound
   in decode (the cache is read) and compute-bound in a long prefill; the two add, and the
   collectives add to both (vLLM and Megatron-LM's plain tensor parallelism do not overlap them).
6. TTFT is one prefill pass of the whole prompt on an idle GPU group: its weights, its FLOPs,
   its attention, its cache written (and a reused prefix's cache read), its collectives. No
   queue, no network to the user, no sampling.
7. Tensor parallelism over n GPUs (Megatron-LM, Shoeybi et al. 2019, §3): every matrix is
   split, so weights, FLOPs and bandwidth divide evenly. The cache is split by KV heads only,
   as vLLM's attention layers do: each GPU keeps ceil(n_kv/n) heads, so with more GPUs than KV
   heads every head is copied on n/n_kv of them ("Number of KV heads is less than TP size, so
   we replicate the KV heads", vllm/model_executor/models/llama.py), and MLA's latent, one per
   token and layer with no heads to split, is whole on every GPU (deepseek_v2.py; SGLang's DP
   attention exists to avoid that copy). Each GPU reads its own share of the cache at its own
   bandwidth, and the group's memory holds n·share copies of it (`kv_share`). Each block then pays two all-reduces of the
   pass's activations, [T, d_model] in bf16: after attention's output projection and after
   the MLP. A ring all-reduce of S bytes costs latency + 2(n − 1)/n · S / busBw (nccl-tests
   `doc/PERFORMANCE.md` defines busBw that way); latency and busBw are the link's
   (`hardware.Link`), and a group larger than one node crosses the network (`NETWORK`).
   MoE experts are split like dense MLPs (expert parallelism and DP attention are not modelled).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .hardware import GPU, GPUS, MODELS, NETWORK, Link, ModelCard, counts
from .numformats import FORMATS


WEIGHT_FORMATS = ("fp32", "bf16", "fp8", "int8", "int4")
CACHE_FORMATS = ("fp32", "bf16", "fp8", "int8")  # serving engines do not keep the cache in int4
# weight format -> (format of the products, scheme's name): weight-only or weight-and-activation
SCHEMES = {"fp32": ("bf16", "W32A16"), "bf16": ("bf16", "W16A16"), "fp8": ("fp8", "W8A8"),
           "int8": ("int8", "W8A8"), "int4": ("bf16", "W4A16")}
ACTIVATION_BYTES = 2  # the all-reduced activations stay in bf16 whatever the weights' format


def peak_of(g: GPU, compute: str) -> float:
    """Dense tensor-core peak of one GPU in a product format; without 8-bit units, bf16's."""
    peak = {"bf16": g.flops_bf16, "fp8": g.flops_fp8, "int8": g.flops_int8}[compute]
    return peak or g.flops_bf16


@dataclass(frozen=True)
class Setup:
    """What is served and on what: the one way widgets declare a model and its GPUs."""
    model: str  # key of hardware.MODELS
    gpu: str  # key of hardware.GPUS
    weights: str = "bf16"  # key of FORMATS for the weights
    cache: str = "bf16"  # key of FORMATS for the KV cache
    n_gpus: int = 1  # GPUs of one tensor-parallel group (assumption 7)
    activations: str | None = None  # format of the products (None: the weights' scheme, SCHEMES)
    collectives: bool = True  # count tensor parallelism's all-reduces (False: the ideal, free link)

    def __post_init__(self):
        if self.n_gpus < 1 or int(self.n_gpus) != self.n_gpus:
            raise ValueError(f"n_gpus must be a positive integer, not {self.n_gpus!r}")
        for name, table in (("model", MODELS), ("gpu", GPUS), ("weights", SCHEMES), ("cache", FORMATS)):
            if getattr(self, name) not in table:
                raise ValueError(f"unknown {name} {getattr(self, name)!r}; allowed: {', '.join(table)}")

    @property
    def m(self) -> ModelCard:
        return MODELS[self.model]

    @property
    def g(self) -> GPU:
        return GPUS[self.gpu]

    @property
    def compute(self) -> str:  # format the weight matmuls multiply in
        return self.activations or SCHEMES[self.weights][0]

    @property
    def peak(self) -> float:  # FLOP/s of the weight matmuls
        return self.n_gpus * peak_of(self.g, self.compute)

    @property
    def attention_peak(self) -> float:  # FLOP/s of QKᵀ and AV, always bf16 (assumption 2)
        return self.n_gpus * self.g.flops_bf16

    @property
    def bandwidth(self) -> float:  # bytes/s
        return self.n_gpus * self.g.bandwidth

    @property
    def memory(self) -> float:  # bytes
        return self.n_gpus * self.g.memory

    @property
    def kv_copies(self) -> float:  # the group's cache bytes over one copy of the cache (assumption 7)
        return self.n_gpus * kv_share(self.m, self.n_gpus)

    @property
    def link(self) -> Link | None:  # what the group's all-reduces cross (assumption 7)
        own = self.g.link
        return own if own is None or self.n_gpus <= own.domain else NETWORK


def kv_bytes_per_token(m: ModelCard, cache: str) -> float:
    """Cache bytes one token adds: per layer, K and V of every KV head, or MLA's latent + RoPE key."""
    if m.mla:
        _, kv_lora, rope_dim, _ = m.mla
        per_layer = kv_lora + rope_dim  # one compressed latent plus the key's shared RoPE part
    else:
        per_layer = 2 * m.n_kv_heads * m.d_head  # K and V
    return per_layer * m.n_layers * FORMATS[cache].nbytes


def kv_share(m: ModelCard, n_gpus: int) -> float:
    """Share of the cache each GPU of a tensor-parallel group holds and reads (assumption 7):
    ceil(n_kv/n) of the n_kv heads, at least one; MLA's latent, all of it."""
    if m.mla:
        return 1.0
    return math.ceil(m.n_kv_heads / n_gpus) / m.n_kv_heads


def expected_experts(n_experts: int, k: int, tokens: float) -> float:
    """Distinct routed experts per layer that `tokens` tokens use, each picking k of E uniformly."""
    return n_experts * (1.0 - (1.0 - k / n_experts) ** tokens)


def matrices_read(m: ModelCard, tokens: int) -> float:
    """Parameters of the matrices (not lookup tables) a pass of `tokens` tokens reads (assumption 3)."""
    c = counts(m)
    experts = expected_experts(m.n_experts, m.n_active_experts, tokens) if m.n_experts else 0.0
    return c.always + c.moe_layers * experts * c.expert


def params_read(m: ModelCard, tokens: int) -> float:
    """Parameters a pass of `tokens` tokens reads from memory (assumptions 3 and 4)."""
    tables = (0 if m.tied else 1) + (1 if m.n_pos else 0)  # lookup tables: one row each per token
    return matrices_read(m, tokens) + tokens * tables * m.d_model


def matrices_read_share(m: ModelCard, tokens: int) -> float:
    """Share of the matrices a pass can read that a pass of `tokens` tokens reads: the input
    tables are left out of both sides, since a pass only looks rows up in them (assumption 4)."""
    c = counts(m)
    return matrices_read(m, tokens) / (c.total - c.lookup)


def flops_per_token(m: ModelCard) -> float:
    """2 FLOPs per parameter a token multiplies by: its active parameters minus the lookups."""
    c = counts(m)
    return 2.0 * (c.active - c.lookup)


def attention_flops_per_pair(m: ModelCard) -> float:
    """QKᵀ and AV FLOPs of one (query, key) pair over all layers: 2·h·(d_qk + d_v) per layer."""
    if m.mla:  # the prefill runs MLA as multi-head attention: keys of nope + rope dims, values of v_head
        _, _, rope_dim, v_head = m.mla
        d_qk, d_v = m.d_head + rope_dim, v_head
    else:
        d_qk = d_v = m.d_head
    return 2.0 * m.n_heads * (d_qk + d_v) * m.n_layers


def causal_pairs(tokens: float, cached: float) -> float:
    """(query, key) pairs of a causal pass: new token i sees the cached ones and new 0..i."""
    return tokens * cached + tokens * (tokens + 1) / 2


def all_reduce_time(link: Link, n: int, nbytes: float) -> float:
    """One ring all-reduce of `nbytes` over n GPUs: latency + 2(n − 1)/n · bytes / busBw (nccl-tests)."""
    if n == 1:
        return 0.0
    return link.latency + 2 * (n - 1) / n * nbytes / link.bus_bandwidth


def collective_time(s: Setup, tokens: float) -> float:
    """Tensor parallelism's all-reduces in a pass of `tokens`: 2 per block of [tokens, d_model] (Megatron-LM)."""
    if s.n_gpus == 1 or not s.collectives:
        return 0.0
    if s.link is None:
        raise ValueError(f"{s.g.label} declares no link between GPUs: set collectives=False to ignore them")
    per_call = all_reduce_time(s.link, s.n_gpus, tokens * s.m.d_model * ACTIVATION_BYTES)
    return 2 * s.m.n_layers * per_call


def weights_time(params: float, nbytes: float, bandwidth: float) -> float:
    """Seconds to read `params` weights of `nbytes` bytes each at `bandwidth` bytes/s: a memory-bound
    pass's time, and so 1 / the ceiling of tokens per second of a decode at batch 1."""
    return params * nbytes / bandwidth


@dataclass(frozen=True)
class Step:
    """The three parts of a pass's time, seconds (assumption 5)."""
    matmuls: float  # weight matmuls: max(FLOPs / peak, weight bytes / bandwidth)
    attention: float  # QKᵀ and AV: max(FLOPs / bf16 peak, KV bytes moved / bandwidth)
    collectives: float  # tensor parallelism's all-reduces

    @property
    def total(self) -> float:
        return self.matmuls + self.attention + self.collectives


def step_parts(s: Setup, tokens: int, kv_tokens: float, pairs: float = 0.0) -> Step:
    """A forward pass of `tokens` tokens moving `kv_tokens` tokens of cache over `pairs` attended pairs."""
    if tokens < 1:
        raise ValueError(f"a pass needs at least one token, not {tokens}")
    weights = weights_time(params_read(s.m, tokens), FORMATS[s.weights].nbytes, s.bandwidth)
    matmuls = max(tokens * flops_per_token(s.m) / s.peak, weights)  # loads overlap FLOPs
    attention = max(pairs * attention_flops_per_pair(s.m) / s.attention_peak,
                    kv_tokens * kv_bytes_per_token(s.m, s.cache) * s.kv_copies / s.bandwidth)
    return Step(matmuls, attention, collective_time(s, tokens))


def step_time(s: Setup, tokens: int, kv_tokens: float, pairs: float = 0.0) -> float:
    """Roofline time of one forward pass (assumption 5), seconds."""
    return step_parts(s, tokens, kv_tokens, pairs).total


def decode_parts(s: Setup, batch: int, context: int) -> Step:
    """One decode step: one new token for each of `batch` sequences with `context` tokens cached."""
    return step_parts(s, batch, batch * context, batch * causal_pairs(1, context))


def decode_step(s: Setup, batch: int, context: int) -> float:
    return decode_parts(s, batch, context).total


def prefill_parts(s: Setup, prompt: int, cached: int = 0) -> Step:
    """The prefill of `prompt` new tokens after `cached` reused ones: writes their cache, reads the prefix's."""
    return step_parts(s, prompt, prompt + cached, causal_pairs(prompt, cached))


def ttft(s: Setup, prompt: int, cached: int = 0) -> float:
    """Time to first token: the prefill of `prompt` new tokens after `cached` reused ones."""
    return prefill_parts(s, prompt, cached).total


def clamp_context(m: ModelCard, tokens: int) -> int:
    """Tokens the model can hold of `tokens` (its positions end at max_context)."""
    return min(tokens, m.max_context)


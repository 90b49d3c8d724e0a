"""Model cards and GPU datasheets: how every serving widget declares a model and a GPU.

Parameter counts are not typed in: they are computed from each model's published
shapes (its `config.json` on the model card), so a reader can check every factor.
Each model also declares its context limit (`max_position_embeddings`). The physics
of a serving step (bytes, step times) lives in `serving.py`, not here.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass


@dataclass(frozen=True)
class ModelCard:
    key: str  # preset id used by controls and the CLI
    label: str  # name shown to the reader
    source: str  # where the shapes come from
    d_model: int  # hidden size
    n_layers: int  # transformer blocks
    n_heads: int  # query heads
    n_kv_heads: int  # key/value heads (GQA: fewer than n_heads)
    d_head: int  # dimension of one head (MLA: qk_nope_head_dim)
    d_ff: int  # MLP hidden size of a dense block (of one expert in a MoE block)
    vocab: int  # vocabulary size
    max_context: int  # positions the model was trained for (config.json max_position_embeddings)
    tied: bool = False  # output head shares the embedding matrix
    gated_mlp: bool = True  # SwiGLU (3 matrices) instead of GELU MLP (2 matrices)
    biases: bool = False  # GPT-2 style biases in linear layers
    n_pos: int = 0  # learned absolute position embeddings (GPT-2), else 0
    n_experts: int = 0  # routed experts per MoE block (0: dense model)
    n_active_experts: int = 0  # routed experts used per token
    n_shared_experts: int = 0  # experts every token uses (DeepSeek)
    n_dense_layers: int = 0  # leading dense blocks in a MoE model (DeepSeek: 3)
    d_ff_dense: int = 0  # MLP size of those dense blocks
    mla: tuple[int, int, int, int] | None = None  # (q_lora, kv_lora, rope_dim, v_head) for MLA


@dataclass(frozen=True)
class Counts:
    """A model's parameters split by how a serving step reads them."""
    total: int  # every parameter stored
    active: int  # parameters one token uses (its k routed experts, not the others)
    lookup: int  # input tables read one row per token (token and position embeddings, when untied)
    always: int  # read whole at every step: attention, norms, routers, dense and shared MLPs, head
    expert: int  # one routed expert's MLP
    moe_layers: int  # blocks with routed experts


def _attention(m: ModelCard) -> int:
    d, h = m.d_model, m.n_heads
    if m.mla:
        q_lora, kv_lora, rope, v_head = m.mla
        nope = m.d_head  # qk_nope_head_dim
        q = d * q_lora + q_lora + q_lora * h * (nope + rope)  # q_a, its norm, q_b
        kv = d * (kv_lora + rope) + kv_lora + kv_lora * h * (nope + v_head)  # kv_a, norm, kv_b
        return q + kv + h * v_head * d  # + o_proj
    q_dim, kv_dim = h * m.d_head, m.n_kv_heads * m.d_head
    weights = d * q_dim + 2 * d * kv_dim + q_dim * d  # W_q, W_k, W_v, W_o
    return weights + ((q_dim + 2 * kv_dim + d) if m.biases else 0)


def _mlp(m: ModelCard, d_ff: int) -> int:
    if m.gated_mlp:
        return 3 * m.d_model * d_ff  # gate, up, down
    return 2 * m.d_model * d_ff + ((d_ff + m.d_model) if m.biases else 0)


def _norms(m: ModelCard) -> int:
    return 2 * m.d_model * (2 if m.biases else 1)  # two norms per block (LayerNorm has a bias)


@functools.lru_cache(maxsize=64)
def counts(m: ModelCard) -> Counts:
    """Parameters from the shapes alone, split into what a step reads whole, by row, by expert.
    Kept per card (frozen): a simulated run asks for them at every iteration."""
    tables = m.vocab * m.d_model + m.n_pos * m.d_model  # token (+ learned position) embeddings
    head = 0 if m.tied else m.vocab * m.d_model  # a tied head is the token table itself
    final_norm = m.d_model * (2 if m.biases else 1)
    fixed = tables + head + final_norm
    lookup = tables - (m.vocab * m.d_model if m.tied else 0)  # a tied table is read whole, as the head
    if not m.n_experts:
        total = fixed + m.n_layers * (_attention(m) + _mlp(m, m.d_ff) + _norms(m))
        return Counts(total, total, lookup, total - lookup, 0, 0)
    n_moe = m.n_layers - m.n_dense_layers
    dense_block = _attention(m) + _mlp(m, m.d_ff_dense) + _norms(m)
    router = m.d_model * m.n_experts + (m.n_experts if m.n_shared_experts else 0)  # + DeepSeek's bias
    expert = _mlp(m, m.d_ff)
    shared = _attention(m) + router + _norms(m) + m.n_shared_experts * expert  # per MoE block
    always = fixed - lookup + m.n_dense_layers * dense_block + n_moe * shared
    total = lookup + always + n_moe * m.n_experts * expert
    active = lookup + always + n_moe * m.n_active_experts * expert
    return Counts(total, active, lookup, always, expert, n_moe)


def _llama(key: str, label: str, repo: str, d: int, layers: int, heads: int, d_ff: int, context: int) -> ModelCard:
    return ModelCard(key, label, f"{repo} config.json", d_model=d, n_layers=layers, n_heads=heads, n_kv_heads=8,
                     d_head=128, d_ff=d_ff, vocab=128256, max_context=context)


MODELS: dict[str, ModelCard] = {
    m.key: m
    for m in (
        ModelCard("gpt2-xl", "GPT-2 XL", "openai-community/gpt2-xl config.json",
                  d_model=1600, n_layers=48, n_heads=25, n_kv_heads=25, d_head=64, d_ff=6400,
                  vocab=50257, max_context=1024, tied=True, gated_mlp=False, biases=True, n_pos=1024),
        _llama("llama-3-8b", "Llama 3 8B", "meta-llama/Meta-Llama-3-8B", 4096, 32, 32, 14336, 8192),
        _llama("llama-3-70b", "Llama 3 70B", "meta-llama/Meta-Llama-3-70B", 8192, 80, 64, 28672, 8192),
        # the same shapes as Llama 3 70B, trained on to 128 k positions (RoPE scaling)
        _llama("llama-3.1-70b", "Llama 3.1 70B", "meta-llama/Llama-3.1-70B", 8192, 80, 64, 28672, 131072),
        ModelCard("mixtral-8x7b", "Mixtral 8×7B", "mistralai/Mixtral-8x7B-v0.1 config.json",
                  d_model=4096, n_layers=32, n_heads=32, n_kv_heads=8, d_head=128, d_ff=14336,
                  vocab=32000, max_context=32768, n_experts=8, n_active_experts=2),
        ModelCard("deepseek-v3", "DeepSeek-V3", "deepseek-ai/DeepSeek-V3 config.json",
                  d_model=7168, n_layers=61, n_heads=128, n_kv_heads=128, d_head=128, d_ff=2048,
                  vocab=129280, max_context=163840, n_experts=256, n_active_experts=8, n_shared_experts=1,
                  n_dense_layers=3, d_ff_dense=18432, mla=(1536, 512, 64, 128)),
    )
}


@dataclass(frozen=True)
class Link:
    """What joins the GPUs of one tensor-parallel group, as NCCL's all-reduce sees it."""
    label: str  # name shown to the reader
    bus_bandwidth: float  # all-reduce bus bandwidth, bytes/s (nccl-tests' busBw: algBw · 2(n−1)/n)
    latency: float  # time of the smallest all-reduce, s: the floor a decode step's tiny messages sit on
    domain: int  # GPUs this link joins (one NVLink/NVSwitch node); a larger group crosses NETWORK
    source: str  # where the figures come from

# nccl-tests on H100 SXM (NVIDIA/nccl-tests#212, S. Jeaugey): NVLink 4's line rate is 450 GB/s one
# way, and NCCL's protocol takes ~20 %, "an effective NVLink bandwidth of 370 GB/s" (ring busBw);
# a 4×H100 sweep of nvidia/nccl-tests measures 366 GB/s, 77 % of the one-way budget. The same
# ~80 % of the line rate is applied to the other links. Small all-reduces (a decode step's few kB):
# 10 µs on NVLink is an order of magnitude, our estimate. nccl-tests' figures depend on the
# algorithm, CUDA graphs and the GPU count: ~34 µs for a ring over 8 A100s without graphs
# (NVIDIA/nccl-tests#123), ~6 µs between 2 H100s with NVLSTree and graphs (NVIDIA/nccl#1259),
# ~2.3 µs on 8 H200/H800 with NCCL 2.27 tuned (NVIDIA/nccl#1940). Engines capture decode in CUDA
# graphs and run their own all-reduce for small tensors (vLLM's custom all-reduce,
# `--disable-custom-all-reduce`), so for them 10 µs most likely errs high (dearer collectives).
# More through PCIe or a NIC.
NVLINK4 = Link("NVLink 4 + NVSwitch", 370e9, 10e-6, 8, "nccl-tests busBw 370 GB/s (NVIDIA/nccl-tests#212)")
NVLINK3 = Link("NVLink 3 + NVSwitch", 240e9, 10e-6, 8, "80 % of NVLink 3's 300 GB/s one way (A100 datasheet)")
INFINITY_FABRIC = Link("Infinity Fabric", 358e9, 10e-6, 8, "80 % of 7 × 64 GB/s one way (MI300X datasheet)")
PCIE5 = Link("PCIe 5.0 ×16", 50e9, 20e-6, 8, "80 % of PCIe 5.0 ×16's 64 GB/s one way; no NVLink bridge")
PCIE4 = Link("PCIe 4.0 ×16", 25e9, 20e-6, 8, "80 % of PCIe 4.0 ×16's 32 GB/s one way (L4 datasheet)")
# Past one node the all-reduce has two levels (NVLink inside each node, then the NICs): tens of µs
# for a small message in inter-node nccl-tests runs; 30 µs is that order, not a measured digit.
NETWORK = Link("InfiniBand NDR 400 Gb/s", 40e9, 30e-6, 1 << 30, "80 % of 400 Gb/s = 50 GB/s per GPU, one NIC each")


MiB, GiB = 1 << 20, 1 << 30


@dataclass(frozen=True)
class GPU:
    key: str  # preset id
    label: str  # name shown to the reader: the vendor's, with its "80 GB" (which is 80 GiB of HBM)
    flops_bf16: float  # dense BF16 tensor-core peak, FLOP/s (datasheet, without sparsity)
    bandwidth: float  # HBM/GDDR bandwidth, bytes/s, decimal as the datasheets give it (3,35 TB/s = 3.35e12)
    memory: float  # device memory a program sees, bytes: the total the driver reports (nvidia-smi, rocm-smi)
    source: str  # which datasheet, and where the driver's total was read
    flops_fp8: float = 0.0  # dense FP8 tensor-core peak, FLOP/s (0: no FP8 units, FP8 weights compute in bf16)
    flops_int8: float = 0.0  # dense INT8 tensor-core peak, OP/s (0: INT8 weights compute in bf16)
    link: Link | None = None  # what joins it to the other GPUs of its node (None: communication not modelled)


# Memory in the units the vendors sell it. A datasheet's "80 GB" of HBM is 80 GiB (85,9 GB decimal);
# the driver keeps a few hundred MiB of it and reports the rest as the device's total: 81 559 MiB on
# an H100 80 GB (nvidia-smi in NVIDIA/nccl#1264; modal-labs/modal-client#2797 lists H100 81 559 MiB,
# A100 80 GB 81 920 MiB, L4 23 034 MiB), 143 771 MiB on an H200 (sgl-project/sglang#3196), and
# 206 141 652 992 bytes, 192 GiB less 16 MiB, on an MI300X (rocm-smi in ROCm/legacy-rocm-build#4750;
# ROCm's GPU specifications table gives its VRAM as 192 GiB). H100 PCIe listings of nvidia-smi show
# the SXM's 81 559 MiB. The L4's 24 GB of GDDR6 are 24 GiB, and with ECC on GDDR gives up 6,25 % of
# them to the check bits (CUDA C++ Best Practices Guide, "ECC"): 24 GiB × 15/16 = 23 040 MiB, the
# 23 034 the driver shows. What one process can then allocate is a little less again; an engine's
# own reserve (frontier.MEMORY_SHARE) is where that goes.
GPUS: dict[str, GPU] = {
    g.key: g
    for g in (
        GPU("h100-80gb", "H100 SXM 80 GB", 990e12, 3350e9, 81559 * MiB, "NVIDIA H100 SXM5 datasheet: 1,979 TFLOP/s "
            "bf16 and 3,958 FP8/INT8 with sparsity, 3.35 TB/s, 80 GB (GiB) of HBM3; nvidia-smi: 81,559 MiB",
            1979e12, 1979e12, NVLINK4),
        GPU("h100-pcie", "H100 PCIe 80 GB", 756e12, 2000e9, 81559 * MiB, "NVIDIA H100 PCIe datasheet: 1,513 TFLOP/s "
            "bf16 and 3,026 FP8/INT8 with sparsity, 2.0 TB/s, 80 GB (GiB) of HBM2e; nvidia-smi: 81,559 MiB, as the SXM",
            1513e12, 1513e12, PCIE5),
        GPU("h200", "H200 141 GB", 990e12, 4800e9, 143771 * MiB, "NVIDIA H200 SXM datasheet: 4.8 TB/s, 141 GB (GiB) "
            "of HBM3e; nvidia-smi: 143,771 MiB", 1979e12, 1979e12, NVLINK4),
        GPU("a100-80gb", "A100 SXM 80 GB", 312e12, 2039e9, 81920 * MiB, "NVIDIA A100 SXM4 80 GB datasheet: "
            "624 INT8 TOPS dense, no FP8, 2,039 GB/s, 80 GB (GiB) of HBM2e; nvidia-smi: 81,920 MiB", 0.0, 624e12, NVLINK3),
        GPU("l4", "L4 24 GB", 121e12, 300e9, 23034 * MiB, "NVIDIA L4 datasheet: 485 FP8/INT8 TFLOP/s with sparsity, "
            "300 GB/s, 24 GB (GiB) of GDDR6; nvidia-smi with ECC on: 23,034 MiB", 242.5e12, 242.5e12, PCIE4),
        GPU("mi300x", "MI300X 192 GB", 1307e12, 5300e9, 206_141_652_992, "AMD Instinct MI300X datasheet: 2,615 "
            "FP8/INT8 TFLOP/s dense, 5.3 TB/s, 192 GB (GiB) of HBM3; rocm-smi: 206,141,652,992 bytes", 2615e12, 2615e12,
            INFINITY_FABRIC),
    )
}

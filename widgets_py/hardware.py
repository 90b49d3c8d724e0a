"""Model cards and GPU datasheets: the one table every serving widget reads.

Parameter counts are not typed in: they are computed from each model's published
shapes (its `config.json` on the model card), so a reader can check every factor.
"""

from __future__ import annotations

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
    d_head: int  # dimension of one head
    d_ff: int  # MLP hidden size of a dense block (of one expert in a MoE block)
    vocab: int  # vocabulary size
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

    def kv_scalars(self) -> int:
        """Scalars cached per token and layer: K and V of every KV head, or MLA's latent."""
        if self.mla:
            _, kv_lora, rope_dim, _ = self.mla
            return kv_lora + rope_dim  # one compressed latent plus the shared RoPE key
        return 2 * self.n_kv_heads * self.d_head


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


def param_counts(m: ModelCard) -> tuple[int, int]:
    """(total, active per token) parameters, from the shapes alone."""
    embed = m.vocab * m.d_model + m.n_pos * m.d_model
    head = 0 if m.tied else m.vocab * m.d_model
    final_norm = m.d_model * (2 if m.biases else 1)
    fixed = embed + head + final_norm
    if not m.n_experts:
        block = _attention(m) + _mlp(m, m.d_ff) + _norms(m)
        total = fixed + m.n_layers * block
        return total, total
    n_moe = m.n_layers - m.n_dense_layers
    dense_block = _attention(m) + _mlp(m, m.d_ff_dense) + _norms(m)
    router = m.d_model * m.n_experts + (m.n_experts if m.n_shared_experts else 0)  # + DeepSeek's bias
    expert = _mlp(m, m.d_ff)
    shared = _attention(m) + router + _norms(m) + m.n_shared_experts * expert
    total = fixed + m.n_dense_layers * dense_block + n_moe * (shared + m.n_experts * expert)
    active = fixed + m.n_dense_layers * dense_block + n_moe * (shared + m.n_active_experts * expert)
    return total, active


MODELS: dict[str, ModelCard] = {
    m.key: m
    for m in (
        ModelCard("gpt2-xl", "GPT-2 XL", "openai-community/gpt2-xl config.json",
                  d_model=1600, n_layers=48, n_heads=25, n_kv_heads=25, d_head=64, d_ff=6400,
                  vocab=50257, tied=True, gated_mlp=False, biases=True, n_pos=1024),
        ModelCard("llama-3-8b", "Llama 3 8B", "meta-llama/Meta-Llama-3-8B config.json",
                  d_model=4096, n_layers=32, n_heads=32, n_kv_heads=8, d_head=128, d_ff=14336,
                  vocab=128256),
        ModelCard("llama-3-70b", "Llama 3 70B", "meta-llama/Meta-Llama-3-70B config.json",
                  d_model=8192, n_layers=80, n_heads=64, n_kv_heads=8, d_head=128, d_ff=28672,
                  vocab=128256),
        ModelCard("mixtral-8x7b", "Mixtral 8×7B", "mistralai/Mixtral-8x7B-v0.1 config.json",
                  d_model=4096, n_layers=32, n_heads=32, n_kv_heads=8, d_head=128, d_ff=14336,
                  vocab=32000, n_experts=8, n_active_experts=2),
        ModelCard("deepseek-v3", "DeepSeek-V3", "deepseek-ai/DeepSeek-V3 config.json",
                  d_model=7168, n_layers=61, n_heads=128, n_kv_heads=128, d_head=128, d_ff=2048,
                  vocab=129280, n_experts=256, n_active_experts=8, n_shared_experts=1,
                  n_dense_layers=3, d_ff_dense=18432, mla=(1536, 512, 64, 128)),
    )
}


@dataclass(frozen=True)
class GPU:
    key: str  # preset id
    label: str  # name shown to the reader
    flops_bf16: float  # dense BF16 tensor-core peak, FLOP/s (datasheet, without sparsity)
    bandwidth: float  # HBM/GDDR bandwidth, bytes/s (datasheet)
    memory: float  # device memory, bytes (datasheet, decimal GB)
    source: str  # which datasheet


GPUS: dict[str, GPU] = {
    g.key: g
    for g in (
        GPU("h100-80gb", "H100 80 GB", 990e12, 3350e9, 80e9, "NVIDIA H100 SXM5 datasheet"),
        GPU("h200", "H200 141 GB", 990e12, 4800e9, 141e9, "NVIDIA H200 SXM datasheet"),
        GPU("a100-80gb", "A100 80 GB", 312e12, 2039e9, 80e9, "NVIDIA A100 SXM4 80 GB datasheet"),
        GPU("l4", "L4 24 GB", 121e12, 300e9, 24e9, "NVIDIA L4 datasheet"),
        GPU("mi300x", "MI300X 192 GB", 1307e12, 5300e9, 192e9, "AMD Instinct MI300X datasheet"),
    )
}

# Bytes per stored scalar of each weight or cache format.
FORMATS: dict[str, tuple[str, float]] = {
    "fp32": ("fp32 · 4", 4.0),
    "bf16": ("bf16 · 2", 2.0),
    "fp8": ("fp8 · 1", 1.0),
    "int4": ("int4 · 0,5", 0.5),
}

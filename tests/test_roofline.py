"""§1 roofline calculator: the defaults, hand-computed cases, MoE reads, context limits."""

import math

import pytest

from widgets_py import run
from widgets_py.maths.hardware import MODELS, counts
from widgets_py.cap15.roofline import roofline


def test_defaults_llama3_70b_on_h100_sxm():
    v = run("roofline").values  # Llama 3 70B, H100 SXM, 8 k prompt, batch 32, bf16
    assert round(v["params_active"] / 1e9, 2) == 70.55
    # weights read per token: all but the input embedding (a lookup: one row per token)
    assert v["weight_gb"] == pytest.approx(2 * (70_553_706_496 - 128256 * 8192 + 8192) / 1e9)
    assert round(v["decode_tps_weights"], 1) == 24.1
    assert round(v["decode_tps"], 1) == 23.6
    assert round(v["batch_tps"]) == 477
    assert round(v["gpu_intensity"]) == 296
    assert v["prompt_used"] == 8192 and "dins del límit" in v["context_note"]


def test_gpt2_xl_on_a100_by_hand():
    # GPT-2 XL: 48 layers; per layer 4·1600 (LN) + 1600·4800+4800 + 1600²+1600
    # + 1600·6400+6400 + 6400·1600+1600 = 30,740,800; embeddings (50257+1024)·1600;
    # final LN 3200  ->  1,557,611,200 parameters.
    n = 48 * 30_740_800 + (50257 + 1024) * 1600 + 3200
    assert counts(MODELS["gpt2-xl"]).total == n == 1_557_611_200
    v = roofline("gpt2-xl", "a100-80gb", prompt_tokens=1024, batch=1, weight_format="fp32")
    read = n - 1024 * 1600 + 1600  # the tied token table is read whole (it is the head); one position row
    weights, kv = 4 * read, 2 * 1600 * 48 * 2 * 1024  # fp32 weights; K and V, 25 heads x 64, 48 layers, bf16
    assert v["decode_tps_weights"] == pytest.approx(2039e9 / weights)
    assert v["tpot_ms"] == pytest.approx(1e3 * (weights + kv) / 2039e9)
    assert v["batch_gain"] == pytest.approx(1.0)  # a batch of one gains nothing
    flops = 2 * (n - 1024 * 1600) * 1024  # the position table is a lookup: no FLOPs
    read_prefill = n - 1024 * 1600 + 1024 * 1600  # 1,024 position rows
    # attention's own roofline: QKᵀ and AV, 2·25·(64 + 64)·48 FLOPs per causal pair, against writing the cache
    attention = max(1024 * 1025 / 2 * 2 * 25 * 128 * 48 / 312e12, kv / 2039e9)
    assert v["ttft_s"] == pytest.approx(attention + max(flops / 312e12, 4 * read_prefill / 2039e9))


def test_mixtral_one_sequence_reads_two_experts_by_hand():
    # one Mixtral layer with 2 of 8 experts: attention 2·4096² + 2·4096·1024, 2 SwiGLU experts
    # of 3·4096·14336, router 4096·8, two RMSNorms; plus embedding and head 2·32000·4096.
    layer = 2 * 4096**2 + 2 * 4096 * 1024 + 2 * 3 * 4096 * 14336 + 4096 * 8 + 2 * 4096
    active = 32 * layer + 2 * 32000 * 4096 + 4096
    v = roofline("mixtral-8x7b", "h100-80gb", prompt_tokens=16, batch=1, weight_format="fp8")
    assert v["params_active"] == active and v["experts_batch"] == pytest.approx(2.0)
    read = active - 32000 * 4096 + 4096  # the input embedding: one row
    kv = 2 * 8 * 128 * 32 * 1 * 16 * 2  # 16 tokens of cache, bf16
    assert v["decode_tps"] == pytest.approx(3350e9 / (read * 1.0 + kv))


def test_mixtral_batch_of_32_reads_nearly_every_expert():
    # Issue 10: one H100 SXM, 8 k prompt, bf16: ~125 tok/s alone, ~840 at 32 (ratio ~6.7, not 14.3)
    v = roofline("mixtral-8x7b", "h100-80gb", prompt_tokens=8192, batch=32, weight_format="bf16")
    assert 124 <= v["decode_tps"] <= 127
    assert 830 <= v["batch_tps"] <= 850
    assert 6.5 <= v["batch_gain"] <= 6.9
    assert v["experts_batch"] == pytest.approx(8 * (1 - 0.75**32))
    assert v["weights_batch_share"] > 0.99


def test_dense_model_reads_the_same_weights_at_any_batch():
    a = roofline("llama-3-70b", "h100-80gb", 8192, 1, "bf16")
    b = roofline("llama-3-70b", "h100-80gb", 8192, 256, "bf16")
    assert b["weights_batch_gb"] - a["weights_batch_gb"] == pytest.approx(255 * 8192 * 2 / 1e9)  # rows only


def test_compute_bound_batch_hits_the_flat_roof_plus_the_cache():
    # A huge batch of short prompts on a small model: its matmuls are limited by FLOPs.
    v = roofline("llama-3-8b", "l4", prompt_tokens=16, batch=256, weight_format="int4")
    c = counts(MODELS["llama-3-8b"])
    matmuls = 256 * 2 * (c.active - c.lookup) / 121e12
    kv = 256 * 16 * 2 * 8 * 128 * 32 * 2 / 300e9  # the batch's caches, read after the matmuls
    assert v["batch_tps"] == pytest.approx(256 / (matmuls + kv), rel=1e-9)
    assert v["batch_intensity"] > v["gpu_intensity"]


def test_batch_gain_shrinks_as_cache_grows():
    gains = [roofline("llama-3-70b", "h100-80gb", L, 32, "bf16")["batch_gain"] for L in (512, 8192)]
    assert gains[0] > gains[1] > 1
    assert all(math.isfinite(g) for g in gains)


def test_prompt_past_the_model_limit_is_clamped_with_a_note():
    r = run("roofline", {"model": "gpt2-xl", "prompt_tokens": 8192})
    assert r.values["prompt_used"] == 1024
    assert "1.024" in r.values["context_note"] and "només admet" in r.values["context_note"]
    assert "només admet" in r.alt and "només admet" in r.tables  # visible, not silent
    same = run("roofline", {"model": "gpt2-xl", "prompt_tokens": 1024}).values
    assert r.values["ttft_s"] == same["ttft_s"]
    long = run("roofline", {"model": "llama-3.1-70b", "prompt_tokens": 131072}).values
    assert long["prompt_used"] == 131072 and "dins del límit" in long["context_note"]


def test_read_share_leaves_the_input_table_out():
    # review 4, P1: a pass looks rows up in the input table and never reads it whole, so the share
    # is of the matrices a pass can read: a dense model reads all of them from one sequence, and a
    # MoE never reads a larger share than a dense model at the same batch
    from widgets_py.maths.serving import matrices_read_share
    dense, moe = MODELS["llama-3-70b"], MODELS["mixtral-8x7b"]
    for batch in (1, 32, 256):
        assert matrices_read_share(dense, batch) == 1.0
        assert matrices_read_share(moe, batch) <= 1.0
    # Mixtral, by hand: 8 experts, 2 per token, 32 sequences: 8·(1 − (6/8)^32) experts per layer
    c = counts(moe)
    by_hand = (c.always + c.moe_layers * 8 * (1 - 0.75 ** 32) * c.expert) / (c.total - c.lookup)
    assert matrices_read_share(moe, 32) == pytest.approx(by_hand, rel=1e-12)
    assert c.lookup == 32000 * 4096  # the untied input table Mixtral's old share counted as unread

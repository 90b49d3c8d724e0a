"""§1 roofline calculator: the seed's numbers, hand-computed cases, model-card counts."""

import math

import pytest

from widgets_py import run
from widgets_py.hardware import MODELS, param_counts
from widgets_py.roofline import roofline


def test_seed_defaults_llama3_70b_on_h100():
    v = run("roofline").values  # Llama 3 70B, H100 80 GB, 8 k prompt, batch 32, bf16
    assert round(v["params_active"] / 1e9, 2) == 70.55
    assert round(v["decode_tps_weights"], 1) == 23.7
    assert round(v["decode_tps"], 1) == 23.3
    assert round(v["tpot_ms"], 1) == 42.9
    assert round(v["ttft_s"], 2) == 1.17
    assert round(v["batch_tps"]) == 472
    assert round(v["batch_gain"], 1) == 20.3
    assert round(v["gpu_intensity"]) == 296


@pytest.mark.parametrize("key, total, active", [
    # published totals: GPT-2 XL 1.5 B, Llama 3 8 B / 70 B, Mixtral 46.7 B (12.9 B active),
    # DeepSeek-V3 671 B (37 B active)
    ("gpt2-xl", 1.558e9, 1.558e9),
    ("llama-3-8b", 8.03e9, 8.03e9),
    ("llama-3-70b", 70.55e9, 70.55e9),
    ("mixtral-8x7b", 46.70e9, 12.88e9),
    ("deepseek-v3", 671.0e9, 37.55e9),
])
def test_parameter_counts_match_model_cards(key, total, active):
    t, a = param_counts(MODELS[key])
    assert t == pytest.approx(total, rel=2e-3) and a == pytest.approx(active, rel=2e-3)


def test_gpt2_xl_on_a100_by_hand():
    # GPT-2 XL: 48 layers; per layer 4·1600 (LN) + 1600·4800+4800 + 1600²+1600
    # + 1600·6400+6400 + 6400·1600+1600 = 30,740,800; embeddings (50257+1024)·1600;
    # final LN 3200  ->  1,557,611,200 parameters.
    n = 48 * 30_740_800 + (50257 + 1024) * 1600 + 3200
    assert param_counts(MODELS["gpt2-xl"])[0] == n == 1_557_611_200
    v = roofline("gpt2-xl", "a100-80gb", prompt_tokens=1024, batch=1, weight_format="fp32")
    weights = 4 * n  # fp32
    kv = 2 * 1600 * 48 * 2 * 1024  # K and V, 25 heads x 64, 48 layers, bf16, 1,024 tokens
    assert v["decode_tps_weights"] == pytest.approx(2039e9 / weights)
    assert v["tpot_ms"] == pytest.approx(1e3 * (weights + kv) / 2039e9)
    assert v["batch_gain"] == pytest.approx(1.0)  # a batch of one gains nothing
    assert v["ttft_s"] == pytest.approx(max(2 * n * 1024 / 312e12, (weights + kv) / 2039e9))


def test_mixtral_reads_only_active_experts_by_hand():
    # one Mixtral layer with 2 of 8 experts: attention 2·4096² + 2·4096·1024, 2 SwiGLU experts
    # of 3·4096·14336, router 4096·8, two RMSNorms; plus embedding and head 2·32000·4096.
    layer = 2 * 4096**2 + 2 * 4096 * 1024 + 2 * 3 * 4096 * 14336 + 4096 * 8 + 2 * 4096
    active = 32 * layer + 2 * 32000 * 4096 + 4096
    v = roofline("mixtral-8x7b", "h100-80gb", prompt_tokens=16, batch=1, weight_format="fp8")
    assert v["params_active"] == active
    kv = 2 * 8 * 128 * 32 * 2 * 16
    assert v["decode_tps"] == pytest.approx(3350e9 / (active * 1.0 + kv))


def test_compute_bound_batch_hits_the_flat_roof():
    # A huge batch of short prompts on a small model is limited by FLOPs, not bytes.
    v = roofline("llama-3-8b", "l4", prompt_tokens=16, batch=256, weight_format="int4")
    n = param_counts(MODELS["llama-3-8b"])[1]
    assert v["batch_tps"] == pytest.approx(121e12 / (2 * n), rel=1e-9)
    assert v["batch_intensity"] > v["gpu_intensity"]


def test_batch_gain_shrinks_as_cache_grows():
    gains = [roofline("llama-3-70b", "h100-80gb", L, 32, "bf16")["batch_gain"] for L in (512, 8192, 65536)]
    assert gains[0] > gains[1] > gains[2] > 1
    assert all(math.isfinite(g) for g in gains)

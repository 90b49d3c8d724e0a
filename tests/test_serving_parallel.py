"""serving.py's second round: collectives, attention FLOPs, formats' products, the frontier.

Oracles: hand calculations of a ring all-reduce with nccl-tests' busBw definition
(`doc/PERFORMANCE.md`: busBw = algBw · 2(n−1)/n), Megatron-LM's two all-reduces per block
(Shoeybi et al. 2019, §3), the jax-ml/scaling-book inference chapter (`inference.md`: the
critical batch 240 / 120 / 240, and the LLaMA 2-13B step-time tables), and the issue's own
figures for Llama 3 70B (1.15 → ~1.24 s at 8 k; 2.25e16 vs 1.82e16 FLOPs at 128 k).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from widgets_py.maths.frontier import batch_in_memory, cache_memory, critical_batch, frontier
from widgets_py.maths.hardware import GPU, GPUS, MODELS, NETWORK, NVLINK4, ModelCard, counts
from widgets_py.maths.serving import (Setup, attention_flops_per_pair, causal_pairs, collective_time, decode_parts,
                                       decode_step, flops_per_token, kv_bytes_per_token, prefill_parts, step_time, ttft)

LLAMA_8X = Setup("llama-3-70b", "h100-80gb", n_gpus=8)
FREE_LINK = dataclasses.replace(LLAMA_8X, collectives=False)


# --- collectives: a hand calculation ---------------------------------------------------------------

def test_decode_all_reduces_by_hand():
    # batch 1: each all-reduce moves one token's activations, 8,192 × 2 bytes; ring over 8 GPUs
    # on NVLink 4 (370 GB/s busBw, 10 µs floor): 10 µs + 2·7/8 · 16,384 B / 370 GB/s = 10.0775 µs,
    # 2 per block (after attention and after the MLP) × 80 blocks = 1.612 ms
    one = 10e-6 + 2 * 7 / 8 * 16_384 / 370e9
    assert one == pytest.approx(10.0775e-6, rel=1e-4)
    assert collective_time(LLAMA_8X, 1) == pytest.approx(160 * one, rel=1e-12)
    assert decode_step(LLAMA_8X, 1, 8192) - decode_step(FREE_LINK, 1, 8192) == pytest.approx(160 * one, rel=1e-9)
    # the latency floor: the bytes are 0,8 % of it
    assert 2 * 7 / 8 * 16_384 / 370e9 < 0.01 * 10e-6


def test_prefill_all_reduces_by_hand_are_bandwidth_bound():
    # 8 k tokens: [8192, 8192] bf16 = 134,217,728 B per all-reduce: 10 µs + 1.75 · 134 MB / 370 GB/s
    one = 10e-6 + 1.75 * 8192 * 8192 * 2 / 370e9
    assert collective_time(LLAMA_8X, 8192) == pytest.approx(160 * one)
    assert 0.09 < 160 * one < 0.11  # ~0.1 s: a large share of the 8-GPU TTFT


def test_one_gpu_pays_nothing_and_a_bigger_group_crosses_the_network():
    assert collective_time(Setup("llama-3-70b", "h100-80gb"), 4096) == 0.0
    assert LLAMA_8X.link is NVLINK4 and dataclasses.replace(LLAMA_8X, n_gpus=16).link is NETWORK
    sixteen = dataclasses.replace(LLAMA_8X, n_gpus=16)
    per_call = NETWORK.latency + 2 * 15 / 16 * 16_384 / NETWORK.bus_bandwidth
    assert collective_time(sixteen, 1) == pytest.approx(160 * per_call)


def test_tensor_parallelism_stops_paying_for_throughput_per_gpu():
    # for a fixed batch, throughput per GPU drops as the group grows (scaling book: "for a fixed
    # batch size overall throughput per chip will drop as you scale the topology")
    per_gpu = [32 / decode_step(dataclasses.replace(LLAMA_8X, n_gpus=n), 32, 8192) / n for n in (2, 4, 8, 16)]
    assert all(a > b for a, b in zip(per_gpu, per_gpu[1:]))


def test_a_gpu_without_a_link_says_so():
    s = Setup("llama-3-70b", "h100-80gb", n_gpus=2)
    bare = dataclasses.replace(GPUS["h100-80gb"], key="bare", link=None)
    GPUS["bare"] = bare
    try:
        with pytest.raises(ValueError, match="no link"):
            decode_step(dataclasses.replace(s, gpu="bare"), 1, 100)
        assert decode_step(dataclasses.replace(s, gpu="bare", collectives=False), 1, 100) > 0
    finally:
        del GPUS["bare"]


@pytest.mark.parametrize("bad", [dict(n_gpus=0), dict(n_gpus=2.5), dict(weights="int3"), dict(model="gpt-9")])
def test_bad_setups_are_refused(bad):
    with pytest.raises(ValueError):
        Setup(**({"model": "llama-3-70b", "gpu": "h100-80gb"} | bad))


# --- attention in the prefill ----------------------------------------------------------------------

def test_attention_flops_at_128k_outweigh_the_matmuls():
    m = MODELS["llama-3.1-70b"]
    T = 131072
    hand = 80 * 4 * 64 * 128 * T * (T + 1) / 2  # layers · (QKᵀ + AV: 2·2) · heads · d_head · causal pairs
    assert causal_pairs(T, 0) * attention_flops_per_pair(m) == pytest.approx(hand)
    assert hand == pytest.approx(2.25e16, rel=2e-3) and T * flops_per_token(m) == pytest.approx(1.82e16, rel=2e-3)


def test_attention_lengthens_the_8k_prefill_by_about_8_percent():
    s = Setup("llama-3-70b", "h100-80gb")
    without = step_time(s, 8192, 8192)  # the same pass with no attention FLOPs
    assert without == pytest.approx(1.15, abs=0.01) and ttft(s, 8192) == pytest.approx(1.24, abs=0.01)
    assert 0.07 < ttft(s, 8192) / without - 1 < 0.09


def test_decode_attention_stays_memory_bound():
    parts = decode_parts(Setup("llama-3-70b", "h100-80gb"), 64, 8192)
    kv = 64 * 8192 * kv_bytes_per_token(MODELS["llama-3-70b"], "bf16") / 3350e9
    assert parts.attention == pytest.approx(kv)  # the FLOPs hide under the cache read


def test_mla_prefill_counts_its_wider_keys():
    m = MODELS["deepseek-v3"]
    assert attention_flops_per_pair(m) == 2 * 128 * ((128 + 64) + 128) * 61


# --- formats: weight-only against weight-and-activation --------------------------------------------

def test_weight_only_int4_speeds_decode_not_prefill():
    bf16, int4 = Setup("llama-3-70b", "h100-80gb"), Setup("llama-3-70b", "h100-80gb", "int4")
    assert decode_step(int4, 1, 1024) < 0.3 * decode_step(bf16, 1, 1024)
    assert prefill_parts(int4, 8192).matmuls == pytest.approx(prefill_parts(bf16, 8192).matmuls)


def test_fp8_products_speed_the_prefill_matmuls_but_not_attention():
    bf16, fp8 = Setup("llama-3-70b", "h100-80gb"), Setup("llama-3-70b", "h100-80gb", "fp8")
    assert prefill_parts(fp8, 8192).matmuls == pytest.approx(prefill_parts(bf16, 8192).matmuls / 2, rel=1e-3)
    assert prefill_parts(fp8, 8192).attention == pytest.approx(prefill_parts(bf16, 8192).attention)
    a100 = Setup("llama-3-70b", "a100-80gb", "fp8")  # no FP8 units: FP8 weights multiply in bf16
    assert a100.peak == GPUS["a100-80gb"].flops_bf16


@pytest.fixture
def v5e(monkeypatch):
    """A wide dense model (tiny vocabulary, so weights ≈ matmul parameters) on the book's TPU v5e."""
    model = ModelCard("wide", "wide", "test", d_model=8192, n_layers=32, n_heads=64, n_kv_heads=8, d_head=128,
                      d_ff=28672, vocab=256, max_context=8192, tied=True)
    monkeypatch.setitem(MODELS, model.key, model)
    # scaling book: 1.97e14 bf16 FLOP/s, 8.2e11 B/s, "400 TOPs/s of int8 x int8"
    monkeypatch.setitem(GPUS, "v5e", GPU("v5e", "TPU v5e", 1.97e14, 8.2e11, 16e9, "scaling book", 0.0, 3.94e14))
    return model


@pytest.mark.parametrize("weights, activations, book", [("bf16", None, 240), ("int8", "bf16", 120), ("int8", None, 240)])
def test_critical_batch_is_the_scaling_books(v5e, weights, activations, book):
    # "if we have int8 parameters but do our computation in bfloat16, the critical batch size drops
    # to 120. With int8 activations and int8 params, it jumps back up to 240"
    s = Setup("wide", "v5e", weights, activations=activations)
    assert critical_batch(s) == pytest.approx(book, rel=0.01)


def test_critical_batch_on_h100():
    # (P/β)·b/2: 990/3.35 = 296 in bf16; W4A16 a quarter; W8A8 FP8 the same as bf16 (twice the peak, half the bytes)
    assert critical_batch(LLAMA_8X) == pytest.approx(990 / 3.35, rel=0.01)
    assert critical_batch(dataclasses.replace(LLAMA_8X, weights="int4")) == pytest.approx(990 / 3.35 / 4, rel=0.02)
    assert critical_batch(dataclasses.replace(LLAMA_8X, weights="fp8")) == pytest.approx(1979 / 3.35 / 2, rel=0.01)


def test_the_cache_pushes_the_critical_batch_away():
    crit = [critical_batch(LLAMA_8X, c) for c in (0, 256, 512, 1024)]
    assert all(a < b for a, b in zip(crit, crit[1:]))
    # past the context where one sequence's cache read outlasts its FLOPs, decode never turns compute-bound
    m = MODELS["llama-3-70b"]
    horizon = flops_per_token(m) / 990e12 / (kv_bytes_per_token(m, "bf16") / 3350e9)  # ~1.4 k tokens
    assert critical_batch(LLAMA_8X, int(horizon * 1.05)) == math.inf
    assert critical_batch(LLAMA_8X, 8192) == math.inf


# --- scaling book: LLaMA 2-13B on 8 TPU v5e ("Modeling throughput and latency") ---------------------

LLAMA2_13B = ModelCard("llama-2-13b", "LLaMA 2 13B", "scaling book table", d_model=5120, n_layers=40, n_heads=40,
                       n_kv_heads=40, d_head=128, d_ff=13824, vocab=32000, max_context=8192)


def test_scaling_book_llama2_13b_step_times(monkeypatch):
    # "Theoretical Step Time (ms)" at 8,192 tokens of context (the book's GMQA table keeps 13 B
    # parameters with 8 KV heads, a model with other shapes: not ported)
    table = {1: 4.98, 8: 12.13, 16: 20.30, 32: 36.65, 64: 69.33, 240: 249.09}
    model = LLAMA2_13B
    monkeypatch.setitem(MODELS, model.key, model)
    monkeypatch.setitem(GPUS, "v5e", GPU("v5e", "TPU v5e", 1.97e14, 8.2e11, 16e9, "scaling book"))
    s = Setup(model.key, "v5e", n_gpus=8, collectives=False)
    for batch, ms in table.items():  # the book counts the input table too (+1 %), we read one row
        assert 1e3 * decode_step(s, batch, 8192) == pytest.approx(ms, rel=0.015), batch


# --- the frontier ----------------------------------------------------------------------------------

def test_frontier_trades_latency_for_throughput():
    tpot, per_gpu = frontier(LLAMA_8X, 8192, [1, 2, 4, 8, 16, 32, 64, 128])
    assert np.all(np.diff(tpot) > 0) and np.all(np.diff(per_gpu) > 0)
    assert per_gpu[0] == pytest.approx(1 / decode_step(LLAMA_8X, 1, 8192) / 8)


def test_batch_in_memory_by_hand():
    # 90 % of 8 × 81.559 MiB (nvidia-smi's H100 80 GB), minus 141,1 GB of BF16 weights and 7,76 GB of
    # activations of vLLM's 8.192-token profiling pass, over 8.192 × 327.680 B of cache per sequence
    weights = counts(MODELS["llama-3-70b"]).total * 2
    activations = 8 * (8192 * (2 * 8192 + 3 * 28672 // 8) * 2 + 1024 * 128_256 * 4)
    memory = 8 * 81_559 * (1 << 20)
    assert batch_in_memory(LLAMA_8X, 8192) == math.floor((0.9 * memory - weights - activations) / (8192 * 327_680)) == 173
    assert batch_in_memory(Setup("llama-3-70b", "l4"), 8192) == 0  # the weights alone do not fit


# --- the cache under tensor parallelism: split by KV heads only (serving assumption 7) -------------

def test_kv_heads_are_copied_past_n_kv_gpus():
    # Llama 3 70B has 8 KV heads: on 16 GPUs vLLM keeps one head per GPU, each head on 2 GPUs
    # ("Number of KV heads is less than TP size, so we replicate the KV heads", llama.py), so
    # each GPU holds 1/8 of the cache, not 1/16. By hand, one token: 80 layers × 2 (K, V) × 8 heads
    # × 128 × 2 bytes = 327.680 B; 8.192 tokens read by each GPU: 327.680 · 8.192 / 8 B at 3,35 TB/s
    s16 = Setup("llama-3-70b", "h100-80gb", n_gpus=16, collectives=False)
    per_gpu = 80 * 2 * 8 * 128 * 2 * 8192 / 8
    assert decode_parts(s16, 1, 8192).attention == pytest.approx(per_gpu / 3350e9, rel=1e-12)
    assert s16.kv_copies == 2
    # up to 8 GPUs the cache splits evenly: the same read on 8 GPUs as on 16
    s8 = dataclasses.replace(s16, n_gpus=8)
    assert decode_parts(s8, 1, 8192).attention == pytest.approx(per_gpu / 3350e9, rel=1e-12)
    # memory: each sequence's 2,68 GB sits twice in the group
    free = cache_memory(s16)  # the engine's share minus weights and activations, as on one copy
    assert batch_in_memory(s16, 8192) == math.floor(free / (2 * 80 * 2 * 8 * 128 * 2 * 8192))


def test_mla_latent_is_whole_on_every_gpu():
    # DeepSeek-V3 keeps one latent of 512 + 64 values per token and layer (61 layers): 70.272 B
    # per token in BF16. Plain TP cannot split it by heads, so each of 16 GPUs holds and reads it all
    # (SGLang's DP attention docs: "KV cache duplicated across all GPUs")
    s = Setup("deepseek-v3", "h100-80gb", "fp8", n_gpus=16, collectives=False)
    assert kv_bytes_per_token(s.m, "bf16") == 61 * 576 * 2 == 70_272
    assert decode_parts(s, 1, 8192).attention == pytest.approx(70_272 * 8192 / 3350e9, rel=1e-12)
    assert s.kv_copies == 16
    free = cache_memory(s)
    assert batch_in_memory(s, 8192) == math.floor(free / (16 * 70_272 * 8192))
    assert 50 < batch_in_memory(s, 8192) < 70  # the review's estimate: about 60, not 950

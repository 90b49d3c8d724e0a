"""§2 KV-cache simulation: the seed's regime, negative controls, whole-page sharing."""

import pytest

from widgets_py import run
from widgets_py.maths.hardware import MODELS, counts
from widgets_py.cap15.kv_cache import fill, prefix_caching

import numpy as np


def test_default_run_is_in_the_seed_regime():
    v = run("kv_cache").values
    assert (v["len_min"], v["len_max"]) == (33, 4096) and 800 < v["len_mean"] < 1100
    assert 0.70 <= v["waste_contiguous"] <= 0.80
    assert v["waste_paged"] < 0.015
    assert v["fit_contiguous"] == 59  # 80 GB / (4,096 tokens × 327,680 bytes)
    assert v["fit_paged"] > 4 * v["fit_contiguous"]
    assert v["prefill_saved"] == pytest.approx(1 - 4000 / 102000)
    assert v["ttft_with_ms"] < v["ttft_without_ms"]


def test_no_variability_no_waste_and_methods_agree():
    v = run("kv_cache", {"variability": 0}).values
    assert v["waste_contiguous"] == 0.0 and v["waste_paged"] == 0.0
    assert v["fit_contiguous"] == v["fit_paged"]
    assert v["used_contiguous"] == v["used_paged"]


def test_no_shared_prefix_saves_nothing():
    for params in ({"prefix_tokens": 0}, {"variable_head": True}, {"prefix_requests": 1}):
        v = run("kv_cache", params).values
        assert v["prefill_saved"] == 0.0 and v["prefill_with"] == v["prefill_without"], params


def test_only_whole_pages_are_shared():
    pc = prefix_caching(prefix=2008, suffix=40, requests=10, page=16, variable_head=False)
    assert pc["shared_tokens"] == 2000 and pc["shared_pages"] == 125  # the last 8 tokens are recomputed
    assert pc["with"] == 2048 + 9 * 48


def test_fill_admits_in_order_until_memory_runs_out():
    lengths = np.array([10, 10, 10])
    out = fill(lengths, np.array([16, 16, 16]), capacity_tokens=40)
    assert out["fit"] == 2 and out["reserved"] == 32 and out["used"] == 20


def test_cache_format_is_linear_in_bytes():
    bf16 = run("kv_cache", {"cache_format": "bf16", "variability": 0}).values
    fp8 = run("kv_cache", {"cache_format": "fp8", "variability": 0}).values
    assert fp8["bytes_per_token"] * 2 == bf16["bytes_per_token"]
    assert fp8["fit_contiguous"] in (2 * bf16["fit_contiguous"], 2 * bf16["fit_contiguous"] + 1)


def test_seeded_and_deterministic():
    assert run("kv_cache", {"seed": 3}).values == run("kv_cache", {"seed": 3}).values
    assert run("kv_cache", {"seed": 3}).values != run("kv_cache", {"seed": 4}).values


def test_ttft_by_hand_counts_the_cache_written_and_the_prefix_read():
    v = run("kv_cache").values  # Llama 3 70B, bf16 weights and cache, H100 SXM
    c = counts(MODELS["llama-3-70b"])
    def prefill(new, cached):  # attention (its causal QKᵀ and AV, or the cache moved) + the matmuls' roofline
        pairs = new * cached + new * (new + 1) / 2
        attention = max(pairs * 2 * 64 * 256 * 80 / 990e12, (new + cached) * 327_680 / 3350e9)
        return attention + max(new * 2 * (c.total - c.lookup) / 990e12, 2 * (c.total - c.lookup + new * 8192) / 3350e9)
    assert v["ttft_without_ms"] == pytest.approx(1e3 * prefill(2040, 0))
    assert v["ttft_with_ms"] == pytest.approx(1e3 * prefill(40, 2000))


def test_context_past_the_model_limit_is_clamped_with_a_note():
    r = run("kv_cache", {"model": "gpt2-xl", "max_context": 8192})
    assert r.values["context_used"] == 1024 and r.values["len_max"] <= 1024
    assert r.values["prefix_used"] == 1024 - 40  # the shared prompt fits its positions too
    assert "només admet" in r.values["context_note"] and "només admet" in r.alt

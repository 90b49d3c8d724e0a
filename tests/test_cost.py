"""§7 cost calculator: the seed's figures at its defaults, and the formulas' behaviour."""

import pytest

from widgets_py import formatted, run


def test_seed_defaults():
    v = run("cost").values  # Llama 3 70B, 8 × H100 80 GB, 8 k, 32 sequences, bf16, 15 %, 3 $
    text = formatted("cost", v)
    assert round(v["memory_needed_gb"]) == 261 and v["fits"]
    assert v["sequences_fit"] == 154
    assert round(v["throughput"]) == 3778
    assert text["ttft_s"] == "0,15 s" and text["tpot_one_ms"] == "5,4 ms"
    assert text["dollars_per_m"] == "1,76 dòlars"
    assert round(v["kv_gb"], 1) == 85.9
    assert round(v["crossover_one"] / 1e3, 1) == 430.6 and round(v["crossover_batch"] / 1e3, 1) == 13.5


def test_shares_add_up_and_fp8_cache_halves_it():
    v = run("cost").values
    assert v["weights_share"] + v["kv_share"] + v["activations_share"] + v["overhead_share"] == pytest.approx(1)
    fp8 = run("cost", {"kv_format": "fp8"}).values
    assert fp8["kv_gb"] == pytest.approx(v["kv_gb"] / 2)
    assert fp8["throughput"] > v["throughput"]


def test_moe_reads_active_but_stores_total():
    v = run("cost", {"model": "deepseek-v3"}).values
    assert v["params_total"] > 10 * v["params_active"]
    assert not v["fits"] and v["sequences_fit"] == 0
    assert v["tps_one"] > run("cost").values["tps_one"]  # fewer bytes per token than Llama 3 70B


def test_dollars_scale_with_price_and_gpus():
    a = run("cost", {"price": 1.5}).values
    b = run("cost").values
    assert a["dollars_per_m"] == pytest.approx(b["dollars_per_m"] / 2)

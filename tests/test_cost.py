"""§7 cost calculator: the seed's figures at its defaults, and the formulas' behaviour."""

import pytest

from widgets_py import formatted, run
from widgets_py.models.serving import Setup, decode_step, step_time


def test_seed_defaults():
    v = run("cost").values  # Llama 3 70B, 8 × H100 SXM, 8 k, 32 sequences, bf16, 15 %, 3 $
    text = formatted("cost", v)
    assert round(v["memory_needed_gb"]) == 261 and v["fits"]
    assert v["sequences_fit"] == 154
    # the seed's speeds leave the all-reduces and attention's FLOPs out: the same passes on a free
    # link, without QKᵀ and AV, give them back
    free = Setup("llama-3-70b", "h100-80gb", n_gpus=8, collectives=False)
    assert round(32 / decode_step(free, 32, 8192)) == 3813
    assert round(step_time(free, 8192, 8192), 2) == 0.14 and text["tpot_one_no_comm_ms"] == "5,3 ms"
    # with two all-reduces per block over NVLink 4, and attention in the prefill: slower and dearer
    assert v["throughput"] < 3813 and v["tpot_one_ms"] > 5.3 and v["ttft_s"] > 0.14 and v["dollars_per_m"] > 1.75
    assert v["link"] == "NVLink 4 + NVSwitch" and 0.1 < v["comm_share_one"] < 0.4
    assert round(v["kv_gb"], 1) == 85.9
    assert round(v["crossover_one"] / 1e3, 1) == 430.6 and round(v["crossover_batch"] / 1e3, 1) == 13.5


def test_shares_add_up_and_fp8_cache_halves_it():
    v = run("cost").values
    assert v["weights_share"] + v["kv_share"] + v["activations_share"] + v["overhead_share"] == pytest.approx(1)
    fp8 = run("cost", {"kv_format": "fp8"}).values
    assert fp8["kv_gb"] == pytest.approx(v["kv_gb"] / 2)
    assert fp8["throughput"] > v["throughput"]


def test_moe_reads_active_alone_but_most_experts_in_a_batch():
    v = run("cost", {"model": "deepseek-v3"}).values
    assert v["params_total"] > 10 * v["params_active"]
    assert not v["fits"] and v["sequences_fit"] == 0
    assert v["tps_one"] > run("cost").values["tps_one"]  # fewer bytes per token than Llama 3 70B
    assert 430 * 2 < v["weights_read_batch_gb"] < 437 * 2  # 32 sequences: ~434 G parameters in bf16
    assert v["batch_gain"] < 5  # not ×28: the batch reads most experts (the all-reduces, paid once per step, lift it from ~2,6)


def test_mixtral_row_follows_the_expert_reads():
    # Issue 10: on 8 H100 SXM at 8 k and 32 sequences, ~6.7 k tok/s and ~1 $/M (not 14,265 and 0.47)
    # (issue 31: those figures leave the all-reduces out; with them the row is slower still)
    v = run("cost", {"model": "mixtral-8x7b"}).values
    free = Setup("mixtral-8x7b", "h100-80gb", n_gpus=8, collectives=False)
    assert 6600 <= 32 / decode_step(free, 32, 8192) <= 6850
    assert 5500 <= v["throughput"] < 6600 and 1.05 < v["dollars_per_m"] < 1.25


def test_presets_stay_within_each_model_context():
    from widgets_py.cap15.cost import _presets
    from widgets_py.models.hardware import MODELS

    rows = dict(_presets({"gpu": "h100-80gb", "concurrency": 32, "weight_format": "bf16", "kv_format": "bf16",
                          "overhead_pct": 15, "price": 3.0}))
    assert rows["gpt2-xl"]["context_used"] == 1024  # GPT-2 XL never runs at 8 k
    assert all(r["context_used"] <= MODELS[k].max_context for k, r in rows.items())
    assert "1.024" in run("cost").tables  # and the table says which context each row used


def test_context_past_the_limit_is_clamped_and_said():
    v = run("cost", {"context": 131072}).values
    assert v["context_used"] == 8192 and "només admet" in v["context_note"]
    long = run("cost", {"model": "llama-3.1-70b", "context": 131072}).values
    assert long["context_used"] == 131072 and long["kv_gb"] == pytest.approx(16 * v["kv_gb"])


def test_dollars_scale_with_price_and_gpus():
    a = run("cost", {"price": 1.5}).values
    b = run("cost").values
    assert a["dollars_per_m"] == pytest.approx(b["dollars_per_m"] / 2)

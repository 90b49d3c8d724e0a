"""§7 cost calculator: the seed's figures at its defaults, and the formulas' behaviour."""

import math

import pytest

from widgets_py import formatted, run
from widgets_py.maths.serving import Setup, decode_step, step_time

MiB = 1 << 20


def test_seed_defaults():
    v = run("cost").values  # Llama 3 70B, 8 × H100 SXM, 8.192 tokens, 32 sequences, BF16, 10 % reserve, 3 $
    text = formatted("cost", v)
    assert round(v["memory_needed_gb"]) == 261 and v["fits"]
    assert v["sequences_fit"] == 173  # issue 40: 8 × 81.559 MiB, not 8 × 80e9 (154 with a 15 % overhead)
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
    assert v["weights_share"] + v["kv_share"] + v["activations_share"] + v["reserve_share"] == pytest.approx(1)
    assert v["reserve_share"] == pytest.approx(0.10)  # the reserve is a share of the memory, not of its contents
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
    from widgets_py.maths.hardware import MODELS

    rows = dict(_presets({"gpu": "h100-80gb", "concurrency": 32, "weight_format": "bf16", "kv_format": "bf16",
                          "reserve_pct": 10, "price": 3.0, "prompt": 7000, "answer": 1000}))
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


# --- Issue 40: the request pays its prefill too ---------------------------------------------

def test_one_request_worked_by_hand():
    """7.000 tokens in, 1.000 out, Llama 3 70B in bf16 on 8 H100 SXM at 3 dollars per GPU and
    hour, 32 sequences of 8.192 tokens: every factor written out, none taken from serving.py."""
    from widgets_py.maths.hardware import GPUS, MODELS

    # Llama 3 70B (meta-llama/Meta-Llama-3-70B config.json): d 8192, 80 layers, 64 heads, 8 KV heads of 128,
    # MLP 28672 (SwiGLU: 3 matrices), vocabulary 128256, untied head
    d, layers, heads, kv_heads, d_head, d_ff, vocab = 8192, 80, 64, 8, 128, 28672, 128256
    m = MODELS["llama-3-70b"]
    assert (m.d_model, m.n_layers, m.n_heads, m.n_kv_heads, m.d_head, m.d_ff, m.vocab) == (d, layers, heads, kv_heads,
                                                                                           d_head, d_ff, vocab)
    per_layer = 2 * d * d + 2 * d * kv_heads * d_head + 3 * d * d_ff + 2 * d  # Q and O, K and V, MLP, 2 norms
    assert per_layer == 855_654_400
    table = vocab * d  # 1.050.673.152: the input embedding (a lookup) and, again, the output head
    read_whole = layers * per_layer + table + d  # every matrix a pass multiplies by, + the final norm
    assert read_whole == 69_503_033_344
    flops_token = 2 * read_whole  # 2 FLOPs per parameter a token multiplies by: 139,0 GFLOP
    # H100 SXM datasheet: 990 TFLOP/s dense bf16, 3,35 TB/s; NVLink 4: busBw 370 GB/s, 10 µs per all-reduce
    g = GPUS["h100-80gb"]
    assert (g.flops_bf16, g.bandwidth, g.link.bus_bandwidth, g.link.latency) == (990e12, 3350e9, 370e9, 10e-6)
    n, peak, bw = 8, 8 * 990e12, 8 * 3350e9  # 7,92 PFLOP/s and 26,8 TB/s for the group
    kv_token = 2 * kv_heads * d_head * layers * 2  # K and V, bf16: 327.680 bytes per token
    attn_pair = 2 * heads * (d_head + d_head) * layers  # QKᵀ and AV: 2,62 MFLOP per (query, key) pair

    def all_reduces(tokens):  # 2 per block, ring over 8 GPUs, [tokens, d] in bf16
        return 2 * layers * (10e-6 + 2 * 7 / 8 * tokens * d * 2 / 370e9)

    # prefill, one pass of 7.000 tokens
    P = 7000
    matmuls = max(P * flops_token / peak, (read_whole + P * d) * 2 / bw)  # 0,1229 s of FLOPs against 5,2 ms of reads
    pairs = P * (P + 1) / 2  # causal: 24.503.500 pairs
    attention = max(pairs * attn_pair / peak, P * kv_token / bw)  # 8,1 ms of FLOPs against 0,09 ms writing the cache
    prefill = matmuls + attention + all_reduces(P)  # + 88,4 ms of all-reduces = 0,2194 s
    assert prefill == pytest.approx(0.2194, abs=1e-4)
    # decode, one step of 32 sequences with 8.192 tokens each
    B, C = 32, 8192
    step = (max(B * flops_token / peak, (read_whole + B * d) * 2 / bw)  # 5,19 ms of reads (0,56 ms of FLOPs)
            + max(B * (C + 1) * attn_pair / peak, B * C * kv_token / bw)  # 3,21 ms reading 85,9 GB of cache
            + all_reduces(B))  # 2,00 ms: the latency dominates
    assert step == pytest.approx(10.389e-3, rel=1e-4)
    A = 1000
    decode = A * step / B  # the request's share of 1.000 steps: 0,3246 s
    per_second = 3.0 * n / 3600  # 24 dollars an hour
    expected = {
        "prefill_s": prefill, "decode_s": decode, "prefill_share": prefill / (prefill + decode),  # 40 %
        "dollars_per_m_input": prefill * per_second / P * 1e6,  # 0,209 dollars
        "dollars_per_m": step / B * per_second * 1e6,  # 2,164 dollars
        "request_dollars": (prefill + decode) * per_second,  # 0,003627 dollars
        "thousand_requests_dollars": 1e3 * (prefill + decode) * per_second,  # 3,63 dollars
        "dollars_per_m_all_in": (prefill + decode) * per_second / A * 1e6,  # 3,627 dollars
    }
    v = run("cost").values
    for key, value in expected.items():
        assert v[key] == pytest.approx(value, rel=1e-9), key
    assert formatted("cost", v)["dollars_per_m_input"] == "0,21 dòlars"
    text = formatted("cost", v)
    assert text["request_dollars"] == "0,0036 dòlars" and text["thousand_requests_dollars"] == "3,63 dòlars"
    assert text["prefill_share"] == "40 %" and text["dollars_per_m"] == "2,16 dòlars"
    # the prefill adds ~68 % to the GPU time the answer alone would be charged
    assert (prefill + decode) / decode == pytest.approx(1.676, abs=1e-3)


def test_more_prompt_never_makes_a_request_cheaper():
    from widgets_py.cap15.cost import PARAMS

    prompts = {p.name: p for p in PARAMS}["prompt"].ticks
    for setup in ({}, {"model": "mixtral-8x7b", "context": 32768}, {"n_gpus": 1, "gpu": "h200", "weight_format": "fp8"},
                  {"n_gpus": 16, "model": "llama-3.1-70b", "context": 131072}):
        costs = [run("cost", {**setup, "prompt": n}).values["request_dollars"] for n in prompts]
        assert all(b > a for a, b in zip(costs, costs[1:])), setup


def test_input_is_priced_below_output_and_counted():
    v = run("cost").values
    assert v["dollars_per_m_input"] < v["dollars_per_m"] / 5  # as APIs price: input cheaper than output
    # neither phase is dropped or priced at the other's rate
    assert v["request_dollars"] == pytest.approx(7000e-6 * v["dollars_per_m_input"] + 1000e-6 * v["dollars_per_m"])
    assert v["request_dollars"] > 1.6 * 1000e-6 * v["dollars_per_m"]  # the answer alone: prefill forgotten
    assert v["request_dollars"] < 8000e-6 * v["dollars_per_m"] / 2  # every token at the output rate
    assert v["dollars_per_m_all_in"] > 1.6 * v["dollars_per_m"]


def test_batching_cheapens_output_tokens_not_input_tokens():
    one, many = run("cost", {"concurrency": 1}).values, run("cost", {"concurrency": 128}).values
    assert many["dollars_per_m"] < one["dollars_per_m"] / 20
    assert many["dollars_per_m_input"] == one["dollars_per_m_input"]  # a prefill pass is the request's alone
    assert many["prefill_share"] > one["prefill_share"]


def test_one_output_price_the_throughput_s():
    for setup in ({}, {"model": "mixtral-8x7b"}, {"concurrency": 7, "price": 2.25, "answer": 30}):
        v = run("cost", setup).values
        assert v["dollars_per_m"] == pytest.approx(v["dollars_per_hour"] / v["tokens_per_hour_m"])


def test_decode_priced_at_the_full_context_errs_dearer_by_under_3_percent():
    """The docstring's claim: a 7.000 + 1.000 request holds 7.500 tokens of cache on average, not 8.192."""
    s = Setup("llama-3-70b", "h100-80gb", n_gpus=8)
    assert 0.97 < decode_step(s, 32, 7500) / decode_step(s, 32, 8192) < 1


def test_a_request_longer_than_the_context_is_said():
    assert "hi cap" in run("cost").values["request_note"]
    v = run("cost", {"context": 4096}).values
    assert "passa del context de 4.096" in v["request_note"]
    assert "passa" in run("cost", {"model": "gpt2-xl", "context": 8192}).values["request_note"]  # 1.024 positions


def test_the_prose_quotes_the_request_s_defaults():
    """Both tracks name the request the widget starts from: these are the controls' defaults."""
    import re
    from pathlib import Path

    from widgets_py.cap15.cost import PARAMS
    from widgets_py.engine import fmt

    default = {p.name: p.default for p in PARAMS}
    docs = Path(__file__).parent.parent / "docs" / "cap15"
    prompt, answer = fmt.number(default["prompt"]), fmt.number(default["answer"])
    maths = re.sub(r"\s+", " ", (docs / "index.md").read_text())
    plain = re.sub(r"\s+", " ", (docs / "sense-formules.md").read_text())
    assert f"(un prompt de {prompt} tokens i una resposta de {answer})" in maths
    assert f"«Prompt d'una petició» i «Resposta d'una petició», {prompt} tokens i {answer}," in plain


# --- Issue 40, I4 and I6: one memory rule, vLLM's, for the calculator and the frontier ---------

def test_the_sequences_that_fit_worked_by_hand():
    """vLLM sizes its cache after one profiling pass (gpu_worker.determine_available_memory): of
    gpu_memory_utilization (0,9) × the memory, the weights and the pass's peak activations go first.
    Every factor written out; none taken from the widgets' modules."""
    memory = 8 * 81_559 * MiB  # nvidia-smi's total of an H100 80 GB, 8 of them
    weights = 70_553_706_496 * 2  # Llama 3 70B's parameters (safetensors count) in BF16
    # the profiling pass: vLLM's budget on an H100 for an API server, 8.192 tokens and 1.024 sequences
    # (EngineArgs.get_batch_defaults); per GPU the residual and its norm [8192, 8192], the MLP's gate,
    # up and product [8192, 28672 / 8], in BF16, and the logits of 1.024 sequences over 128.256 tokens in FP32
    per_gpu = 8192 * (2 * 8192 + 3 * 28672 // 8) * 2 + 1024 * 128_256 * 4
    activations = 8 * per_gpu  # 7,76 GB
    cache = 8192 * 2 * 8 * 128 * 80 * 2  # 8.192 tokens of K and V: 8 KV heads of 128, 80 layers, BF16
    fit = math.floor((0.9 * memory - weights - activations) / cache)
    assert fit == 173
    assert run("cost").values["sequences_fit"] == fit == run("frontier").values["fit_batch"]
    assert run("cost").values["activations_gb"] == pytest.approx(activations / 1e9)


# model, GPU, formats: the group's memory (nvidia-smi's totals), the weights (safetensors counts × bytes),
# the profiling pass's activations (as above: per GPU the residual and its norm, the MLP's gate, up and
# product split over the group, the sampled sequences' fp32 logits) and one sequence's cache, all copies
FITS_BY_HAND = [
    # Llama 3.1 70B on 4 H200 (143.771 MiB), FP8 weights and cache, 32 k tokens: 1 byte per K or V
    ({"model": "llama-3.1-70b", "gpu": "h200", "n_gpus": 4, "context": 32768, "weight_format": "fp8",
      "kv_format": "fp8"},
     4 * 143_771 * MiB, 70_553_706_496 * 1, 4 * (8192 * (2 * 8192 + 3 * 28672 // 4) * 2 + 1024 * 128_256 * 4),
     32768 * 2 * 8 * 128 * 80 * 1, 87),
    # Mixtral 8×7B on 8 H100, INT8 cache at 32 k: every expert resident, the pass's tokens through 2 of them
    ({"model": "mixtral-8x7b", "context": 32768, "kv_format": "int8"},
     8 * 81_559 * MiB, 46_702_792_704 * 2, 8 * (8192 * (2 * 4096 + 3 * 2 * 14336 // 8) * 2 + 1024 * 32_000 * 4),
     32768 * 2 * 8 * 128 * 32 * 1, 241),
    # Llama 3 8B on one L4 (23.034 MiB), INT4 weights: under 70 GiB vLLM profiles 2.048 tokens and 256 sequences
    ({"model": "llama-3-8b", "gpu": "l4", "n_gpus": 1, "weight_format": "int4"},
     23_034 * MiB, 8_030_261_248 * 0.5, 2048 * (2 * 4096 + 3 * 14336) * 2 + 256 * 128_256 * 4,
     8192 * 2 * 8 * 128 * 32 * 2, 16),
    # Llama 3 70B on 16 H100: each of the 8 KV heads on 2 GPUs, so every sequence's cache is held twice
    ({"n_gpus": 16},
     16 * 81_559 * MiB, 70_553_706_496 * 2, 16 * (8192 * (2 * 8192 + 3 * 28672 // 16) * 2 + 1024 * 128_256 * 4),
     8192 * 2 * 8 * 128 * 80 * 2 * 2, 200),
]


@pytest.mark.parametrize("setup, memory, weights, activations, cache, fit", FITS_BY_HAND,
                         ids=("h200-fp8", "mixtral-int8-cache", "l4-int4", "16-gpus"))
def test_the_calculator_and_the_frontier_report_the_sequences_that_fit_by_hand(setup, memory, weights, activations,
                                                                               cache, fit):
    """vLLM's rule (0,9 of the memory, less the weights and the pass's activations, over one
    sequence's cache) worked by hand for other models, GPUs and formats: both widgets report it."""
    assert math.floor((0.9 * memory - weights - activations) / cache) == fit
    assert run("cost", setup).values["sequences_fit"] == fit
    assert run("frontier", setup).values["fit_batch"] == fit
    assert run("cost", setup).values["activations_gb"] == pytest.approx(activations / 1e9)


def test_a_larger_reserve_fits_fewer_sequences_and_fits_means_they_fit():
    loose, tight = run("cost", {"reserve_pct": 5}).values, run("cost", {"reserve_pct": 30}).values
    assert loose["sequences_fit"] > run("cost").values["sequences_fit"] > tight["sequences_fit"]
    for concurrency in (32, 172, 173, 174, 256):  # "hi cap?" and "seqüències que hi caben" tell one story
        v = run("cost", {"concurrency": concurrency}).values
        assert v["fits"] == (v["sequences_fit"] >= concurrency), concurrency


def test_the_activations_do_not_grow_with_the_concurrency():
    """An engine reserves the peak of one pass of its token budget, not a buffer per sequence."""
    one, many = run("cost", {"concurrency": 1}).values, run("cost", {"concurrency": 256}).values
    assert one["activations_gb"] == many["activations_gb"] > 1

"""§3 continuous batching simulator: the seed's regime, negative controls, invariants."""

import pytest

from widgets_py import run
from widgets_py.batching import costs, workload, with_long_prompt
from widgets_py.batching_sim import Request, simulate, weighted_percentile

import numpy as np


def test_default_run_is_in_the_seed_regime():
    v = run("batching").values
    assert 2.0 <= v["gain"] <= 4.0
    assert 0.60 <= v["static_idle"] <= 0.75
    assert v["continuous_idle"] < 0.10
    assert (v["out_min"], v["out_max"]) == (8, 390)
    assert v["continuous_throughput"] == pytest.approx(v["gain"] * v["static_throughput"])


def test_identical_lengths_give_exactly_no_gain():
    v = run("batching", {"variability": 0}).values
    assert v["gain"] == 1.0 and v["static_iterations"] == v["continuous_iterations"]


def test_one_slot_gives_no_gain():
    for variability in (0, 50, 100):
        assert run("batching", {"slots": 1, "variability": variability}).values["gain"] == pytest.approx(1.0, abs=1e-12)


def test_chunking_changes_the_worst_gap_not_throughput():
    v = run("batching").values
    decode_ms, prefill_ms = costs()
    assert v["gap_max_whole_ms"] == pytest.approx(decode_ms + 8192 * prefill_ms, rel=0.05)
    assert v["gap_max_chunked_ms"] <= decode_ms + 512 * prefill_ms + 1e-9
    assert v["throughput_chunked"] == pytest.approx(v["throughput_whole"], rel=0.02)


@pytest.mark.parametrize("continuous", [False, True])
@pytest.mark.parametrize("gap, chunk", [(0.0, None), (10.0, None), (5.0, 256)])
def test_every_request_is_served_once_and_in_causal_order(continuous, gap, chunk):
    reqs = with_long_prompt(workload(60, 1.0, gap, seed=1))
    decode_ms, prefill_ms = costs()
    out = simulate(reqs, 8, continuous, decode_ms, prefill_ms, chunk)
    assert sorted(r.id for r in out.requests) == list(range(60))
    for r in out.requests:
        assert r.arrival_ms <= r.start_ms < r.first_token_ms <= r.finish_ms
        assert r.finish_iter - r.start_iter >= r.output  # one token per iteration at most
    # every slot-iteration is either busy or idle; tokens emitted equal tokens requested
    assert out.busy_slot_iterations <= 8 * out.iterations
    assert sum(c for _, c in out.gaps) == sum(r.output - 1 for r in out.requests)


def test_static_admits_only_into_an_empty_batch():
    reqs = [Request(i, 0.0, 10, out) for i, out in enumerate([5, 50, 5, 5, 5])]
    out = simulate(reqs, 2, False, 1.0, 0.0)
    starts = sorted(r.start_iter for r in out.requests)
    assert starts == [0, 0, 50, 50, 55]  # the second batch waits for the 50-token request


def test_weighted_percentile():
    values, counts = np.array([1.0, 10.0]), np.array([99, 1])
    assert weighted_percentile(values, counts, 99) == 1.0
    assert weighted_percentile(values, counts, 100) == 10.0


def test_seeded_and_deterministic():
    assert run("batching", {"seed": 3}).values == run("batching", {"seed": 3}).values
    assert run("batching", {"seed": 3}).values != run("batching", {"seed": 4}).values

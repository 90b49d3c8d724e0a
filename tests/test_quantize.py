"""§4 quantization against independent references.

Oracles: ml_dtypes' casts (bfloat16, float8_e4m3fn), bitsandbytes' published NF4 table,
a plain loop that quantizes group by group along the input axis, and a count of the
arrays a checkpoint stores. Widget tests check properties, not numbers of one run.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from widgets_py import run

from widgets_py.engine.session import Session
from widgets_py.engine import session
from widgets_py.maths import gpt
from widgets_py.maths.numformats import BITS, NF4, bf16, decode, e4m3, encode, encode_many, nearest, quantize
from widgets_py.cap15 import quantize as widget

# bitsandbytes functional.get_4bit_type("nf4"), hard-coded there from create_normal_map;
# the same 16 values are in the QLoRA paper (Dettmers et al. 2023), appendix E.
NF4_BITSANDBYTES = [
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
    -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
    0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
    0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0,
]


def float32_sweep() -> np.ndarray:
    """Float32 values that exercise a cast: a stride over all bit patterns, every bf16 tie
    and neighbour near 1, the e4m3 grid with its midpoints, subnormals, ±0, ±inf and NaNs."""
    stride = np.arange(0, 2**32, 4093, dtype=np.uint64).astype(np.uint32)  # all exponents, both signs
    ties = (np.arange(0x3F800000, 0x3F900000, 0x8000, dtype=np.uint32)[:, None] + np.array([-1, 0, 1], np.int64)).ravel()
    subnormal = np.arange(0, 0x00800000, 0x1FFF, dtype=np.uint32)
    special = np.array([0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7FC00000,
                        0x7F800001, 0x7FFFFFFF, 0xFFFFFFFF, 0x7FA12345, 0x00000001, 0x80000001], np.uint32)
    grid = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    grid = np.sort(grid[np.isfinite(grid)])
    mids = ((grid[1:].astype(np.float64) + grid[:-1]) / 2).astype(np.float32)  # exact ties of e4m3
    around = np.concatenate([mids, np.nextafter(mids, np.float32(np.inf)), np.nextafter(mids, np.float32(-np.inf)),
                             np.float32([448, 460, 464, 464.0001, 480, 500, -464, -465, 2**-10, 2**-9, 3 * 2**-11])])
    bits = np.concatenate([stride, ties.astype(np.uint32), subnormal, special, subnormal | np.uint32(0x80000000)])
    return np.concatenate([bits.view(np.float32), grid, around, -around])


def same_bits(ours: np.ndarray, ref: np.ndarray) -> np.ndarray:
    return np.asarray(ours, np.float32).view(np.uint32) == np.asarray(ref, np.float32).view(np.uint32)


def test_nf4_is_create_normal_map_and_matches_the_published_table():
    assert NF4.shape == (16,) and NF4[7] == 0 and NF4[0] == -1 and NF4[-1] == 1 and np.all(np.diff(NF4) > 0)
    np.testing.assert_allclose(NF4, NF4_BITSANDBYTES, rtol=0, atol=2e-7)  # float32 table vs our float64


def test_nearest_level_is_argmin_of_the_distances_ties_to_the_lower():
    """The quantizer's NF4 rounding: what the argmin over all sixteen distances gives, on
    random values, the levels themselves, their exact midpoints (ties) and beyond ±1."""
    mids = (NF4[1:] + NF4[:-1]) / 2
    x = np.concatenate([np.random.default_rng(3).uniform(-1.2, 1.2, 5000), NF4, mids,
                        np.nextafter(mids, 2), np.nextafter(mids, -2), [-1.5, 1.5, -1, 1, 0, -0.0]])
    want = np.abs(x[:, None] - NF4).argmin(-1)
    assert np.array_equal(nearest(x, NF4), want)
    assert np.array_equal(nearest(x[:5000].reshape(-1, 8), NF4), want[:5000].reshape(-1, 8))  # any shape


def test_bf16_is_ml_dtypes_cast_bit_for_bit():
    x = float32_sweep()
    with np.errstate(invalid="ignore"):
        ref = x.astype(ml_dtypes.bfloat16).astype(np.float32)
    ok = same_bits(bf16(x), ref)
    assert ok.all(), x[~ok][:5]
    special = bf16(np.array([0x7FFFFFFF, 0x7F800000, 0xFF800000], np.uint32).view(np.float32))
    assert np.isnan(special[0]) and special[1] == np.inf and special[2] == -np.inf


def test_e4m3_is_ml_dtypes_cast_bit_for_bit():
    """Overflow is NaN, as ml_dtypes' float8_e4m3fn cast does (OCP non-saturating): no inf exists."""
    x = float32_sweep()
    with np.errstate(invalid="ignore", over="ignore"):
        ref = x.astype(ml_dtypes.float8_e4m3fn).astype(np.float32)
    ours = e4m3(x)
    assert np.array_equal(np.isnan(ours), np.isnan(ref))
    ok = same_bits(ours, ref) | np.isnan(ref)
    assert ok.all(), x[~ok][:5]
    assert np.nanmax(np.abs(ours)) == 448


def test_quantization_formats():
    x = np.array([1.0, 1.00390625, -3.14159, 1e-3], np.float32)
    assert bf16(x)[0] == 1.0 and bf16(x)[1] == 1.0  # a tie: to the even neighbour
    grid = e4m3(np.linspace(-448, 448, 1001))
    assert np.abs(grid).max() == 448 and len(np.unique(grid)) <= 253  # 256 codes: 2 NaNs, ±0
    w = np.random.default_rng(0).standard_normal((64, 8)).astype(np.float32)
    for name, tol in (("int8", 0.01), ("int4", 0.2), ("nf4", 0.2), ("fp8", 0.05)):
        assert np.abs(quantize(w, name, 16) - w).max() < tol * np.abs(w).max() * 2, name


def loop_quantize(w: np.ndarray, fmt: str, group: int | None, kept: np.ndarray) -> np.ndarray:
    """Reference: column by column, `group` inputs at a time, scales rounded by ml_dtypes."""
    to_bf16 = lambda v: float(np.float32(v).astype(ml_dtypes.bfloat16))  # noqa: E731
    out = w.astype(np.float32).copy()
    out[kept] = w[kept].astype(ml_dtypes.bfloat16).astype(np.float32)
    rows = [i for i in range(w.shape[0]) if not kept[i]]
    blocks = ([[(i, j) for i in rows for j in range(w.shape[1])]] if group is None else
              [[(i, j) for i in rows[r:r + group]] for j in range(w.shape[1]) for r in range(0, len(rows), group)])
    top = {"int4": 7, "int8": 127, "fp8": 448, "nf4": 1}[fmt]
    for block in blocks:
        values = [float(w[i, j]) for i, j in block]
        scale = to_bf16(max(abs(v) for v in values) / top) or 1.0
        for (i, j), v in zip(block, values):
            if fmt == "fp8":
                q = float(np.float64(v / scale).astype(ml_dtypes.float8_e4m3fn))
            elif fmt == "nf4":
                q = min(NF4_BITSANDBYTES, key=lambda level: abs(v / scale - level))
            else:
                q = max(-top, min(top, round(v / scale)))  # Python's round: ties to even
            out[i, j] = q * scale
    return out


@pytest.mark.parametrize("fmt", ["int4", "int8", "fp8", "nf4"])
@pytest.mark.parametrize("group", [None, 8, 16])
def test_group_quantizer_matches_a_plain_loop(fmt, group):
    w = np.random.default_rng(7).standard_normal((37, 5)).astype(np.float32)  # 37: the last group is padded
    w[5] *= 30  # an outlier input channel
    for kept in (np.zeros(37, bool), np.isin(np.arange(37), [5, 20])):
        ours, ref = quantize(w, fmt, group, kept), loop_quantize(w, fmt, group, kept)
        tol = 2e-7 if fmt == "nf4" else 0  # NF4 levels: our float64 table vs bitsandbytes' float32 one
        np.testing.assert_allclose(ours, ref, rtol=tol, atol=tol * np.abs(w).max(), err_msg=f"kept={kept.sum()}")


def test_bits_per_weight_count_the_stored_arrays():
    cfg, p, _ = session.load("mini")
    mats = [widget.input_major(k, v).shape for k, v in p.items() if v.ndim == 2]  # [in, out] each
    n = sum(i * o for i, o in mats)
    for group in (8, 32, 64, 128):
        scales = sum(o * math.ceil(i / group) for i, o in mats)  # one per column and group, padding included
        v = run("quantize", {"group": group}).values
        for fmt in ("int4", "int8", "nf4", "fp8"):
            assert v[f"bits_{fmt}"] == pytest.approx((BITS[fmt] * n + 16 * scales) / n, rel=1e-12), (fmt, group)
            assert v[f"memory_{fmt}"] == pytest.approx(v[f"bits_{fmt}"] / 16)
        assert v["bits_bf16"] == 16
    assert run("quantize", {"group": 64}).values["bits_int4"] > 4 + 16 / 64  # padding costs scales
    t = run("quantize", {"granularity": "tensor"}).values
    assert t["bits_int4"] == pytest.approx(4 + 16 * len(mats) / n)
    w = np.ones((10, 3), np.float32)
    s = encode(w, "int4", 4, np.isin(np.arange(10), [2]))  # 9 rows left: 3 groups per column
    assert (s.codes.shape, s.scales.size, s.rows16.shape) == ((9, 3), 9, (1, 3))
    assert s.bits() == 4 * 27 + 16 * (9 + 3 + 1)


@pytest.mark.parametrize("fmt", ["int4", "int8", "fp8", "nf4", "bf16"])
@pytest.mark.parametrize("group", [None, 4, 16])
def test_matrices_encoded_together_are_each_the_plain_loops(fmt, group):
    """encode_many does the array work of a model's matrices at once (quantize_model): each
    matrix, of its own shape and its own 16-bit rows (or none), is still the plain loop's,
    with its own scales and its own bits."""
    rng = np.random.default_rng(3)
    ws = [rng.standard_normal(shape).astype(np.float32) for shape in ((9, 4), (33, 6), (5, 7), (16, 3))]
    kept = [np.isin(np.arange(len(w)), rows) for w, rows in zip(ws, ([], [2, 30], [0, 1, 2, 3], [15]))]
    stored = encode_many(ws, fmt, group, kept)
    for w, k, s in zip(ws, kept, stored):
        if fmt == "bf16":
            np.testing.assert_array_equal(decode(s), w.astype(ml_dtypes.bfloat16).astype(np.float32))
            continue
        tol = 2e-7 if fmt == "nf4" else 0
        np.testing.assert_allclose(decode(s), loop_quantize(w, fmt, group, k), rtol=tol, atol=tol * np.abs(w).max())
        alone = encode(w, fmt, group, k)
        assert s.bits() == alone.bits() and s.scales.shape == alone.scales.shape and s.rows16.shape == (k.sum(), w.shape[1])


def test_outliers_keep_the_float_model_and_stretch_input_groups_too():
    clean = run("quantize", {"outliers": 1}).values
    v = run("quantize").values  # groups along the input axis, outliers ×40
    t = run("quantize", {"granularity": "tensor"}).values
    assert v["loss_original"] == pytest.approx(clean["loss_original"], abs=1e-4)  # same function in float
    assert abs(v["degradation_bf16"]) < 1e-3
    assert clean["degradation_int4"] >= clean["degradation_int8"] >= clean["degradation_bf16"] - 1e-3
    assert v["degradation_int4"] > 5 * clean["degradation_int4"]  # every input group holds an outlier row
    assert t["degradation_int4"] >= v["degradation_int4"] > v["degradation_int8"]
    assert clean["outlier_ratio"] < 2 < v["outlier_ratio"]


def test_llm_int8_and_smoothquant_undo_the_outlier_damage():
    clean = run("quantize", {"outliers": 1}).values
    none = run("quantize").values
    for handling in ("llmint8", "smoothquant"):
        v = run("quantize", {"outlier_handling": handling}).values
        assert v["loss_original"] == none["loss_original"]
        assert v["degradation_int4"] < 0.2 * none["degradation_int4"], handling
        assert v["degradation_int4"] < 2 * clean["degradation_int4"] + 0.01, handling
    kept = run("quantize", {"outlier_handling": "llmint8"}).values
    assert kept["kept_channels"] == len(widget.OUTLIER_CHANNELS) * 2 * session.load("mini")[0].layers
    assert kept["bits_int4"] > none["bits_int4"] and kept["bits_bf16"] == 16  # 16-bit rows are paid for


def test_smoothquant_is_exact_in_float_and_cancels_the_outlier_factor():
    cfg = session.load("mini")[0]
    smoothed = {}
    for factor in (1.0, 40.0):
        base = widget.model(factor)[1]
        act = widget.activation_maxima(base, cfg)
        smoothed[factor] = widget.smooth(base, act, cfg.layers)
        x = np.random.default_rng(0).integers(0, cfg.vocab, (2, cfg.context))
        np.testing.assert_allclose(gpt.forward(smoothed[factor], cfg, x), gpt.forward(base, cfg, x), atol=2e-4)
    ch = list(widget.OUTLIER_CHANNELS)
    np.testing.assert_allclose(widget.activation_maxima(widget.model(40.0)[1], cfg)["h0.qkv.w"][ch] * 40,
                               widget.activation_maxima(widget.model(1.0)[1], cfg)["h0.qkv.w"][ch], rtol=1e-3)
    np.testing.assert_allclose(smoothed[40.0]["h1.fc.w"], smoothed[1.0]["h1.fc.w"], rtol=1e-3, atol=1e-6)


def test_llm_int8_finds_exactly_the_injected_channels():
    base = widget.model(40.0)[1]
    for k in ("h0.qkv.w", "h1.fc.w"):
        assert np.flatnonzero(widget.outlier_rows(base[k])).tolist() == list(widget.OUTLIER_CHANNELS)


def test_results_follow_the_weights_generation():
    """Results are kept with the weights (session.cached): new weights, new numbers."""
    before = run("quantize").values
    cfg, p, history = session.load("mini")
    shifted = {k: (v * 0.5 if k == "wte" else v) for k, v in p.items()}
    with Session().active():  # a session of its own: the shifted weights go with it
        session.override("mini", shifted, history)
        after = run("quantize").values
    assert after["loss_original"] != before["loss_original"]

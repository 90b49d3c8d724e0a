"""Number formats for weights (bf16, fp8, int8, int4, nf4) and the group-wise quantizer that stores weights in them.

Each cast here is a real rounding, bit for bit what the reference libraries do:
`bf16` and `e4m3` equal ml_dtypes' casts (round to nearest, ties to even), `NF4` is
built by bitsandbytes' `create_normal_map`. The quantizer keeps what a checkpoint
would hold (codes, one bf16 scale per group, optional 16-bit rows), so the bits per
weight are counted from the stored arrays, not from a formula.

Convention: the forward pass computes `x @ w` with w of shape [in, out]. A group is
`group` consecutive weights of one output column along the input axis (AWQ, GPTQ,
bitsandbytes); the last group of a column is padded with zeros, and it still costs a
scale.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

E4M3_MAX = 448.0  # OCP FP8 e4m3fn: S.1111.110 × 2^(15-7); no inf, S.1111.111 is NaN


@dataclass(frozen=True)
class Format:
    label: str  # name shown to the reader
    nbytes: float  # bytes per stored scalar (code), before any scale


FORMATS: dict[str, Format] = {  # the one table of formats: weights, KV cache, quantization
    "fp32": Format("FP32", 4.0),
    "bf16": Format("BF16", 2.0),
    "fp8": Format("FP8 (e4m3)", 1.0),
    "int8": Format("INT8", 1.0),
    "int4": Format("INT4", 0.5),
    "nf4": Format("NF4", 0.5),
}
BITS = {k: int(8 * FORMATS[k].nbytes) for k in ("bf16", "fp8", "int8", "int4", "nf4")}  # the formats a quantizer rounds weights to
INT_TOP = {"int8": 127, "int4": 7}  # symmetric integer levels: -top..top


def normal_map(offset: float = 0.9677083) -> np.ndarray:
    """NF4's 16 levels: bitsandbytes functional.create_normal_map(offset, use_extra_value=True).

    Quantiles of N(0, 1): 8 positive, 7 negative and an exact zero, scaled to [-1, 1].
    """
    ppf = NormalDist().inv_cdf
    v1 = [ppf(p) for p in np.linspace(offset, 0.5, 9)[:-1]]  # 8 positive levels
    v3 = [-ppf(p) for p in np.linspace(offset, 0.5, 8)[:-1]]  # 7 negative levels
    v = np.sort(np.array(v1 + [0.0] + v3))  # [16]
    return v / v.max()


NF4 = normal_map()


def bf16(x: np.ndarray) -> np.ndarray:
    """float32 -> nearest bfloat16 (ties to even), returned as float32; NaN stays NaN, inf stays inf."""
    f = np.asarray(x, np.float32)
    bits = f.view(np.uint32)
    with np.errstate(over="ignore"):
        rounded = (bits + np.uint32(0x7FFF) + ((bits >> 16) & np.uint32(1))) & np.uint32(0xFFFF0000)
    quiet_nan = (bits & np.uint32(0x80000000)) | np.uint32(0x7FC00000)  # the sign, and the canonical quiet NaN
    return np.where(np.isnan(f), quiet_nan, rounded).astype(np.uint32).view(np.float32)


def e4m3(x: np.ndarray) -> np.ndarray:
    """Nearest FP8 e4m3fn value (ties to even), as float64.

    3 mantissa bits, subnormals below 2^-6 spaced 2^-9, max 448. Overflow does what a
    plain cast does (ml_dtypes, OCP non-saturating mode): |x| beyond the tie with the
    missing level 480, i.e. > 464, and ±inf become NaN. Our scales map each group's
    absmax to 448, so the quantizer never overflows.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.asarray(x, np.float64)  # exact for float32 input: one rounding, as a cast does
        mag = np.abs(x)
        _, e = np.frexp(np.maximum(mag, 2.0**-9))  # |x| = m·2^e, m in [0.5, 1): its binade is 2^(e-1), exactly
        shift = np.maximum(e - 1, -6) - 3  # spacing of representable values at |x|: 2^shift
        q = np.copysign(np.ldexp(np.round(np.ldexp(mag, -shift)), shift), x)  # np.round: ties to even
    return np.where(np.isnan(x) | (mag > 464), np.nan, q)


def nearest(x: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Index of the nearest of sorted `levels` to each x, the lower one on a tie:
    np.abs(x[..., None] - levels).argmin(-1), from the two levels around x alone (a binary
    search) rather than from all of them (sixteen times the array, for NF4)."""
    hi = np.clip(np.searchsorted(levels, x), 1, len(levels) - 1)  # levels[hi - 1] < x <= levels[hi], inside
    lo = hi - 1
    return np.where(np.abs(x - levels[hi]) < np.abs(x - levels[lo]), hi, lo)


def to_groups(w: np.ndarray, group: int | None) -> np.ndarray:
    """[in, out] -> [groups, size]: the whole tensor, or `group` inputs of one output column."""
    if group is None:
        return w.reshape(1, -1)
    n_in, n_out = w.shape
    padded = np.zeros((n_out, n_in + (-n_in) % group), w.dtype)  # [out, in_p], zeros at the end
    padded[:, :n_in] = w.T  # not np.pad: its Python-level machinery costs more than the copy in Pyodide
    return padded.reshape(-1, group)  # [out, in_p] -> [out·in_p/G, G]


def from_groups(g: np.ndarray, shape: tuple[int, int], group: int | None) -> np.ndarray:
    if group is None:
        return g.reshape(shape)
    n_in, n_out = shape
    return g.reshape(n_out, -1)[:, :n_in].T  # [out, in_p] -> [in, out]


@dataclass
class Stored:
    """What a checkpoint holds for one matrix [in, out]."""
    fmt: str  # key of BITS
    group: int | None  # weights per scale along the input axis; None: one scale per tensor
    shape: tuple[int, int]  # [in, out] of the whole matrix
    codes: np.ndarray  # [in - kept, out] one code per quantized weight (fp8 codes as their values)
    scales: np.ndarray  # [groups, 1] bf16 scales, padded groups included
    kept: np.ndarray  # [in] bool: input channels stored whole in 16 bits (LLM.int8 style)
    rows16: np.ndarray  # [kept, out] those channels' weights, bf16

    def bits(self) -> int:
        """Bits of every stored array: codes, 16-bit scales, 16-bit rows and their 16-bit indices."""
        if self.fmt == "bf16":
            return 16 * self.codes.size
        return BITS[self.fmt] * self.codes.size + 16 * (self.scales.size + self.rows16.size + int(self.kept.sum()))


def encode(w: np.ndarray, fmt: str, group: int | None, kept: np.ndarray | None = None) -> Stored:
    """Quantize w [in, out]: symmetric absmax scale per group; `kept` input rows stay in bf16."""
    return encode_many([w], fmt, group, None if kept is None else [kept])[0]


def encode_many(ws: list[np.ndarray], fmt: str, group: int | None, kept: list | None = None) -> list[Stored]:
    """encode() of each matrix [in, out], with the array work of all of them done at once:
    in Pyodide numpy's cost per call (tens of microseconds) outweighs a small matrix's
    arithmetic, and a model quantizes a dozen of them. Element by element the same."""
    kept = [np.zeros(w.shape[0], bool) for w in ws] if kept is None else kept
    if fmt == "bf16":
        return [Stored(fmt, None, w.shape, bf16(w), np.zeros((0, 1)), np.zeros(w.shape[0], bool), np.zeros((0, w.shape[1])))
                for w in ws]
    rests = [w[~k].astype(np.float64) for w, k in zip(ws, kept)]  # each [in - kept, out]
    gs = [to_groups(r, group) for r in rests]  # each [groups, size]
    counts = np.cumsum([len(g) for g in gs])[:-1]  # where each matrix's groups start, past the first
    top = {"fp8": E4M3_MAX, "nf4": 1.0}.get(fmt) or INT_TOP[fmt]
    if group is None:  # one group per matrix, of its own size: every weight beside its group's scale
        absmax = np.array([[np.abs(g).max()] for g in gs])  # [matrices, 1]
        sizes = [g.size for g in gs]
        g = np.concatenate([g.ravel() for g in gs])  # [weights]
    else:
        g = np.concatenate(gs)  # [groups, size]
        absmax = np.abs(g).max(1, keepdims=True)  # [groups, 1]
    scale = bf16(absmax / top).astype(np.float64)  # [groups, 1], stored in bf16
    scale[scale == 0] = 1.0  # an all-zero group: any scale gives zeros
    x = g / (np.repeat(scale.ravel(), sizes) if group is None else scale)
    if fmt == "fp8":
        codes = e4m3(x)
    elif fmt == "nf4":
        codes = nearest(x, NF4)
    else:
        codes = np.clip(np.round(x), -top, top)
    if group is None:
        codes = [c.reshape(1, -1) for c in np.split(codes, np.cumsum(sizes)[:-1])]  # each [1, size]
    else:
        codes = np.split(codes, counts)  # each [groups, size]
    scales = np.split(scale, counts)
    rows16 = np.split(bf16(np.concatenate([w[k].ravel() for w, k in zip(ws, kept)])),
                      np.cumsum([int(k.sum()) * w.shape[1] for w, k in zip(ws, kept)])[:-1])
    return [Stored(fmt, group, w.shape, from_groups(c, r.shape, group), s, k,
                   r16.reshape(-1, w.shape[1]))
            for w, k, r, c, s, r16 in zip(ws, kept, rests, codes, scales, rows16)]


def decode(s: Stored) -> np.ndarray:
    """The weights the forward pass computes with: float32 [in, out]."""
    if s.fmt == "bf16":
        return s.codes.astype(np.float32)
    codes = to_groups(s.codes, s.group)  # [groups, size]
    values = NF4[codes.astype(int)] if s.fmt == "nf4" else codes
    rest = from_groups(values * s.scales, s.codes.shape, s.group)  # [in - kept, out]
    out = np.empty(s.shape, np.float32)
    out[~s.kept], out[s.kept] = rest, s.rows16
    return out


def quantize(w: np.ndarray, fmt: str, group: int | None, kept: np.ndarray | None = None) -> np.ndarray:
    """Round trip of one matrix [in, out] through the format."""
    return decode(encode(w, fmt, group, kept))

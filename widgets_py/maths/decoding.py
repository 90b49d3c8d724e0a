"""Decoding: from a model's logits to the next token, and a draft's tokens checked by a target.

The sampling chain is Hugging Face transformers' (`_get_logits_processor`, do_sample=True):
repetition penalty -> temperature -> top-k -> top-p on the renormalised top-k survivors
-> min-p against the largest survivor; `min_tokens_to_keep=1` throughout. vLLM's
`apply_top_k_top_p` does top-k and top-p the same way (ties at the k-th logit kept,
top-p on the survivors, at least one token left); vLLM v1 differs in one place: it runs
min-p (an argmax-invariant logits processor) *before* top-k/top-p. We follow HF.

A token is drawn by inverse CDF (`draw`), numpy's own `Generator.choice`. Speculative decoding
couples a draft and a target in one of two ways (`coupled_draw`, `judge`):
- exact: both read the same uniform number u_i at output position i; a draft token is kept
  only if it is the target's own choice for u_i, so the output is token for token what the
  target alone samples with that seed;
- rejection (Leviathan et al. 2023): keep draft token x with probability min(1, p/q),
  otherwise sample from (p - q)+ normalised; the output *distribution* is the target's.

These run once per generated token, so reductions and sorts are the ufuncs' and arrays' own
methods: numpy's module-level wrappers cost more than the work in Pyodide (same bits).
"""

from __future__ import annotations

import numpy as np

TOP_P_TOL = 1e-9  # a cumulative mass within 1e-9 of top_p counts as reaching it (see nucleus)


def softmax(s: np.ndarray) -> np.ndarray:
    """[..., V] scores -> [..., V] probabilities along the last axis (the maximum subtracted
    first, so that exp never overflows)."""
    e = s - np.maximum.reduce(s, axis=-1, keepdims=True)
    np.exp(e, out=e)
    e /= np.add.reduce(e, axis=-1, keepdims=True)
    return e


def tempered(logits: np.ndarray, temperature: float) -> np.ndarray:
    """[..., V] logits -> float64 scores (z - max z) / T, all <= 0.

    Dividing the max-subtracted logits by a tiny temperature gives 0 for the maximum and
    -inf for the rest, never inf - inf = NaN; as T -> 0 this is greedy (uniform over exactly
    tied maxima)."""
    z = logits.astype(np.float64, copy=False)
    s = z - np.maximum.reduce(z, axis=-1, keepdims=True)
    with np.errstate(over="ignore"):  # a tiny T sends the non-maxima to -inf: intended
        s /= temperature
    return s


def probs(logits: np.ndarray, temperature: float) -> np.ndarray:
    """[..., V] logits -> [..., V] float64 distribution at temperature T."""
    return softmax(tempered(logits, temperature))


def penalised(logits: np.ndarray, seen: np.ndarray, penalty: float) -> np.ndarray:
    """CTRL / HF RepetitionPenaltyLogitsProcessor: once per distinct token already in the sequence,
    divide a positive logit by the penalty, multiply a negative one."""
    z = logits.astype(np.float64)  # [V], a copy
    if penalty != 1.0 and len(seen):
        hit = np.zeros(z.shape, bool)
        hit[seen] = True  # each distinct token once, however often it occurred
        z = np.where(hit, np.where(z < 0, z * penalty, z / penalty), z)
    return z


def nucleus(s: np.ndarray, alive: np.ndarray, top_p: float) -> np.ndarray:
    """HF TopPLogitsWarper on the renormalised survivors `alive` of scaled logits `s`.

    Keeps token r (by decreasing probability) while the mass of the tokens before it is
    below top_p: the smallest prefix whose mass reaches top_p, and never fewer than one.
    "Reaches" allows TOP_P_TOL: 0.5 + 0.3 sums to 0.7999999999999999 in floats, and the
    prefix {0.5, 0.3} must count as reaching 0.8 (HF's own test expects it). The tolerance
    is far above float64 rounding of a sum of a few hundred terms (~1e-14) and far below
    any mass difference the widget can show. Ties are ordered as HF and vLLM order them,
    by a stable ascending sort of the scores: among equal scores the higher token id
    counts as more likely.
    """
    order = np.where(alive, s, -np.inf).argsort(kind="stable")[::-1]  # [V] most likely first
    q = np.where(alive, np.exp(s), 0.0)[order]  # [V] survivors' weights, sorted
    cum = (q / np.add.reduce(q)).cumsum()  # [V] mass up to and including rank r
    n = 1 + int(cum.searchsorted(top_p - TOP_P_TOL))  # ranks whose predecessors hold < top_p
    keep = np.zeros(alive.shape, bool)
    keep[order[:n]] = True
    return keep & alive


def shape(logits: np.ndarray, seen: np.ndarray, temperature: float, top_k: int, top_p: float,
          min_p: float, penalty: float) -> tuple[np.ndarray, np.ndarray]:
    """(distribution after penalty and temperature, mask of the tokens that can be drawn).

    Sampling draws from the distribution restricted to the mask and renormalised (`restricted`).
    """
    z = penalised(logits, seen, penalty)  # [V] 1. repetition penalty, on the raw logits
    if temperature == 0:  # greedy (HF do_sample=False): the argmax, the first one on ties
        p = np.zeros_like(z)
        p[np.argmax(z)] = 1.0
        return p, p > 0
    s = tempered(z, temperature)  # [V] 2. temperature, in log space
    p = softmax(s)  # [V] tempered distribution
    keep = np.ones(z.shape, dtype=bool)
    if top_k:  # 3. HF TopKLogitsWarper: every score >= the k-th largest, so ties at the k-th stay
        k = min(max(int(top_k), 1), len(s))
        keep &= s >= np.partition(s, len(s) - k)[len(s) - k]
    if top_p < 1.0:  # 4. nucleus of the renormalised top-k survivors
        keep = nucleus(s, keep, top_p)
    if min_p > 0:  # 5. HF MinPLogitsWarper: relative to the largest renormalised survivor
        q = np.where(keep, p, 0.0)
        q /= np.add.reduce(q)
        best = np.argmax(q)
        keep &= q >= min_p * q[best]
        keep[best] = True  # min_tokens_to_keep = 1
    return p, keep & (p > 0)  # a token whose probability underflowed to 0 cannot be drawn


def restricted(p: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """The distribution sampling draws from: p on the kept tokens, renormalised."""
    q = np.where(keep, p, 0.0)
    return q / q.sum()


def draw(p: np.ndarray, u: float) -> int:
    """The token whose CDF interval [P_(i-1), P_i) holds u, for weights p (not necessarily
    summing to 1). With u = rng.random() this is rng.choice(len(p), p=p), the same token from
    the same uniform (numpy's own inverse CDF: cumulative sum, normalised, searched on the
    right), without choice's checks of p, which cost more than the draw in Pyodide."""
    cdf = np.cumsum(p)
    cdf /= cdf[-1]  # the last is exactly 1: a u below 1 never falls off the end
    return int(cdf.searchsorted(u, side="right"))


def tokens_per_pass(alpha: float, gamma: int) -> float:
    """Expected tokens one target pass emits when the draft proposes gamma tokens, each accepted
    with probability alpha independently (Leviathan et al. 2023, eq. 1): 1 + alpha + ... + alpha^gamma
    = (1 - alpha^(gamma+1)) / (1 - alpha); the bonus token included, gamma + 1 when alpha = 1."""
    if alpha == 1.0:
        return gamma + 1.0
    return (1.0 - alpha ** (gamma + 1)) / (1.0 - alpha)


def coupled_draw(p: np.ndarray, coupling: str, u: float, rng: np.random.Generator) -> int:
    """One token from p: by the shared u (exact coupling), or by the coupling's own rng."""
    return draw(p, u if coupling == "exact" else rng.random())


def judge(p: np.ndarray, q: np.ndarray, x: int, coupling: str, u: float,
          rng: np.random.Generator) -> tuple[bool, int]:
    """Does the target (law p) keep draft token x (drawn from q)? (kept, token emitted here)."""
    if coupling == "exact":  # kept only if it is the target's own choice for this u
        choice = draw(p, u)
        return choice == x, choice
    if rng.random() < min(1.0, p[x] / q[x]):  # keep with probability min(1, p/q)
        return True, x
    residual = np.maximum(p - q, 0.0)  # else sample the residual (p - q)+, normalised
    return False, draw(residual / residual.sum(), rng.random())

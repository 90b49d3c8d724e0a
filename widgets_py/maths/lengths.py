"""Length laws for simulated requests: many short, a long tail, and a variability knob.

LLM outputs are not uniform: most answers are short and a few run very long. A clipped
log-normal reproduces that shape. `variability` blends it with a constant length, so
that 0 gives identical requests: the negative control of every serving simulation.
"""

from __future__ import annotations

import numpy as np


def long_tail(rng: np.random.Generator, n: int, median: float, sigma: float,
              lo: int, hi: int, variability: float, constant: float) -> np.ndarray:
    """n integer lengths in [lo, hi]: (1 - v)·constant + v·lognormal(median, sigma)."""
    assert 0.0 <= variability <= 1.0 and lo <= constant <= hi
    tail = np.clip(median * np.exp(sigma * rng.standard_normal(n)), lo, hi)  # [n]
    blend = (1.0 - variability) * constant + variability * tail  # [n]
    return np.clip(np.round(blend), lo, hi).astype(np.int64)

"""Order statistics (median, percentiles), numpy's to the bit, without numpy's Python-level machinery.

In Pyodide numpy's percentile costs more than the sort it wraps, and np.median's first call
imports numpy.ma (some 130-250 ms in the browser, paid by a reader's first change of the
widget that calls it); a sort and a line of arithmetic give the same numbers.
"""

from __future__ import annotations

import math

import numpy as np


def median(values: np.ndarray) -> np.floating:
    """np.median(values) of a 1-D array without NaN, to the bit and in its dtype: np.mean of the
    middle value, or of the middle two, as np.median takes it (a sum, then / count)."""
    s = np.sort(values)  # [n]
    n = len(s)
    middle = s[(n - 1) // 2:n // 2 + 1]  # [1] or [2]
    return s.dtype.type(np.add.reduce(middle) / len(middle))


def percentile(values: np.ndarray, q: float) -> float:
    """np.percentile(values, q), its default linear method, to the bit: the same virtual index
    and the same two-sided interpolation (numpy's _lerp), without its Python-level machinery,
    which costs more than the sort in Pyodide (eight times a change of the batching widget)."""
    s = np.sort(values)  # [n]
    at = (len(s) - 1) * (q / 100)
    i = math.floor(at)
    a, b, t = float(s[i]), float(s[min(i + 1, len(s) - 1)]), at - i
    return b - (b - a) * (1 - t) if t >= 0.5 else a + (b - a) * t


def weighted_percentile(values: np.ndarray, counts: np.ndarray, q: float) -> float:
    """Percentile of a sample given as distinct values with repetition counts."""
    order = np.argsort(values)
    cum = np.cumsum(counts[order])  # [k]
    return float(values[order][np.searchsorted(cum, q / 100 * cum[-1])])

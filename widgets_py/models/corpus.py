"""The Catalan corpus as the mini-GPT sees it: characters, a train/held-out split, a bound.

`widgets_py/models/data/ca.txt` (package data; see corpus/SOURCE.md) holds paragraphs separated by blank lines; the
last 10 % of the paragraphs are held out. The bigram bound is the held-out cross-entropy
of the best bigram model the training text gives (counts with the add-alpha smoothing
that does best on held-out): a model that beats it uses more than the last character.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np

PATH = Path(__file__).resolve().parent / "data" / "ca.txt"  # package data: shipped in the wheel


@cache
def text() -> str:
    return PATH.read_text(encoding="utf-8")


@cache
def split() -> tuple[str, str]:
    """(train, held-out): whole paragraphs, the last 10 % held out."""
    paragraphs = [p for p in text().split("\n\n") if p.strip()]
    cut = len(paragraphs) * 9 // 10  # the rule corpus/SOURCE.md states
    return "\n\n".join(paragraphs[:cut]), "\n\n".join(paragraphs[cut:])


@cache
def vocab() -> str:
    return "".join(sorted(set(text())))


def encode(s: str) -> np.ndarray:
    index = {c: i for i, c in enumerate(vocab())}
    return np.array([index[c] for c in s], dtype=np.int64)


def decode(ids) -> str:
    chars = vocab()
    return "".join(chars[int(i)] for i in ids)


@cache
def data() -> tuple[np.ndarray, np.ndarray]:
    train, heldout = split()
    return encode(train), encode(heldout)


def bigram_cross_entropy(fit: np.ndarray, test: np.ndarray, vocab_size: int, alpha: float = 0.0) -> float:
    """Nats per character on `test` of the bigram model estimated from `fit` (add-alpha)."""
    pair = (fit[:-1] * vocab_size + fit[1:]).astype(np.intp)  # bincount wants intp: int32 in Pyodide
    pairs = np.bincount(pair, minlength=vocab_size * vocab_size)  # [V*V]
    counts = pairs.reshape(vocab_size, vocab_size) + alpha  # [V, V] pair counts, smoothed
    probs = counts / np.maximum(counts.sum(1, keepdims=True), 1e-12)
    return float(-np.log(probs[test[:-1], test[1:]]).mean())


@cache
def bigram_bound() -> float:
    """Held-out nats/char of the best smoothed bigram model fitted on the training text."""
    train, heldout = data()
    return min(bigram_cross_entropy(train, heldout, len(vocab()), a) for a in (0.01, 0.03, 0.1, 0.3, 1.0))

"""The Catalan corpus as the mini-GPT sees it: characters, a train/held-out split, a baseline.

`widgets_py/maths/data/ca.txt` (package data; see corpus/SOURCE.md) holds paragraphs separated by blank lines; the
last 10 % of the paragraphs are held out. The bigram baseline is the cross-entropy, on the
same held-out characters a model is scored on, of the bigram model the training text gives
(pair counts with add-alpha smoothing, the alpha chosen on the training text's own last
tenth): a model that beats it uses more than the last character. A baseline, not a bound.
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


def bigram_log_probs(fit: np.ndarray, vocab_size: int, alpha: float) -> np.ndarray:
    """[V, V] log p(next | previous) of the bigram model estimated from `fit` (add-alpha)."""
    pair = (fit[:-1] * vocab_size + fit[1:]).astype(np.intp)  # bincount wants intp: int32 in Pyodide
    pairs = np.bincount(pair, minlength=vocab_size * vocab_size)  # [V*V]
    counts = pairs.reshape(vocab_size, vocab_size) + alpha  # [V, V] pair counts, smoothed
    return np.log(counts / np.maximum(counts.sum(1, keepdims=True), 1e-12))


def bigram_cross_entropy(fit: np.ndarray, test: np.ndarray, vocab_size: int, alpha: float = 0.0) -> float:
    """Nats per character on `test` of the bigram model estimated from `fit` (add-alpha)."""
    return float(-bigram_log_probs(fit, vocab_size, alpha)[test[:-1], test[1:]].mean())


ALPHAS = (0.01, 0.03, 0.1, 0.3, 1.0)  # the add-alpha smoothings tried


@cache
def bigram() -> np.ndarray:
    """[V, V] log-probabilities of the bigram baseline: fitted on the whole training text, with
    the add-alpha that does best on the training text's last tenth when fitted on the rest
    (the held-out text plays no part in it)."""
    train, v = data()[0], len(vocab())
    cut = len(train) * 9 // 10
    alpha = min(ALPHAS, key=lambda a: bigram_cross_entropy(train[:cut], train[cut:], v, a))
    return bigram_log_probs(train, v, alpha)


@cache
def bigram_baseline(tokens: int) -> float:
    """Nats/char of the bigram baseline on the first `tokens` predictions of the held-out text:
    each of its first `tokens` characters predicting the next, the pairs train.evaluate scores
    for a model given the same `tokens` (a whole number of its windows)."""
    test = data()[1][:tokens + 1]
    return float(-bigram()[test[:-1], test[1:]].mean())

"""The trained mini-GPTs every §1/§4/§5/§6 widget reads, made once and cached.

Weights are a deterministic function of the corpus, the configs and the code, so they
are cached under a key hashed from all three: an unchanged build never retrains. The
site ships them inside the widgets_py bundle (`weights/KEY/NAME.npz`); a reader who
retrains in the browser replaces them for the page through `override`.
"""

from __future__ import annotations

import hashlib
import io
import os
from functools import cache
from pathlib import Path

import numpy as np

from . import corpus, gpt, train

DRAFT_FRACTIONS = (1, 2, 4, 8, 16)  # the draft trains 1 step in N of the target's
STEPS = 1500


def specs() -> dict[str, tuple[gpt.GPTConfig, train.TrainConfig]]:
    v = len(corpus.vocab())
    tc = train.TrainConfig(steps=STEPS)
    out = {
        "mini": (gpt.GPTConfig(v, d=32, layers=2, heads=4), tc),  # §1, §4, §6
        "target": (gpt.GPTConfig(v, d=32, layers=3, heads=4), tc),  # §5, the large model
    }
    for n in DRAFT_FRACTIONS:  # §5, the draft, more or less trained
        out[f"draft-{n}"] = (gpt.GPTConfig(v, d=16, layers=1, heads=2),
                             train.TrainConfig(steps=STEPS // n, seed=tc.seed + 1))
    return out


@cache
def key() -> str:
    h = hashlib.sha256(corpus.text().encode())
    h.update(repr(sorted(specs().items())).encode())
    for module in (gpt, train):
        h.update(Path(module.__file__).read_bytes())
    return h.hexdigest()[:16]


def bundled_dir() -> Path:
    """Where the site's bundle puts the weights, beside the package."""
    return Path(__file__).resolve().parent.parent / "weights" / key()


def cache_dir() -> Path:
    root = os.environ.get("TEXTBOOK_CACHE") or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "textbook"
    return Path(root) / "weights" / key()


_override: dict[str, tuple[dict, list[float]]] = {}
_generation = 0  # bumped whenever weights are replaced


def override(name: str, params: dict, history: list[float]) -> None:
    """Use these weights for `name` from now on (the browser's retraining)."""
    global _generation
    _override[name] = (params, list(history))
    _generation += 1
    load.cache_clear()


def generation() -> int:
    """Part of the key of any cache of model outputs: it changes when weights do."""
    return _generation


def to_npz(params: dict, history: list[float]) -> bytes:
    out = io.BytesIO()
    np.savez(out, **params, _history=np.asarray(history, np.float32))
    return out.getvalue()


@cache
def load(name: str) -> tuple[gpt.GPTConfig, dict, list[float]]:
    """(config, params, training-loss history) of a pretrained model."""
    cfg, tc = specs()[name]
    if name in _override:
        params, history = _override[name]
        return cfg, params, history
    for folder in (bundled_dir(), cache_dir()):
        path = folder / f"{name}.npz"
        if path.is_file():
            with np.load(path) as z:
                params = {k: z[k] for k in z.files if k != "_history"}
                return cfg, params, z["_history"].tolist()
    params, history = train.train(cfg, tc, corpus.data()[0])
    path = cache_dir() / f"{name}.npz"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.with_suffix(".part").write_bytes(to_npz(params, history))
    path.with_suffix(".part").replace(path)
    return cfg, params, history


def ensure_all() -> Path:
    """Train whatever is missing; the folder the build bundles."""
    for name in specs():
        load(name)
    return cache_dir()

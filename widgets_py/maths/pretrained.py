"""The trained mini-GPTs the widgets read: a versioned artefact of the repository.

Training runs float32 matmuls through BLAS, whose summation order differs from CPU to
CPU, so two machines never train bit-identical models. The weights are therefore
trained once (`./dev train`), committed under `widgets_py/maths/weights/` with a manifest
(corpus hash, configs, steps, seed, held-out loss, sha256 of each file), and used as
they are by the build, the tests and the browser. Nothing retrains unless asked; a
manifest that no longer matches the corpus or the configs is an error that says how
to retrain. A reader who retrains in the browser replaces a model for the page
through the session (engine.session.override).
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
from functools import cache
from pathlib import Path

import numpy as np

from . import corpus, gpt, train

WEIGHTS = Path(__file__).resolve().parent / "weights"  # package data: shipped in the bundle
MANIFEST = WEIGHTS / "manifest.json"
DRAFT_FRACTIONS = (1, 2, 4, 8, 16)  # the draft trains 1 step in N of the target's
STEPS = 1500
SPECULATIVE_CONTEXT = 128  # target and drafts: the speculative widget's prompt plus output fits


class WeightsError(RuntimeError):
    """The committed weights are missing or do not match the code's corpus and configs."""


def specs() -> dict[str, tuple[gpt.GPTConfig, train.TrainConfig]]:
    v = len(corpus.vocab())
    tc = train.TrainConfig(steps=STEPS)
    # 8 windows of 128 tokens; a lower peak rate: at 1.5e-2 the long windows train unstably (2.36 vs 2.26 nats)
    long = dataclasses.replace(tc, batch=8, lr=5e-3)
    out = {
        "mini": (gpt.GPTConfig(v, d=32, layers=2, heads=4), tc),  # clock, quantization, sampling, training
        "target": (gpt.GPTConfig(v, d=32, layers=3, heads=4, context=SPECULATIVE_CONTEXT), long),
    }
    for n in DRAFT_FRACTIONS:  # the speculative draft, more or less trained
        out[f"draft-{n}"] = (gpt.GPTConfig(v, d=16, layers=1, heads=2, context=SPECULATIVE_CONTEXT),
                             dataclasses.replace(long, steps=STEPS // n, seed=tc.seed + 1))
    return out


def corpus_sha256() -> str:
    return hashlib.sha256(corpus.text().encode()).hexdigest()


def spec_record(name: str) -> dict:
    """What the manifest pins about how a model was made: its config and training config."""
    cfg, tc = specs()[name]
    # a choice at its default (ReLU, LayerNorm: what the models trained before the choice
    # existed all made) is not written, so their manifest still matches; any other choice is
    config = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)
              if f.name in gpt.SIZES or getattr(cfg, f.name) != f.default}
    return {"config": config, "train": dataclasses.asdict(tc)}


# ---- the artefact: npz files and their manifest ----------------------------------------

def to_npz(params: dict, history: list[float]) -> bytes:
    """Byte-identical for identical arrays: zip entries carry numpy's fixed 1980 date."""
    out = io.BytesIO()
    np.savez(out, **params, _history=np.asarray(history, np.float32))
    return out.getvalue()


def from_npz(data: bytes) -> tuple[dict, list[float]]:
    with np.load(io.BytesIO(data)) as z:
        return {k: z[k] for k in z.files if k != "_history"}, z["_history"].tolist()


@cache
def manifest() -> dict:
    if not MANIFEST.is_file():
        raise WeightsError(f"no trained weights: {MANIFEST} is missing; run `./dev train`")
    return json.loads(MANIFEST.read_text())


def check(name: str) -> None:
    """Refuse weights made from another corpus or config: they would be silently wrong."""
    entry = manifest().get("models", {}).get(name)
    if entry is None:
        raise WeightsError(f"model '{name}' is not in {MANIFEST.name}; run `./dev train {name}`")
    if manifest().get("corpus_sha256") != corpus_sha256():
        raise WeightsError(f"the weights were trained on another corpus; run `./dev train`")
    stale = [k for k, v in spec_record(name).items() if entry.get(k) != v]
    if stale:
        raise WeightsError(f"model '{name}': {' and '.join(stale)} changed since it was trained; "
                           f"run `./dev train {name}`")


@cache
def shipped(name: str) -> tuple[dict, list[float]]:
    """The shipped weights of `name` and their loss history, read once and checked: a pure
    function of the shipped files, shared by every session (and read-only)."""
    check(name)
    data = (WEIGHTS / f"{name}.npz").read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != manifest()["models"][name]["sha256"]:
        raise WeightsError(f"{name}.npz: sha256 {digest[:12]}… differs from the manifest; run `./dev train {name}`")
    params, history = from_npz(data)
    for v in params.values():  # shared by every widget and session: nobody may change them
        v.flags.writeable = False
    return params, history


def files() -> list[Path]:
    """The artefact's files, as the site's bundle ships them."""
    return [MANIFEST] + [WEIGHTS / f"{name}.npz" for name in specs()]

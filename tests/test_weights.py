"""The committed weights: pinned by the manifest, used as they are, never retrained by a build.

Training is float32 through BLAS, so another CPU trains another model: these tests check
statistics (a held-out loss within a band, the manifest's loss reproduced within float32
noise), never bit equality of a fresh training run.
"""

import dataclasses
import hashlib
import json

import pytest

from widgets_py.engine.session import Memo, Session
from widgets_py.engine import session
from widgets_py.maths import corpus, pretrained, train

LOSS_NOISE = 1e-4  # nats: the same weights, evaluated with another BLAS summation order


def test_manifest_pins_every_model_file_corpus_and_config():
    m = json.loads(pretrained.MANIFEST.read_text())
    assert set(m["models"]) == set(pretrained.specs())
    assert m["corpus_sha256"] == hashlib.sha256(corpus.PATH.read_bytes()).hexdigest()
    for name, entry in m["models"].items():
        data = (pretrained.WEIGHTS / f"{name}.npz").read_bytes()
        assert entry["sha256"] == hashlib.sha256(data).hexdigest() and entry["bytes"] == len(data), name
        cfg = pretrained.specs()[name][0]
        assert entry["config"] == pretrained.spec_record(name)["config"], name
        assert dataclasses.replace(cfg, **entry["config"]) == cfg, name  # every field: the others at their defaults
        assert entry["steps_trained"] == pretrained.specs()[name][1].steps, name
    total = sum(e["bytes"] for e in m["models"].values())
    assert total < 1_000_000, f"weights {total} bytes: a few hundred KB is the budget"


def test_recorded_heldout_losses_reproduce_here():
    for name, entry in pretrained.manifest()["models"].items():
        cfg, p, history = session.load(name)
        assert len(history) == entry["steps_trained"]
        assert train.evaluate(p, cfg, corpus.data()[1]) == pytest.approx(entry["heldout_loss"], abs=LOSS_NOISE), name


def test_trained_models_use_more_than_the_last_character():
    for name in ("mini", "target"):
        assert pretrained.manifest()["models"][name]["heldout_loss"] < corpus.bigram_baseline(train.EVAL_TOKENS) - 0.05, name


def unread() -> None:
    """Nothing loaded, not even the shipped files (pretrained.shipped reads each once per
    process): the next load reads and checks them again."""
    pretrained.shipped.cache_clear()
    session.forget()


def test_loading_never_trains(monkeypatch):
    monkeypatch.setattr(train, "train", lambda *a, **k: pytest.fail("a load trained a model"))
    monkeypatch.setattr(train, "steps", lambda *a, **k: pytest.fail("a load trained a model"))
    unread()
    try:
        for name in pretrained.specs():
            session.load(name)
    finally:
        unread()


def test_stale_weights_are_refused_with_how_to_retrain(monkeypatch):
    specs = pretrained.specs()
    changed = {**specs, "mini": (dataclasses.replace(specs["mini"][0], d=48), specs["mini"][1])}
    monkeypatch.setattr(pretrained, "specs", lambda: changed)
    unread()
    try:
        with pytest.raises(pretrained.WeightsError, match=r"config changed.*\./dev train mini"):
            session.load("mini")
        session.load("target")  # the others still load
    finally:
        unread()


def test_a_tampered_file_is_refused(monkeypatch, tmp_path):
    for f in pretrained.files():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    data = bytearray((tmp_path / "mini.npz").read_bytes())
    data[len(data) // 2] ^= 0xFF  # one byte flipped inside an array
    (tmp_path / "mini.npz").write_bytes(bytes(data))
    monkeypatch.setattr(pretrained, "WEIGHTS", tmp_path)
    unread()
    try:
        with pytest.raises(pretrained.WeightsError, match="sha256"):
            session.load("mini")
    finally:
        unread()


@pytest.mark.parametrize("seed", [1, 4])
def test_a_brief_retraining_from_scratch_lands_in_its_band(seed):
    """300 steps of the mini spec from a fresh init: measured 2.42-2.65 nats over seeds 1-4
    on two machines' worth of BLAS orders; a broken gradient or optimiser stays above 3."""
    from widgets_py.maths.retrain import one_blas_thread

    cfg, tc = pretrained.specs()["mini"]
    with one_blas_thread():
        p, history = train.train(cfg, dataclasses.replace(tc, steps=300, seed=seed), corpus.data()[0])
        loss = train.evaluate(p, cfg, corpus.data()[1], 4096)
    assert history[0] > 4.0  # starts near ln(90) = 4.50: a uniform guess
    assert 2.3 < loss < 2.8, loss


def test_kept_results_give_way_to_new_ones_least_recently_used_first():
    """session.cached at its bound drops the result used longest ago, not everything: a
    slider dragged through many values must not cost another widget its scored formats."""
    made = []
    keep = lambda key: session.cached(key, lambda: made.append(key) or key)  # noqa: E731
    with Session(memo=Memo(limit=3)).active():
        for key in [("a",), ("b",), ("c",), ("a",), ("d",)]:  # "a" used again before "d" comes
            keep(key)
        assert [session.has(k) for k in [("a",), ("b",), ("c",), ("d",)]] == [True, False, True, True]
        keep(("a",))
        assert made == [("a",), ("b",), ("c",), ("d",)]  # "a" was made once

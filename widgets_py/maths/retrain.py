"""Retrain the committed mini-GPTs: `./dev train [NAME ...]` (all models by default).

Writes `widgets_py/maths/weights/NAME.npz` and updates `manifest.json` (corpus hash, configs,
steps, seed, held-out loss, sha256 of each file). Training runs BLAS on one thread: on
these tiny matrices threads only fight for the cores, and a busy machine then takes ten
times as long. Review the manifest's held-out losses, then commit weights and manifest.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time

import numpy as np

from . import corpus, gpt, pretrained, train


def one_blas_thread():
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


def retrain(name: str, out=sys.stderr) -> dict:
    """Train `name` from scratch with its spec; write its file; return its manifest entry."""
    cfg, tc = pretrained.specs()[name]
    started = time.perf_counter()

    def progress(step: int, loss: float) -> None:
        if step % 25 == 0 or step == tc.steps - 1:
            out.write(f"\r{name}: step {step + 1}/{tc.steps} · loss {loss:.3f} · "
                      f"{time.perf_counter() - started:.0f} s   ")
            out.flush()

    with one_blas_thread():
        params, history = train.train(cfg, tc, corpus.data()[0], progress)
        heldout = train.evaluate(params, cfg, corpus.data()[1])
    out.write(f"\r{name}: {tc.steps} steps, held-out {heldout:.4f} nats, "
              f"{time.perf_counter() - started:.0f} s{' ' * 20}\n")
    data = pretrained.to_npz(params, history)
    pretrained.WEIGHTS.mkdir(exist_ok=True)
    (pretrained.WEIGHTS / f"{name}.npz").write_bytes(data)
    return {**pretrained.spec_record(name), "params": gpt.n_params(params), "steps_trained": len(history),
            "heldout_loss": round(heldout, 6), "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="./dev train", description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", metavar="NAME", help=f"models to retrain ({', '.join(pretrained.specs())})")
    args = ap.parse_args(argv)
    unknown = sorted(set(args.names) - set(pretrained.specs()))
    if unknown:
        print(f"error: unknown model '{unknown[0]}'; known: {', '.join(pretrained.specs())}", file=sys.stderr)
        return 2
    try:
        old = json.loads(pretrained.MANIFEST.read_text())
    except FileNotFoundError:
        old = {}
    models = {} if old.get("corpus_sha256") != pretrained.corpus_sha256() else old.get("models", {})
    names = args.names or list(pretrained.specs())
    missing = [n for n in pretrained.specs() if n not in names and n not in models]
    if missing:  # another corpus invalidates every model, not only the ones asked for
        print(f"note: also training {', '.join(missing)} (missing or made from another corpus)", file=sys.stderr)
        names += missing
    for name in names:  # no session: numpy's products (maths.products), BLAS here
        models[name] = retrain(name)
    manifest = {
        "about": "Trained by `./dev train` (widgets_py/maths/retrain.py); checked by widgets_py/maths/pretrained.py.",
        "corpus_sha256": pretrained.corpus_sha256(),
        "corpus_chars": len(corpus.text()),
        "numpy": np.__version__,
        "models": {n: models[n] for n in pretrained.specs()},
    }
    pretrained.MANIFEST.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    print(f"wrote {pretrained.MANIFEST}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

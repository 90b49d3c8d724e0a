"""One run's state on one object: what the browser's worker, a build or a test changes as it
runs. Nothing else in widgets_py changes at run time (module-level values are constants set
at import, and caches of pure functions of the shipped files).

    with Session().active():          # the build (build_hooks/hooks.py), a test (conftest.py),
        registry.run("roofline")      # a benchmark, a script; the worker makes one when it boots

Code reaches the active session through `current()`, the way a figure reaches its layout
(svg.current()): a context variable, set for a block as decimal.localcontext() sets a
precision. registry.run() outside any block runs in a fresh session of its own, so two
callers never share a memo by accident.

A session holds:
- `memo`: results kept while the weights stay the same (a prefill, a quantized model, a
  held-out loss, a simulation), dropped with the weights (`cached`, `has`, `scoped`, `forget`);
- `trained` and `models`: the weights a retraining in the browser put in place of a shipped
  model, and the models loaded so far (`load`, `override`);
- `backend`: which products the mini-GPT runs on (accel.backend: BLAS natively, the
  WebAssembly SIMD kernel in Pyodide, einsum where it cannot load), with its packed weights;
- `edits` and `substitutes`: a reader's edited widget modules and, within an edited run, the
  widget that stands for the shipped one (engine.edits).
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Callable

from ..maths import products

if TYPE_CHECKING:
    from ..accel.backend import Backend
    from ..maths.gpt import GPTConfig

MEMO_MAX = 256  # results a session keeps (Memo)


class Memo:
    """make(), computed once per key; at `limit` results the one used longest ago goes (a
    reader dragging one slider adds one figure a step, and should not cost another widget
    its scored formats). Keys start with the current `scope`: () for the shipped code, a tag
    of its own for a reader's edit, which may compute any result differently (scoped())."""

    def __init__(self, limit: int = MEMO_MAX):
        self.limit = limit
        self.kept: dict[tuple, Any] = {}
        self.scope: tuple = ()

    def has(self, key: tuple) -> bool:
        return self.scope + key in self.kept

    def get(self, key: tuple, make: Callable[[], Any]) -> Any:
        key = self.scope + key
        if key in self.kept:
            self.kept[key] = self.kept.pop(key)  # the most recently used last
        else:
            value = make()
            while len(self.kept) >= self.limit:
                del self.kept[next(iter(self.kept))]
            self.kept[key] = value
        return self.kept[key]

    def clear(self) -> None:
        self.kept.clear()

    @contextmanager
    def scoped(self, tag: tuple):
        before, self.scope = self.scope, tag
        try:
            yield
        finally:
            self.scope = before


class Session:
    def __init__(self, backend=None, memo: Memo | None = None):
        self.backend = backend  # accel.backend.Backend; made when first asked (products) (in Pyodide: the kernel's compile)
        self.memo = memo or Memo()
        self.trained: dict[str, tuple[dict, list[float]]] = {}  # model -> (params, loss history)
        self.models: dict[str, tuple] = {}  # model -> (config, params, history), as loaded
        self.edits: dict[str, tuple[str, Any]] = {}  # edit key -> (sha256 of the code, its WIDGET)
        self.substitutes: dict[str, Any] = {}  # widget name -> the Widget run in its place

    def products(self) -> Backend:
        """The backend, made for this runtime when first asked (maths.products asks)."""
        if self.backend is None:
            from ..accel import backend  # with the first model, not at the worker's boot: calculators never ask
            self.backend = backend.for_runtime()
        return self.backend

    @contextmanager
    def active(self):
        """This session is current() within the block, and answers the maths' products."""
        token = _current.set(self)
        try:
            with products.provided(self.products):
                yield self
        finally:
            _current.reset(token)


_current: ContextVar[Session] = ContextVar("session")


def current() -> Session:
    try:
        return _current.get()
    except LookupError:
        raise RuntimeError("no active Session: run inside `with Session().active():` "
                           "(widgets_py.engine.session; registry.run makes one of its own)") from None


def active() -> Session | None:
    """The current session, or None outside any."""
    return _current.get(None)


@contextmanager
def ensured():
    """The current session within the block, or a fresh one if there is none."""
    running = active()
    if running is not None:
        yield running
    else:
        with Session().active() as fresh:
            yield fresh


def start() -> Session:
    """A session current from now on in this context, for a process that is one run: the
    browser's worker (browser.prepare), where each call from JavaScript runs in the same
    context and no `with` block spans them."""
    fresh = Session()
    _current.set(fresh)
    products.provide(fresh.products)
    return fresh


# ---- what a run keeps: the memo and the models, dropped together when the weights change ---

def cached(key: tuple, make):
    """make(), computed once per `key` while the weights stay the same (the session's memo).

    Widgets keep what a control change does not alter (a prefill, a quantized model, a
    held-out loss) here rather than in caches of their own, so that new weights (a
    retraining in the browser) invalidate every such result in one place. A result that
    depends on no weights (a simulation's) may be kept here too: new weights drop it, and it
    is computed again, never wrong."""
    return current().memo.get(key, make)


def has(key: tuple) -> bool:
    """Whether cached(key, …) would answer without computing (a long compute skips its
    progress report for a stage it already has)."""
    return current().memo.has(key)


def scoped(tag: tuple):
    """cached() apart from the shipped code's results, within the block: a reader's edit of a
    widget (engine.edits) may change how any of them is computed, so it computes its own."""
    return current().memo.scoped(tag)


def forget() -> None:
    """Drop every loaded model and every result derived from one (weights changed)."""
    run = current()
    run.models.clear()
    run.memo.clear()


def load(name: str) -> tuple[GPTConfig, dict, list[float]]:
    """(config, params, training-loss history) of a trained model, checked against its pin
    (maths.pretrained): the session's retrained weights for it if there are any, else the
    shipped ones."""
    from ..maths import pretrained  # with the first model, not at the worker's boot

    run = current()
    if name not in run.models:
        cfg, _ = pretrained.specs()[name]
        if name in run.trained:
            params, history = run.trained[name]
        else:
            params, history = pretrained.shipped(name)
        run.models[name] = (cfg, params, history)
    return run.models[name]


def override(name: str, params: dict, history: list[float]) -> None:
    """Use these weights for `name` from now on in this session (the browser's retraining)."""
    current().trained[name] = (params, list(history))
    forget()

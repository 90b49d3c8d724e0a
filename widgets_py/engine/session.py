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
  held-out loss, a simulation), dropped with the weights (pretrained.derived);
- `trained` and `models`: the weights a retraining in the browser put in place of a shipped
  model, and the models loaded so far (pretrained.load);
- `backend`: which products the mini-GPT runs on (models.backend: BLAS natively, the
  WebAssembly SIMD kernel in Pyodide, einsum where it cannot load), with its packed weights;
- `edits` and `substitutes`: a reader's edited widget modules and, within an edited run, the
  widget that stands for the shipped one (engine.edits).
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Callable

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
        self.backend = backend  # models.backend.Backend; made there when first asked (in Pyodide: the kernel's compile)
        self.memo = memo or Memo()
        self.trained: dict[str, tuple[dict, list[float]]] = {}  # model -> (params, loss history)
        self.models: dict[str, tuple] = {}  # model -> (config, params, history), as loaded
        self.edits: dict[str, tuple[str, Any]] = {}  # edit key -> (sha256 of the code, its WIDGET)
        self.substitutes: dict[str, Any] = {}  # widget name -> the Widget run in its place

    @contextmanager
    def active(self):
        """This session is current() within the block."""
        token = _current.set(self)
        try:
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
    return fresh

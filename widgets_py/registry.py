"""The widget registry: one Python function of its parameters per figure.

`run(name, raw)` is the single entry point used by the CLI, the build-time prerender
and the browser worker, so the static page and the live page come from the same call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

from .params import Output, Param, ParamError, validate


@dataclass(frozen=True)
class Result:
    values: dict[str, Any]  # named outputs: plain numbers, booleans or short strings
    figure: str  # SVG markup, styled by the site's CSS classes
    alt: str  # text alternative of the figure, stating its key numbers
    tables: str = ""  # optional HTML tables (already formatted in Catalan)


@dataclass(frozen=True)
class Widget:
    name: str  # registry key, used in Markdown and in data-widget
    title: str  # Catalan title shown above the widget
    params: tuple[Param, ...]
    outputs: tuple[Output, ...]
    compute: Callable[..., dict[str, Any]]  # (**params) -> values
    figure: Callable[[dict, dict], tuple[str, str]]  # (params, values) -> (svg, alt)
    tables: Callable[[dict, dict], str] | None = None  # (params, values) -> html
    summary: str = ""  # one Catalan sentence: what the widget computes
    meta: dict = field(default_factory=dict)

    def output(self, name: str) -> Output:
        for out in self.outputs:
            if out.name == name:
                return out
        raise ParamError(
            f"valor desconegut '{name}' del widget '{self.name}'; "
            f"permesos: {', '.join(o.name for o in self.outputs)}"
        )

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "summary": self.summary,
            "params": [p.describe() for p in self.params],
            "outputs": [{"name": o.name, "label": o.label, "unit": o.unit} for o in self.outputs],
        }


REGISTRY: dict[str, Widget] = {}


def register(widget: Widget) -> Widget:
    assert widget.name not in REGISTRY, f"widget '{widget.name}' registered twice"
    REGISTRY[widget.name] = widget
    return widget


def get(name: str) -> Widget:
    _load_all()
    if name not in REGISTRY:
        raise ParamError(f"widget desconegut '{name}'; disponibles: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[name]


def names() -> list[str]:
    _load_all()
    return sorted(REGISTRY)


def compute(name: str, raw: dict[str, Any] | None = None) -> tuple[dict, dict]:
    """(validated params, named values): the numbers alone, without drawing the figure."""
    widget = get(name)
    params = validate(widget.params, raw or {})
    values = {k: _plain(v) for k, v in widget.compute(**params).items()}
    missing = [o.name for o in widget.outputs if o.name not in values]
    assert not missing, f"{name}: outputs not computed: {missing}"
    for key, value in values.items():
        if isinstance(value, float):
            assert math.isfinite(value), f"{name}: output '{key}' is not finite ({value})"
    return params, values


def run(name: str, raw: dict[str, Any] | None = None) -> Result:
    """Validate `raw` against the widget's declared parameters, compute, and draw."""
    widget = get(name)
    params, values = compute(name, raw)
    svg, alt = widget.figure(params, values)
    tables = widget.tables(params, values) if widget.tables else ""
    return Result(values=values, figure=svg, alt=alt, tables=tables)


def _plain(value: Any) -> Any:
    """numpy scalars -> Python scalars, so values serialise as plain JSON numbers."""
    return value.item() if hasattr(value, "item") and not isinstance(value, (list, dict)) else value


def formatted(name: str, values: dict[str, Any]) -> dict[str, str]:
    """Catalan text of every declared output, for the panel and for live numbers."""
    widget = get(name)
    return {o.name: o.format(values[o.name]) for o in widget.outputs}


def _load_all() -> None:
    from . import widgets  # noqa: F401  (importing registers every widget)


def is_measured(name: str, key: str) -> bool:
    """Values that are timings of the machine running the widget: never compared in tests."""
    return key.startswith(tuple(get(name).meta.get("measured", ())))


def validate_params(name: str, raw: dict[str, Any]) -> dict[str, Any]:
    """The full, validated parameter dict of a widget call (defaults filled in)."""
    return validate(get(name).params, raw)

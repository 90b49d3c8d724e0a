r"""Declared parameters and outputs of a widget, and the validation of raw input.

A widget declares its controls once, here; the CLI, the build-time prerender and the
browser all validate through `Param.coerce`, so an out-of-range value is refused the
same way everywhere, with a message that names the parameter and what it allows.

The grammar of a number written as text (CLI `key=value`, Markdown directive, URL state,
and the browser's mirror of it in docs/assets/tw/numbers.js), one set of rules everywhere:

    int    -?[0-9]+                             ASCII digits only: no '+', no spaces,
                                                no '_', no '0x10', no '8.0', no '1e1'
    float  -?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?  also '1e2' and '0.25'; not '.5', '5.',
                                                'inf', 'nan', nor other scripts' digits (٨, ８)
    bool   true | false
    choice one of the declared values, exactly

JSON values (the worker, Python callers) must have the right type already: an int for an
int (a bool is not an int), an int or float for a float. Range checks compare exactly, so
`10**400` is "out of range", never an OverflowError.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from typing import Any

KINDS = ("int", "float", "choice", "bool")
INT_TEXT = re.compile(r"-?[0-9]+", re.ASCII)
FLOAT_TEXT = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?", re.ASCII)


class ParamError(ValueError):
    """Bad input for a widget: unknown name, wrong type or out of the declared range."""


@dataclass(frozen=True)
class Param:
    name: str  # identifier used in Markdown, the CLI and the URL
    kind: str  # one of KINDS
    default: Any  # value used when the page or the caller gives none
    label: str  # Catalan label shown next to the control
    min: float | None = None  # inclusive bounds, for int and float
    max: float | None = None
    step: float | None = None  # slider step, for int and float
    ticks: tuple[float, ...] = ()  # slider snaps to these values (e.g. powers of two)
    choices: tuple[tuple[str, str], ...] = ()  # (value, Catalan label), for choice
    unit: str = ""  # shown after the value
    help: str = ""  # one Catalan sentence under the control
    off: Any = None  # a value that means "this method is off", shown as 'apagat'

    def __post_init__(self) -> None:
        assert self.kind in KINDS, self.kind
        if self.kind in ("int", "float"):
            assert self.min is not None and self.max is not None and self.min <= self.max
            assert all(self.min <= t <= self.max for t in self.ticks), self.name
        if self.kind == "choice":
            assert self.choices and self.default in self.values(), self.name
        self.coerce(self.default)  # the default itself must be valid

    def values(self) -> list[str]:
        return [value for value, _ in self.choices]

    def allowed(self) -> str:
        """Human-readable allowed range, used in every error message."""
        if self.kind == "choice":
            return "un de: " + ", ".join(self.values())
        if self.kind == "bool":
            return "true o false"
        return f"{_plain(self.min)}..{_plain(self.max)}" + (" (enter)" if self.kind == "int" else "")

    def coerce(self, raw: Any) -> Any:
        """Parse `raw` (a string from the CLI or URL, or a JSON value) or raise ParamError."""
        where = f"paràmetre '{self.name}'"
        if self.kind == "choice":
            value = str(raw)
            if value not in self.values():
                raise ParamError(f"{where}: {value!r} no és permès; permès: {self.allowed()}")
            return value
        if self.kind == "bool":
            if isinstance(raw, bool):
                return raw
            if raw in ("true", "false"):
                return raw == "true"
            raise ParamError(f"{where}: {raw!r} no és un booleà; permès: {self.allowed()}")
        number = parse_number(raw, self.kind)
        if number is None:
            kind = "enter" if self.kind == "int" else "nombre"
            raise ParamError(f"{where}: {raw!r} no és un {kind} ben escrit; permès: {self.allowed()}")
        if not (self.min <= number <= self.max):  # exact comparison: no overflow for huge ints
            raise ParamError(f"{where}: {_short(raw)} és fora del rang; permès: {self.allowed()}")
        return number if self.kind == "int" else float(number)

    def on_grid(self, value: Any) -> bool:
        """Whether a slider can show `value` exactly (choices and booleans always can)."""
        if self.kind not in ("int", "float"):
            return True
        return any(abs(value - p) <= 1e-9 * max(1.0, abs(p)) for p in self.positions())

    def nearest_index(self, value: float) -> int:
        """The slider position nearest `value`, the first on a tie (numbers.js nearestIndex:
        the page's copy, for a value from the URL)."""
        positions = self.positions()
        return min(range(len(positions)), key=lambda i: abs(positions[i] - value))

    def display(self, value: Any) -> str:
        """Catalan text of a control's value, as shown next to the control."""
        from . import fmt

        if self.kind == "choice":
            return dict(self.choices)[value]
        if self.off is not None and value == self.off:
            return "apagat"
        if self.kind == "bool":
            return "sí" if value else "no"
        if self.unit == "tokens":
            return fmt.tokens(value)
        decimals = 0 if self.kind == "int" else len(f"{self.step or 1:g}".partition(".")[2])
        return fmt.with_unit(value, decimals, self.unit)

    def positions(self) -> list[Any]:
        """Values a slider can take: the ticks, or min..max by step."""
        if self.ticks:
            return list(self.ticks)
        step = self.step or 1
        count = int(round((self.max - self.min) / step))
        values = [self.min + i * step for i in range(count + 1)]
        return [int(v) for v in values] if self.kind == "int" else [round(v, 10) for v in values]

    def describe(self) -> dict[str, Any]:
        d = {k: v for k, v in asdict(self).items() if v not in ((), "", None)}
        if self.choices:
            d["choices"] = [{"value": v, "label": lab} for v, lab in self.choices]
        return d


@dataclass(frozen=True)
class Output:
    name: str  # key in the widget's values dict
    label: str  # Catalan label in the values panel
    unit: str = ""  # shown after the number ('tok/s', 'ms', '×', '%')
    decimals: int = 0  # fixed decimals in Catalan formatting
    style: str = "num"  # 'num', 'si' (metric prefix), 'pct' (fraction shown as %), 'bool', 'text'
    panel: bool = True  # listed in the widget's values panel (else only for live numbers)
    timed: bool = False  # the machine's own timing: never compared by tests, pinned in builds, retimed by the reader

    def format(self, value: Any) -> str:
        from . import fmt

        if self.style == "bool":
            return "sí" if value else "no"
        if self.style == "text":
            return str(value)
        if self.style == "pct":
            return fmt.percent(value, self.decimals)
        if self.style == "si":
            return fmt.si(value, self.decimals, self.unit)
        return fmt.with_unit(value, self.decimals, self.unit)


def pairs(items: list[str]) -> dict[str, str]:
    """`key=value` words (CLI arguments, a directive's options) -> {key: value}; one rule for
    both: a word without `=` or a key given twice is refused, never silently the last."""
    raw: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ParamError(f"'{item}' no té la forma clau=valor")
        if key in raw:
            raise ParamError(f"paràmetre '{key}' repetit: cada paràmetre hi va una sola vegada")
        raw[key] = value
    return raw


def validate(params: tuple[Param, ...], raw: dict[str, Any]) -> dict[str, Any]:
    """Defaults overlaid with `raw`, each value coerced; unknown names are refused."""
    by_name = {p.name: p for p in params}
    unknown = sorted(set(raw) - set(by_name))
    if unknown:
        raise ParamError(
            f"paràmetre desconegut '{unknown[0]}'; permesos: {', '.join(by_name) or '(cap)'}"
        )
    return {p.name: p.coerce(raw[p.name]) if p.name in raw else p.default for p in params}


def parse_number(raw: Any, kind: str) -> int | float | None:
    """The number `raw` stands for under the grammar above, or None if it is not one."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    if isinstance(raw, float):
        return raw if kind == "float" and math.isfinite(raw) else None
    if not isinstance(raw, str):
        return None
    if kind == "int":
        return int(raw) if INT_TEXT.fullmatch(raw) else None
    if not FLOAT_TEXT.fullmatch(raw):
        return None
    return float(raw)  # '1e999' is inf: out of every range, and reported as such


def _short(raw: Any) -> str:
    """`raw` for a message: a huge integer is cut, not printed in full."""
    text = str(raw)
    return text if len(text) <= 30 else f"{text[:12]}… ({len(text)} caràcters)"


def _plain(x: float | None) -> str:
    return str(int(x)) if x is not None and float(x).is_integer() else str(x)

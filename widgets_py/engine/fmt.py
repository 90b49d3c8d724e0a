"""Catalan number formatting, shared by the build-time prerender and the browser.

Catalan writes a decimal comma and a thousands point, and puts a space before units
and before `%` (`3.350 GB/s`, `77 %`), but not before the multiplication sign (`2,75×`).
Both the static page and the Pyodide worker format through this module, so a number
reads the same before and after the page becomes interactive.
"""

from __future__ import annotations

import math

_SI = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def number(x: float, decimals: int = 0) -> str:
    """`1234.5, 1` -> `1.234,5`; non-finite values are shown as a dash."""
    if x is None or not math.isfinite(x):
        return "—"
    s = f"{abs(x):,.{decimals}f}"  # '1,234.5'
    s = s.replace(",", "\u2009").replace(".", ",").replace("\u2009", ".")
    return ("−" if x < 0 and float(s.replace(".", "").replace(",", ".")) != 0 else "") + s


def si(x: float, decimals: int = 2, unit: str = "") -> str:
    """`28320, 2` -> `28,32 k`: a metric prefix, then the unit without a space."""
    if x is None or not math.isfinite(x):
        return "—"
    for scale, prefix in _SI:
        if abs(x) >= scale:
            return f"{number(x / scale, decimals)} {prefix}{unit}".rstrip()
    return f"{number(x, decimals)} {unit}".rstrip()


def with_unit(x: float, decimals: int, unit: str) -> str:
    """`3350, 0, 'GB/s'` -> `3.350 GB/s`; `2.75, 2, '×'` -> `2,75×`."""
    text = number(x, decimals)
    if not unit or text == "—":
        return text
    return f"{text}{unit}" if unit == "×" else f"{text} {unit}"


def percent(fraction: float, decimals: int = 0) -> str:
    """`0.7712` -> `77 %` (the argument is a fraction, not a percentage)."""
    return with_unit(100.0 * fraction, decimals, "%")


def tokens(n: float) -> str:
    """Token counts as the chapter writes them, in full with a thousands point: `8192` -> `8.192`.

    Never `8 k`: in this book k is the SI prefix, 1 000 (`si` prints `13,5 k` for 13 457), and a
    context of 8 192 tokens written `8 k` would mean 1 024 in the same paragraph."""
    return number(n, 0)


# ---- words for a model's choices and limits, shared by every chapter's widgets ------------

def format_choices(keys: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """(key, label) pairs for a control of number formats (maths.numformats): 'BF16 · 2 bytes'."""
    from ..maths.numformats import FORMATS

    return tuple((k, f"{FORMATS[k].label} · {number(FORMATS[k].nbytes, 1 if FORMATS[k].nbytes < 1 else 0)} "
                     f"byte{'s' if FORMATS[k].nbytes != 1 else ''}") for k in keys)


def within_context(m, tokens: int) -> tuple[int, str]:
    """Tokens model card `m` (maths.hardware.ModelCard) can hold (maths.serving.clamp_context),
    and the note the widget shows."""
    from ..maths.serving import clamp_context

    held = clamp_context(m, tokens)
    if held == tokens:
        return tokens, f"dins del límit de {m.label} ({number(m.max_context)} posicions)"
    return held, (f"{m.label} només admet {number(m.max_context)} posicions: es calcula amb "
                  f"{number(held)} tokens en lloc de {number(tokens)}")

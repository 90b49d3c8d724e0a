"""Chapter 15, inference, decoding and serving: one module per widget, each declaring `WIDGET`.

The registry finds every `capNN` package of widgets_py and every `WIDGET` in it: a new
chapter is a new folder, a new widget a new module."""

# The critical batch in words, shared by the roofline and frontier widgets and the prose: the
# physics (maths.frontier.critical_batch) returns a number, math.inf when the step waits for
# memory at any batch; what a reader is told about it lives in the chapter, not in the maths.

import math

from ..engine import fmt


def critical_text(b: float) -> str:
    """A critical batch as a table cell or a live number: the number, or why there is none."""
    return fmt.number(b) if math.isfinite(b) else "cap (el pas espera la memòria amb qualsevol lot)"


def critical_values(b: float, key: str) -> dict:
    """A critical batch as a widget's outputs: the number (0 when there is none) and a Catalan text."""
    finite = math.isfinite(b)
    return {key: b if finite else 0, f"{key}_exists": finite, f"{key}_text": critical_text(b)}


def critical_sentence(b: float) -> str:
    """A critical batch as a clause the prose can end a sentence with, whether there is one or not."""
    if math.isfinite(b):
        return f"el lot crític és de {fmt.number(b)} seqüències"
    return "no hi ha lot crític: el pas espera la memòria amb qualsevol lot"

"""Pure-numpy widgets of the interactive textbook.

Each widget is a Python function of its parameters that returns named values and an
SVG figure. The same call prerenders the page at build time (CPython) and recomputes
it in the reader's browser (Pyodide).
"""

from .engine.params import Output, Param, ParamError
from .engine.registry import formatted, get, names, run
from .engine.widget import Result, Trainable, Widget

__all__ = ["Output", "Param", "ParamError", "Result", "Trainable", "Widget", "formatted", "get", "names", "run"]
